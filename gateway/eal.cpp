#include "gateway/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>

#include <regex>

namespace dscpgw {

bool is_pci_address(const std::string& dev) {
    static const std::regex pci("^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]$");
    return std::regex_match(dev, pci);
}

bool eal_init(const std::vector<std::string>& args, std::string& error) {
    std::vector<std::string> storage;
    storage.reserve(args.size() + 1);
    storage.emplace_back("dscpgw");
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : storage) argv.push_back(s.data());
    argv.push_back(nullptr);
    if (rte_eal_init(static_cast<int>(storage.size()), argv.data()) < 0) {
        error = std::string("EAL initialisation failed: ") + rte_strerror(rte_errno);
        return false;
    }
    return true;
}

std::vector<std::string> eal_args_offline() {
    return {"--no-huge",     "--no-pci", "--no-shconf", "-m",
            "512",           "-l",       "0",           "--log-level=lib.eal:error",
            "--no-telemetry"};
}

}  // namespace dscpgw
