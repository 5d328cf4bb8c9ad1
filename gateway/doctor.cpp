// `dscpgw doctor`: the host checks an operator otherwise does by hand before (and while) the
// gateway runs, one line each, PASS / WARN / FAIL / SKIP with the fix. It reads procfs and sysfs
// (under --root, for tests and containers), runs `ping` for the path MTU and `dcb` for PFC where
// they exist, and never starts the EAL, so it runs beside a running gateway.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "control/render.h"
#include "gateway/commands.h"
#include "gateway/eal.h"

namespace dscpgw {

namespace {

enum class Status { pass, warn, fail, skip };
constexpr const char* kStatusNames[] = {"PASS", "WARN", "FAIL", "SKIP"};

struct Check {
    std::string name;
    Status status;
    std::string detail, fix;
};

// A JSON string, appended piecewise (GCC 12's -Wrestrict misreads "\"" + s + "\"").
std::string jstr(const std::string& s) {
    std::string o(1, '"');
    o.append(json_escape(s));
    o.push_back('"');
    return o;
}

class Doctor {
  public:
    explicit Doctor(std::string root) : root_(std::move(root)) {}
    std::vector<Check> checks;

    void add(const std::string& name, Status s, const std::string& detail,
             const std::string& fix = "") {
        checks.push_back({name, s, detail, fix});
    }

    std::string path(const std::string& p) const { return root_ + p; }
    bool exists(const std::string& p) const {
        struct stat st {};
        return stat(path(p).c_str(), &st) == 0;
    }
    // The first line of a file, trimmed; empty when it cannot be read.
    std::string read(const std::string& p) const {
        std::ifstream f(path(p));
        std::string s;
        std::getline(f, s);
        while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r'))
            s.pop_back();
        return s;
    }
    std::string read_all(const std::string& p) const {
        std::ifstream f(path(p));
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    }
    std::vector<std::string> list(const std::string& p) const {
        std::vector<std::string> out;
        DIR* d = opendir(path(p).c_str());
        if (d == nullptr) return out;
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') out.emplace_back(e->d_name);
        closedir(d);
        std::sort(out.begin(), out.end());
        return out;
    }
    // The last component of a symlink's target ("vfio-pci" for .../driver).
    std::string link_name(const std::string& p) const {
        char buf[4096];
        const ssize_t n = readlink(path(p).c_str(), buf, sizeof buf - 1);
        if (n <= 0) return "";
        buf[n] = '\0';
        const std::string t = buf;
        return t.substr(t.rfind('/') + 1);
    }

    void hugepages(const Config* cfg);
    void devices(const Config& cfg);
    void lcores(const Config& cfg);
    void mtu(const Config& cfg, bool probe);
    void ecn_sysctls();
    void roce_nics(const Config* cfg);

