// Rewrites the generated tables of the doc pages given on the command line from the counter lists
// (scripts/gen-docs.sh). The unit test Docs.GeneratedTablesAreCurrent fails when they are stale.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "control/metrics.h"

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        std::ifstream in(argv[i]);
        if (!in) {
            std::fprintf(stderr, "gen_docs: cannot read %s\n", argv[i]);
            return 1;
        }
        std::stringstream ss;
        ss << in.rdbuf();
        const std::string now = dscpgw::regenerate_docs(ss.str());
        if (now == ss.str()) continue;
        std::ofstream(argv[i]) << now;
        std::printf("gen_docs: updated %s\n", argv[i]);
    }
    return 0;
}
