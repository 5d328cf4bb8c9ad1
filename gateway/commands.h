#pragma once

#include <string>

namespace dscpgw {

struct ReplayOptions {
    std::string config, in, out, port;
    bool trace = false;
    unsigned workers = 1;  // Simulated workers: packets spread by flow hash, policers shared.
};

struct DoctorOptions {
    std::string config;  // Empty: /etc/dscpgw/dscpgw.toml when it exists, else host checks only.
    std::string root;    // Where /proc and /sys are read from ("": the host's).
    bool json = false;
    bool probe = false;  // Ping each tunnel's remote VTEP with DF set at its MTU.
};

int cmd_check(const std::string& config);
// Exit 0 without a FAIL, 1 with one, 2 for a config that does not load.
int cmd_doctor(const DoctorOptions& o);
int cmd_replay(const ReplayOptions& o);
// `log_level`: an EAL --log-level value ("dscpgw.neighbor:debug"); empty: none.
int cmd_run(const std::string& config, const std::string& log_level);

}  // namespace dscpgw
