// Unit-test main: brings up an EAL without hugepages or devices, as the route and decap tables of
// the snapshot live in DPDK memory; the packet code itself needs nothing from it.
#include <gtest/gtest.h>
#include <rte_eal.h>

#include <cstdio>

#include "gateway/eal.h"

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    std::string err;
    if (!dscpgw::eal_init(dscpgw::eal_args_offline(), err)) {
        std::fprintf(stderr, "%s\n", err.c_str());
        return 1;
    }
    const int rc = RUN_ALL_TESTS();
    rte_eal_cleanup();
    return rc;
}