  private:
    std::string root_;
};

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}.
std::set<unsigned> parse_cpulist(const std::string& s) {
    std::set<unsigned> out;
    std::stringstream ss(s);
    for (std::string part; std::getline(ss, part, ',');) {
        if (part.empty()) continue;
        const size_t dash = part.find('-');
        char* end = nullptr;
        const unsigned long a = std::strtoul(part.c_str(), &end, 10);
        const unsigned long b =
            dash == std::string::npos ? a : std::strtoul(part.c_str() + dash + 1, nullptr, 10);
        for (unsigned long c = a; c <= b && c < 4096; ++c) out.insert(static_cast<unsigned>(c));
    }
    return out;
}

// Appends a separator to a non-empty list.
void sep(std::string& list, const char* separator) {
    if (!list.empty()) list += separator;
}

std::string cpulist_text(const std::set<unsigned>& s) {
    std::string o;
    for (unsigned c : s) {
        sep(o, ",");
        o += std::to_string(c);
    }
    return o;
}

// The domain-qualified form sysfs names a PCI device by.
std::string full_pci(const std::string& dev) {
    return dev.size() == 7 ? "0000:" + dev : dev;  // "3b:00.0" -> "0000:3b:00.0".
}

// A vdev's iface=NAME argument ("net_af_packet0,iface=eth1"); empty when none.
std::string vdev_iface(const std::string& dev) {
    for (const char* key : {",iface=", ",if="}) {
        const size_t k = dev.find(key);
        if (k == std::string::npos) continue;
        const size_t start = k + std::string(key).size();
        return dev.substr(start, dev.find(',', start) - start);
    }
    return "";
}

// The EAL's lcores: -l LIST, --lcores LIST (cpu sets after '@' not followed), -c MASK.
std::set<unsigned> eal_lcores(const std::vector<std::string>& args) {
    for (size_t i = 0; i < args.size(); ++i) {
        std::string v;
        const std::string& a = args[i];
        if ((a == "-l" || a == "--lcores" || a == "-c") && i + 1 < args.size())
            v = args[i + 1];
        else if (a.rfind("-l", 0) == 0 && a.size() > 2 && a[2] != '-')
            v = a.substr(2);
        else if (a.rfind("--lcores=", 0) == 0)
            v = a.substr(9);
        else
            continue;
        if (a == "-c") {
            std::set<unsigned> out;
            const unsigned long long mask = std::strtoull(v.c_str(), nullptr, 16);
            for (unsigned c = 0; c < 64; ++c)
                if (mask >> c & 1) out.insert(c);
            return out;
        }
        // --lcores "0@0,1@2": the CPU after '@' is where the lcore runs.
        std::string cpus;
        std::stringstream ss(v);
        for (std::string part; std::getline(ss, part, ',');) {
            const size_t at = part.find('@');
            sep(cpus, ",");
            cpus += at == std::string::npos ? part : part.substr(at + 1);
        }
        cpus.erase(std::remove(cpus.begin(), cpus.end(), '('), cpus.end());
        cpus.erase(std::remove(cpus.begin(), cpus.end(), ')'), cpus.end());
        return parse_cpulist(cpus);
    }
    return {};
}

bool has_arg(const std::vector<std::string>& args, const std::string& a) {
    return std::find(args.begin(), args.end(), a) != args.end();
}

// -m MB or --socket-mem A,B: the memory the EAL is told to take; 0 when not given.
uint64_t eal_memory_mb(const std::vector<std::string>& args) {
    for (size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "-m") return std::strtoull(args[i + 1].c_str(), nullptr, 10);
        if (args[i] == "--socket-mem") {
            uint64_t sum = 0;
            std::stringstream ss(args[i + 1]);
            for (std::string p; std::getline(ss, p, ',');)
                sum += std::strtoull(p.c_str(), nullptr, 10);
            return sum;
        }
    }
    return 0;
}

void Doctor::hugepages(const Config* cfg) {
    if (cfg != nullptr && has_arg(cfg->eal_args, "--no-huge")) {
        add("hugepages", Status::skip,
            "the config runs the EAL with --no-huge (4 KB pages: tests and demos, not line rate)",
            "remove --no-huge from [eal] args on the appliance");
        return;
    }
    uint64_t total = 0, free_bytes = 0;
    std::string sizes;
    for (const std::string& d : list("/sys/kernel/mm/hugepages")) {
        const uint64_t kb = std::strtoull(d.c_str() + d.find('-') + 1, nullptr, 10);
        const uint64_t nr = std::strtoull(
            read("/sys/kernel/mm/hugepages/" + d + "/nr_hugepages").c_str(), nullptr, 10);
        const uint64_t fr = std::strtoull(
            read("/sys/kernel/mm/hugepages/" + d + "/free_hugepages").c_str(), nullptr, 10);
        if (nr == 0) continue;
        total += nr * kb * 1024;
        free_bytes += fr * kb * 1024;
        sep(sizes, ", ");
        sizes += std::to_string(nr) + " x " +
                 (kb >= 1048576 ? std::to_string(kb / 1048576) + " GB"
                                : std::to_string(kb / 1024) + " MB") +
                 " (" + std::to_string(fr) + " free)";
    }
    if (total == 0) {
        add("hugepages", Status::fail, "no hugepages reserved",
            "dpdk-hugepages.py --setup 2G (or hugepagesz=1G hugepages=N on the kernel command "
            "line)");
        return;
    }
    bool mounted = false;
    std::string mounts = read_all("/proc/mounts"), where;
    std::stringstream ms(mounts);
    for (std::string line; std::getline(ms, line);) {
        std::stringstream ls(line);
        std::string dev, dir, type;
        ls >> dev >> dir >> type;
        if (type == "hugetlbfs") {
            mounted = true;
            where = dir;
            break;
        }
    }
    if (!mounted) {
        add("hugepages", Status::fail, sizes + " reserved, but no hugetlbfs is mounted",
            "mount -t hugetlbfs nodev /dev/hugepages (dpdk-hugepages.py --mount)");
        return;
    }
    // What the gateway takes: the EAL's -m/--socket-mem, else an estimate of its pools (every
    // descriptor of every queue, 2 KB+ buffers) and route tables (rte_lpm: 64 MB, twice while a
    // reload swaps them).
    uint64_t need_mb = cfg != nullptr ? eal_memory_mb(cfg->eal_args) : 0;
    std::string how = "the EAL's -m/--socket-mem";
    if (cfg != nullptr && need_mb == 0) {
        uint32_t mtu = 1500;
        for (const PortConf& p : cfg->ports) mtu = std::max(mtu, p.mtu);
        const uint64_t workers = std::max<size_t>(eal_lcores(cfg->eal_args).size(), 2) - 1;
        const uint64_t mbufs = cfg->ports.size() * (workers + 1) * 2048 + 4096;
        need_mb = (mbufs * (std::max<uint32_t>(2048, mtu + 26) + 256 + 128)) / 1048576 + 160;
        how = "an estimate of the pools and route tables";
    }
    char b[256];
    std::snprintf(b, sizeof b, "%s, mounted at %s", sizes.c_str(), where.c_str());
    if (cfg != nullptr && free_bytes / 1048576 < need_mb) {
        add("hugepages", Status::fail,
            std::string(b) + "; " + std::to_string(free_bytes / 1048576) +
                " MB free, the gateway needs about " + std::to_string(need_mb) + " MB (" + how +
                ")",
            "reserve more: dpdk-hugepages.py --setup " +
                std::to_string((need_mb + 1023) / 1024 + 1) + "G");
        return;
    }
    add("hugepages", Status::pass,
        std::string(b) +
            (cfg != nullptr ? "; enough for about " + std::to_string(need_mb) + " MB (" + how + ")"
                            : std::string()));
}

