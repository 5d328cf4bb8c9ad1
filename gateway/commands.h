#pragma once

#include <string>

namespace dscpgw {

struct ReplayOptions {
    std::string config, in, out, port;
    bool trace = false;
    unsigned workers = 1;  // Simulated workers: packets spread by flow hash, policers shared.
};

int cmd_check(const std::string& config);
int cmd_replay(const ReplayOptions& o);
// `log_level`: an EAL --log-level value ("dscpgw.neighbor:debug"); empty: none.
int cmd_run(const std::string& config, const std::string& log_level);

}  // namespace dscpgw
