#pragma once

#include <string>
#include <vector>

namespace dscpgw {

// rte_eal_init with the given arguments (argv[0] added). Returns false with a message on failure.
bool eal_init(const std::vector<std::string>& args, std::string& error);

// A port device that is a PCI address ("0000:3b:00.0" or "3b:00.0"), not a vdev.
bool is_pci_address(const std::string& dev);

// Arguments for an EAL that needs no device and no hugepages (replay, tests).
std::vector<std::string> eal_args_offline();

}  // namespace dscpgw