void Doctor::devices(const Config& cfg) {
    const bool iommu = !list("/sys/kernel/iommu_groups").empty();
    for (const PortConf& p : cfg.ports) {
        const std::string name = "port " + p.name;
        if (is_pci_address(p.device)) {
            const std::string addr = full_pci(p.device);
            const std::string dir = "/sys/bus/pci/devices/" + addr;
            if (!exists(dir)) {
                add(name, Status::fail, addr + ": no such PCI device",
                    "check the address with dpdk-devbind.py --status");
                continue;
            }
            const std::string drv = link_name(dir + "/driver");
            const std::string numa = read(dir + "/numa_node");
            const std::string where =
                addr + (numa.empty() || numa == "-1" ? "" : ", NUMA node " + numa);
            if (drv == "vfio-pci") {
                if (iommu)
                    add(name, Status::pass, where + ": bound to vfio-pci, IOMMU on");
                else
                    add(name, Status::warn,
                        where +
                            ": bound to vfio-pci without an IOMMU (no-IOMMU mode: no DMA "
                            "protection)",
                        "enable the IOMMU: intel_iommu=on iommu=pt (or amd_iommu=on) on the kernel "
                        "command line");
            } else if (drv == "mlx5_core" || drv == "mlx4_core") {
                // Bifurcated: the kernel keeps the netdev; DPDK shares the device through it.
                std::string link;
                for (const std::string& n : list(dir + "/net")) {
                    const std::string state = read("/sys/class/net/" + n + "/operstate");
                    const std::string speed = read("/sys/class/net/" + n + "/speed");
                    link = n + " " + state +
                           (speed.empty() || speed[0] == '-' ? "" : ", " + speed + " Mb/s");
                    if (state != "up") {
                        add(name, Status::fail, where + ": " + drv + " (bifurcated), link " + link,
                            "ip link set " + n + " up, and check the cable and the switch port");
                        link.clear();
                        break;
                    }
                }
                if (!link.empty() || list(dir + "/net").empty())
                    add(name, Status::pass,
                        where + ": " + drv + " (bifurcated)" +
                            (link.empty() ? "" : ", link " + link));
            } else if (drv == "uio_pci_generic" || drv == "igb_uio") {
                add(name, Status::warn,
                    where + ": bound to " + drv + " (no IOMMU protection, no interrupts)",
                    "dpdk-devbind.py -b vfio-pci " + addr);
            } else {
                add(name, Status::fail,
                    where + ": " +
                        (drv.empty() ? std::string("bound to no driver")
                                     : "bound to the kernel's " + drv),
                    "modprobe vfio-pci && dpdk-devbind.py -b vfio-pci " + addr);
            }
            continue;
        }
        const std::string ifname = vdev_iface(p.device);
        if (ifname.empty()) {
            add(name, Status::skip, p.device + ": a virtual device without a kernel interface");
            continue;
        }
        const std::string sys = "/sys/class/net/" + ifname;
        if (!exists(sys)) {
            add(name, Status::fail, p.device + ": interface " + ifname + " does not exist",
                "create it, or correct iface= in the port's device");
            continue;
        }
        const std::string state = read(sys + "/operstate");
        const uint32_t mtu =
            static_cast<uint32_t>(std::strtoul(read(sys + "/mtu").c_str(), nullptr, 10));
        if (state != "up" && state != "unknown") {
            add(name, Status::fail, ifname + " is " + state, "ip link set " + ifname + " up");
        } else if (mtu < p.mtu) {
            add(name, Status::fail,
                ifname + ": mtu " + std::to_string(mtu) + " below the port's " +
                    std::to_string(p.mtu),
                "ip link set " + ifname + " mtu " + std::to_string(p.mtu));
        } else {
            add(name, Status::pass, ifname + " " + state + ", mtu " + std::to_string(mtu));
        }
    }
}

void Doctor::lcores(const Config& cfg) {
    const std::set<unsigned> l = eal_lcores(cfg.eal_args);
    if (l.empty()) {
        add("lcores", Status::warn, "[eal] args give no -l/--lcores: the EAL takes every CPU",
            "give the EAL its cores: -l 0,2-5 (the first is the control thread)");
        return;
    }
    std::set<unsigned> workers(std::next(l.begin()), l.end());
    const std::set<unsigned> isolated = parse_cpulist(read("/sys/devices/system/cpu/isolated"));
    std::set<unsigned> not_isolated;
    for (unsigned c : workers)
        if (isolated.count(c) == 0) not_isolated.insert(c);
    // The NICs' NUMA nodes against the workers'.
    std::set<std::string> nic_nodes;
    for (const PortConf& p : cfg.ports)
        if (is_pci_address(p.device)) {
            const std::string n = read("/sys/bus/pci/devices/" + full_pci(p.device) + "/numa_node");
            if (!n.empty() && n != "-1") nic_nodes.insert(n);
        }
    std::set<unsigned> far;
    for (const std::string& node : nic_nodes) {
        const std::set<unsigned> local =
            parse_cpulist(read("/sys/devices/system/node/node" + node + "/cpulist"));
        for (unsigned c : workers)
            if (!local.empty() && local.count(c) == 0) far.insert(c);
    }
    const std::string detail =
        "main lcore " + std::to_string(*l.begin()) +
        (workers.empty() ? ", no worker lcore" : ", workers on " + cpulist_text(workers));
    if (!far.empty()) {
        add("lcores", Status::warn,
            detail + "; lcore(s) " + cpulist_text(far) + " on another NUMA node than the NICs",
            "take worker lcores from the NICs' node (lscpu -e; /sys/bus/pci/devices/*/numa_node)");
    } else if (!not_isolated.empty() && !workers.empty()) {
        add("lcores", Status::warn,
            detail + "; not isolated from the scheduler: " + cpulist_text(not_isolated),
            "isolcpus=" + cpulist_text(workers) + " nohz_full=" + cpulist_text(workers) +
                " rcu_nocbs=" + cpulist_text(workers) + " on the kernel command line");
    } else {
        add("lcores", Status::pass,
            detail + (workers.empty() ? "" : ", isolated") +
                (nic_nodes.empty() ? "" : ", on the NICs' NUMA node"));
    }
}

// Runs a command; its exit status, stdout and stderr together in `out`.
int run_command(const std::string& cmd, std::string& out) {
    out.clear();
    FILE* f = popen((cmd + " 2>&1").c_str(), "r");
    if (f == nullptr) return -1;
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
    const int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool have_tool(const char* name) {
    std::string out;
    return run_command(std::string("command -v ") + name, out) == 0;
}

void Doctor::mtu(const Config& cfg, bool probe) {
    for (const TunnelConf& t : cfg.tunnels) {
        const std::string name = "mtu " + t.name;
        // Inner frames fit the tunnel's outer MTU with the encapsulation's overhead.
        const uint32_t overhead = (t.outer_v6 ? 40 : 20) + 8 + 8 + 14;
        std::string detail =
            "inner MTU " + std::to_string(t.inner_mtu) + " + " + std::to_string(overhead) +
            " B of " + (t.type == TunnelType::geneve ? "Geneve" : "VXLAN") + " over IPv" +
            (t.outer_v6 ? "6" : "4") + " in an outer MTU of " + std::to_string(t.outer_mtu);
        if (t.inner_mtu + overhead > t.outer_mtu) {
            add(name, Status::warn,
                detail + ": full-size inner packets are too big (ICMP too big / PMTUD)",
                "raise the underlay MTU to " + std::to_string(t.inner_mtu + overhead) +
                    ", or lower the inner port's mtu to " + std::to_string(t.outer_mtu - overhead));
            continue;
        }
        if (!probe) {
            add(name, Status::pass, detail + " (the path itself not probed: --probe)");
            continue;
        }
        const std::string remote = format_ip(t.outer_v6 ? 6 : 4, t.remote.data());
        if (!have_tool("ping")) {
            add(name, Status::skip, detail + "; cannot probe the path: no ping",
                "apt install iputils-ping");
            continue;
        }
        // The largest outer packet the config sends, with DF set, to the remote VTEP.
        const uint32_t payload = t.outer_mtu - (t.outer_v6 ? 48 : 28);
        std::string out;
        const int rc =
            run_command("ping -" + std::string(t.outer_v6 ? "6" : "4") + " -M do -c 1 -W 2 -s " +
                            std::to_string(payload) + " " + remote,
                        out);
        if (rc == 0) {
            add(name, Status::pass,
                detail + "; " + remote + " answers " + std::to_string(t.outer_mtu) +
                    "-byte packets with DF set");
        } else if (out.find("too long") != std::string::npos ||
                   out.find("Frag needed") != std::string::npos ||
                   out.find("Packet too big") != std::string::npos ||
                   out.find("mtu=") != std::string::npos) {
            std::string m;
            const size_t k = out.find("mtu");
            if (k != std::string::npos) m = out.substr(k, out.find_first_of(")\n", k) - k);
            add(name, Status::fail,
                detail + "; the path to " + remote + " does not carry " +
                    std::to_string(t.outer_mtu) + "-byte packets (" +
                    (m.empty() ? "message too long" : m) + ")",
                "set the tunnel's mtu to what the path carries, or fix the underlay's MTU");
        } else {
            add(name, Status::skip,
                detail + "; " + remote +
                    " did not answer a ping from this host (no route or filtered)",
                "probe from a host on the underlay: ping -M do -s " + std::to_string(payload) +
                    " " + remote);
        }
    }
}

void Doctor::ecn_sysctls() {
    const std::string v = read("/proc/sys/net/ipv4/tcp_ecn");
    if (v.empty()) {
        add("ecn sysctl", Status::skip, "net.ipv4.tcp_ecn not readable");
        return;
    }
    if (v == "1")
        add("ecn sysctl", Status::pass, "net.ipv4.tcp_ecn = 1: this host's TCP negotiates ECN");
    else
        add("ecn sysctl", Status::warn,
            "net.ipv4.tcp_ecn = " + v + (v == "2" ? ": ECN only when the peer asks" : ": ECN off"),
            "sysctl -w net.ipv4.tcp_ecn=1 (and in /etc/sysctl.d/): the border's ECN marks reach "
            "TCP too");
}

void Doctor::roce_nics(const Config* cfg) {
    // The 802.1p priorities the config's RoCE classes travel on: a port's dscp_to_pcp, else
    // DSCP / 8 (the usual trust-DSCP mapping of RoCE NICs and switches).
    std::set<unsigned> prios;
    if (cfg != nullptr)
        for (const ClassRule& c : cfg->classes) {
            if (c.set_dscp < 0) continue;
            bool mapped = false;
            for (const PortConf& p : cfg->ports)
                if (p.role == PortRole::inner && p.has_dscp_to_pcp) {
                    prios.insert(p.dscp_to_pcp[static_cast<size_t>(c.set_dscp)]);
                    mapped = true;
                }
            if (!mapped) prios.insert(static_cast<unsigned>(c.set_dscp) >> 3);
        }
    if (prios.empty()) prios = {3};  // RoCE's customary lossless priority.
    bool any = false;
    for (const std::string& nic : list("/sys/class/net")) {
        const std::string base = "/sys/class/net/" + nic + "/ecn";
        if (!exists(base + "/roce_np/enable")) continue;
        any = true;
        std::string off;
        for (unsigned pr : prios)
            for (const char* side : {"roce_np", "roce_rp"})
                if (read(base + "/" + side + "/enable/" + std::to_string(pr)) != "1") {
                    sep(off, ", ");
                    off += std::string(side) + " priority " + std::to_string(pr);
                }
        if (!off.empty()) {
            std::string fix;
            for (unsigned pr : prios) {
                sep(fix, "; ");
                fix += std::string("echo 1 > ") + base + "/roce_np/enable/" + std::to_string(pr) +
                       "; echo 1 > " + base + "/roce_rp/enable/" + std::to_string(pr);
            }
            add("roce ecn " + nic, Status::fail,
                "DCQCN off for " + off + " (the classes use priority " + cpulist_text(prios) + ")",
                fix);
        } else {
            add("roce ecn " + nic, Status::pass,
                "DCQCN (roce_np, roce_rp) on for priority " + cpulist_text(prios));
        }
        // PFC and trust, from iproute2's dcb where the driver supports DCB.
        if (!have_tool("dcb")) {
            add("pfc " + nic, Status::skip, "no dcb tool (iproute2 6.0+) to read PFC",
                "apt install iproute2");
            continue;
        }
        std::string out;
        if (run_command("dcb pfc show dev " + nic + " prio-pfc", out) != 0) {
            add("pfc " + nic, Status::skip, "dcb pfc: " + out.substr(0, out.find('\n')));
            continue;
        }
        std::string missing;
        for (unsigned pr : prios)
            if (out.find(std::to_string(pr) + ":on") == std::string::npos) {
                sep(missing, ",");
                missing += std::to_string(pr);
            }
        if (missing.empty())
            add("pfc " + nic, Status::pass, "PFC on for priority " + cpulist_text(prios));
        else
            add("pfc " + nic, Status::warn, "PFC off for priority " + missing,
                "dcb pfc set dev " + nic + " prio-pfc " + missing + ":on");
    }
    if (!any)
        add("roce nic", Status::skip,
            "no RoCE NIC exposes ECN parameters here (/sys/class/net/*/ecn/roce_np)",
            "on the GPU hosts: check /sys/class/net/IF/ecn/roce_np/enable/3 and roce_rp, and PFC");
}

}  // namespace

int cmd_doctor(const DoctorOptions& o) {
    Config cfg;
    bool have = false;
    std::string config = o.config;
    if (config.empty() && access("/etc/dscpgw/dscpgw.toml", R_OK) == 0)
        config = "/etc/dscpgw/dscpgw.toml";
    if (!config.empty()) {
        try {
            cfg = load_config(config);
            have = true;
        } catch (const ConfigError& e) {
            std::fprintf(stderr, "dscpgw doctor: invalid config:\n%s\n", e.what());
            return 2;
        }
    }
    Doctor d(o.root);
    d.hugepages(have ? &cfg : nullptr);
    if (have) {
        d.devices(cfg);
        d.lcores(cfg);
        d.mtu(cfg, o.probe);
    } else {
        d.add("config", Status::skip,
              "no --config and no /etc/dscpgw/dscpgw.toml: host checks only",
              "dscpgw doctor --config FILE");
    }
    d.ecn_sysctls();
    d.roce_nics(have ? &cfg : nullptr);
    size_t count[4] = {};
    for (const Check& c : d.checks) ++count[static_cast<size_t>(c.status)];
    if (o.json) {
        std::string j = "{\"checks\":[";
        for (size_t i = 0; i < d.checks.size(); ++i) {
            const Check& c = d.checks[i];
            j += std::string(i ? "," : "") + "{\"check\":" + jstr(c.name) +
                 ",\"status\":" + jstr(kStatusNames[static_cast<size_t>(c.status)]) +
                 ",\"detail\":" + jstr(c.detail) +
                 ",\"fix\":" + (c.fix.empty() ? std::string("null") : jstr(c.fix)) + "}";
        }
        j += "],\"summary\":{\"pass\":" + std::to_string(count[0]) +
             ",\"warn\":" + std::to_string(count[1]) + ",\"fail\":" + std::to_string(count[2]) +
             ",\"skip\":" + std::to_string(count[3]) + "}}\n";
        std::fputs(j.c_str(), stdout);
    } else {
        for (const Check& c : d.checks) {
            std::printf("%s %s: %s\n", kStatusNames[static_cast<size_t>(c.status)], c.name.c_str(),
                        c.detail.c_str());
            if (!c.fix.empty() && c.status != Status::pass)
                std::printf("     fix: %s\n", c.fix.c_str());
        }
        std::printf("%zu pass, %zu warn, %zu fail, %zu skip\n", count[0], count[1], count[2],
                    count[3]);
    }
    return count[2] != 0 ? 1 : 0;
}

}  // namespace dscpgw
