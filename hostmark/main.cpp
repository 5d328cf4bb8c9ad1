// dscpgw-hostmark: marks a GPU host's RoCE traffic at its own egress with an eBPF tc classifier
// (hostmark.bpf.c), from the same [[classes]] as the gateway.
//
//   dscpgw-hostmark attach --dev IFACE --config FILE   attach, or update the rules in place
//   dscpgw-hostmark detach --dev IFACE                 remove what attach added
//   dscpgw-hostmark status [--dev IFACE] [--prometheus | --textfile PATH]   (all devices without)
//   dscpgw-hostmark check --config FILE                validate the classes (no root needed)
//
// The program sits on the clsact egress hook at a fixed handle and priority, so a second attach
// finds the first: it rewrites the rule map of the running program (counters kept while the class
// list is unchanged) instead of stacking a second filter. Nothing is pinned: the tc filter holds
// the program and the program its maps; status and detach find them through the filter.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/pkt_cls.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "gateway/cli.h"
#include "hostmark/hostmark.skel.h"
#include "hostmark/rules.h"

namespace dscpgw::hostmark {
namespace {

constexpr uint32_t kHandle = 0xd5c9;  // "dscpgw" on the hook; fixed so that attach never stacks.
constexpr uint32_t kPriority = 0xd5c;
constexpr const char* kProgName = "hostmark_egress";
constexpr int kExitError = 1, kExitUsage = 2, kExitNotAttached = 3;

std::string g_libbpf_log;  // libbpf's messages, shown only when loading fails.

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list ap) {
    if (level == LIBBPF_DEBUG) return 0;
    va_list copy;
    va_copy(copy, ap);
    const int n = std::vsnprintf(nullptr, 0, fmt, copy);  // A verifier log is one long message.
    va_end(copy);
    if (n <= 0) return n;
    std::string msg(static_cast<size_t>(n) + 1, '\0');
    std::vsnprintf(msg.data(), msg.size(), fmt, ap);
    msg.pop_back();
    g_libbpf_log += msg;
    if (g_libbpf_log.size() > 65536) g_libbpf_log.erase(0, g_libbpf_log.size() - 65536);
    return n;
}

[[gnu::format(printf, 1, 2)]] int fail(const char* fmt, ...) {
    std::fputs("dscpgw-hostmark: ", stderr);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    return kExitError;
}

using dscpgw::cli::Command;
const Command kAttach{"attach",
                      "load the classifier and attach it to a device's egress (tc clsact), or "
                      "replace its rules",
                      {{"--dev", "IFACE", "the device"},
                       {"--config", "FILE", "the configuration whose [[classes]] it applies"}}};
const Command kDetach{
    "detach", "remove the classifier from a device", {{"--dev", "IFACE", "the device"}}};
const Command kStatus{"status",
                      "the rules and counters of a device, or of every device with the "
                      "classifier (exit 3: attached to none)",
                      {{"--dev", "IFACE", "only this device"},
                       {"--prometheus", nullptr, "the counters in Prometheus' text format"},
                       {"--textfile", "PATH", "the same written to PATH (node_exporter)"}}};
const Command kCheck{"check",
                     "validate a configuration's classes as the classifier would take them",
                     {{"--config", "FILE", "the configuration (TOML)"}}};
void version() {
    std::printf("dscpgw-hostmark %s (libbpf %u.%u)\n", DSCPGW_VERSION, libbpf_major_version(),
                libbpf_minor_version());
}

const dscpgw::cli::Program kProgram{"dscpgw-hostmark",
                                    {&kAttach, &kDetach, &kStatus, &kCheck},
                                    ", 3 status: attached to no device",
                                    version};

// An fd closed on scope exit.
class Fd {
  public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    Fd& operator=(Fd&& o) noexcept {
        std::swap(fd_, o.fd_);
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) close(fd_);
    }
    int get() const { return fd_; }

  private:
    int fd_;
};

// The maps of the program attached to a device.
struct Maps {
    uint32_t prog_id = 0;
    Fd rules, state, counters;
    bool compatible = false;  // Same ABI as this binary: the maps can be rewritten in place.
};

bpf_tc_hook egress_hook(int ifindex) {
    bpf_tc_hook h{};
    h.sz = sizeof h;
    h.ifindex = ifindex;
    h.attach_point = BPF_TC_EGRESS;
    return h;
}

bpf_tc_opts our_filter() {
    bpf_tc_opts o{};
    o.sz = sizeof o;
    o.handle = kHandle;
    o.priority = kPriority;
    return o;
}

bool read_state(const Maps& m, hm_state& st) {
    const uint32_t zero = 0;
    return bpf_map_lookup_elem(m.state.get(), &zero, &st) == 0;
}

// Finds our filter on the device's egress hook. Returns nullopt when there is none; `err` is set
// when something else went wrong (a foreign program at our handle, a BPF error).
std::optional<Maps> find_attached(int ifindex, std::string& err) {
    bpf_tc_hook hook = egress_hook(ifindex);
    bpf_tc_opts q = our_filter();
    const int rc = bpf_tc_query(&hook, &q);
    if (rc == -ENOENT || rc == -EINVAL) return std::nullopt;  // No filter, or no clsact at all.
    if (rc < 0) {
        err = std::string("cannot query the tc egress hook: ") + std::strerror(-rc);
        return std::nullopt;
    }
    Maps m;
    m.prog_id = q.prog_id;
    Fd prog(bpf_prog_get_fd_by_id(q.prog_id));
    if (prog.get() < 0) {
        err = "cannot open BPF program " + std::to_string(q.prog_id) + ": " + std::strerror(errno);
        return std::nullopt;
    }
    uint32_t map_ids[8] = {};
    bpf_prog_info info{};
    info.nr_map_ids = 8;
    info.map_ids = reinterpret_cast<uintptr_t>(map_ids);
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(prog.get(), &info, &len) != 0) {
        err = std::string("cannot read the BPF program's info: ") + std::strerror(errno);
        return std::nullopt;
    }
    if (std::strncmp(info.name, kProgName, sizeof info.name) != 0) {
        char b[160];
        std::snprintf(b, sizeof b,
                      "the tc egress filter at handle 0x%x is not dscpgw-hostmark's (program "
                      "\"%.16s\"); refusing to touch it",
                      kHandle, info.name);
        err = b;
        return std::nullopt;
    }
    bpf_map_info rules_info{};
    for (uint32_t i = 0; i < info.nr_map_ids && i < 8; ++i) {
        Fd fd(bpf_map_get_fd_by_id(map_ids[i]));
        if (fd.get() < 0) continue;
        bpf_map_info mi{};
        uint32_t mlen = sizeof mi;
        if (bpf_obj_get_info_by_fd(fd.get(), &mi, &mlen) != 0) continue;
        const std::string name = mi.name;
        if (name == "hm_rules") {
            rules_info = mi;
            m.rules = std::move(fd);
        } else if (name == "hm_state") {
            m.state = std::move(fd);
        } else if (name == "hm_counters") {
            m.counters = std::move(fd);
        }
    }
    if (m.rules.get() < 0 || m.state.get() < 0 || m.counters.get() < 0) {
        err = "the attached dscpgw-hostmark program's maps cannot be opened";
        return std::nullopt;
    }
    hm_state st{};
    m.compatible = rules_info.value_size == sizeof(hm_ruleset) && read_state(m, st) &&
                   st.abi == HM_ABI_VERSION;
    return m;
}

bool read_counters(int fd, Counters& out) {
    const int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return false;
    std::vector<hm_counter> per_cpu(static_cast<size_t>(ncpu));
    for (uint32_t k = 0; k < HM_NUM_COUNTERS; ++k) {
        if (bpf_map_lookup_elem(fd, &k, per_cpu.data()) != 0) return false;
        hm_counter sum{};
        for (const hm_counter& c : per_cpu) {
            sum.packets += c.packets;
            sum.bytes += c.bytes;
            sum.dscp_rewritten += c.dscp_rewritten;
            sum.pcp_set += c.pcp_set;
        }
        out[k] = sum;
    }
    return true;
}

bool zero_counters(int fd) {
    const int ncpu = libbpf_num_possible_cpus();
    if (ncpu <= 0) return false;
    std::vector<hm_counter> zero(static_cast<size_t>(ncpu));
    for (uint32_t k = 0; k < HM_NUM_COUNTERS; ++k)
        if (bpf_map_update_elem(fd, &k, zero.data(), BPF_ANY) != 0) return false;
    return true;
}

bool same_classes(const hm_ruleset& a, const hm_ruleset& b) {
    if (a.n != b.n) return false;
    for (uint32_t i = 0; i < a.n && i < HM_MAX_CLASSES; ++i)
        if (std::strncmp(a.rules[i].name, b.rules[i].name, HM_NAME_LEN) != 0) return false;
    return true;
}

// Writes `rs` into the inactive slot of a running program and makes it the active one.
int update_in_place(const std::string& dev, const Maps& m, const hm_ruleset& rs) {
    hm_state st{};
    if (!read_state(m, st))
        return fail("%s: cannot read the program's state map: %s", dev.c_str(),
                    std::strerror(errno));
    const uint32_t cur = st.active & 1, next = cur ^ 1;
    hm_ruleset old{};
    const bool have_old = bpf_map_lookup_elem(m.rules.get(), &cur, &old) == 0;
    if (bpf_map_update_elem(m.rules.get(), &next, &rs, BPF_ANY) != 0)
        return fail("%s: cannot write the rule map: %s", dev.c_str(), std::strerror(errno));
    st.active = next;
    ++st.generation;
    const uint32_t zero = 0;
    if (bpf_map_update_elem(m.state.get(), &zero, &st, BPF_ANY) != 0)
        return fail("%s: cannot switch to the new rules: %s", dev.c_str(), std::strerror(errno));
    // Counters are per class position: they restart when the class list changed.
    const bool reset = !have_old || !same_classes(old, rs);
    if (reset && !zero_counters(m.counters.get()))
        return fail("%s: cannot reset the counters: %s", dev.c_str(), std::strerror(errno));
    std::printf(
        "dscpgw-hostmark: %s: rules updated in place (prog id %u, generation %llu, %u "
        "classes, counters %s)\n",
        dev.c_str(), m.prog_id, static_cast<unsigned long long>(st.generation), rs.n,
        reset ? "reset: the class list changed" : "kept");
    return 0;
}

std::string load_error(int err) {
    switch (err) {
        case EPERM:
        case EACCES:
            return "permission denied (needs root: CAP_BPF/CAP_SYS_ADMIN and CAP_NET_ADMIN)";
        case ENOSYS:
            return "the kernel has no BPF system call (CONFIG_BPF_SYSCALL)";
        case EOPNOTSUPP:
        case EINVAL:
            return "the kernel refused the program (no BPF tc support, or too old)";
        default:
            return std::strerror(err);
    }
}

// Loads a fresh program with `rs` and attaches it, replacing whatever sits at our handle.
int load_and_attach(const std::string& dev, int ifindex, const hm_ruleset& rs,
                    std::optional<bool> created_before) {
    g_libbpf_log.clear();
    hostmark_bpf* skel = hostmark_bpf__open_and_load();
    if (skel == nullptr) {
        const int e = errno;
        std::fputs(g_libbpf_log.c_str(), stderr);
        // As root, EACCES/EINVAL with a verifier log means the verifier refused the program.
        if (geteuid() == 0 && (e == EACCES || e == EINVAL) &&
            g_libbpf_log.find("BEGIN PROG LOAD LOG") != std::string::npos)
            return fail(
                "cannot load the BPF program: the kernel's verifier rejected it (see its "
                "log above; this is a dscpgw-hostmark bug or a kernel too old for it)");
        return fail("cannot load the BPF program: %s", load_error(e).c_str());
    }
    struct Guard {
        hostmark_bpf* s;
        ~Guard() { hostmark_bpf__destroy(s); }
    } guard{skel};

    const uint32_t zero = 0;
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.hm_rules), &zero, &rs, BPF_ANY) != 0)
        return fail("cannot initialise the program's rule map: %s", std::strerror(errno));
    bpf_tc_hook hook = egress_hook(ifindex);
    bool created = created_before.value_or(false);
    if (!created_before) {
        const int rc = bpf_tc_hook_create(&hook);
        if (rc != 0 && rc != -EEXIST)
            return fail("%s: cannot add the clsact qdisc: %s", dev.c_str(),
                        load_error(-rc).c_str());
        created = rc == 0;
    }
    // On failure, a qdisc this call added goes again.
    const auto undo = [&] {
        if (created && !created_before) {
            bpf_tc_hook h = hook;
            h.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
            bpf_tc_hook_destroy(&h);
        }
    };
    hm_state st{};
    st.abi = HM_ABI_VERSION;
    st.active = 0;
    st.created_clsact = created ? 1 : 0;
    st.generation = 1;
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.hm_state), &zero, &st, BPF_ANY) != 0) {
        const int e = errno;
        undo();
        return fail("cannot initialise the program's state map: %s", std::strerror(e));
    }
    bpf_tc_opts opts = our_filter();
    opts.prog_fd = bpf_program__fd(skel->progs.hostmark_egress);
    opts.flags = BPF_TC_F_REPLACE;
    if (const int rc = bpf_tc_attach(&hook, &opts); rc != 0) {
        undo();
        return fail("%s: cannot attach to the tc egress hook: %s", dev.c_str(),
                    load_error(-rc).c_str());
    }
    std::printf(
        "dscpgw-hostmark: %s: attached to tc clsact egress (handle 0x%x, priority %u, "
        "prog id %u, %u classes%s)\n",
        dev.c_str(), kHandle, kPriority, opts.prog_id, rs.n, created ? ", clsact qdisc added" : "");
    return 0;
}

// Filters on the device's clsact hooks (ingress and egress), by a netlink dump.
int count_filters(int ifindex, std::string& err) {
    Fd sock(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (sock.get() < 0) {
        err = std::string("netlink socket: ") + std::strerror(errno);
        return -1;
    }
    int total = 0;
    uint32_t seq = 1;
    for (uint32_t minor : {TC_H_MIN_INGRESS, TC_H_MIN_EGRESS}) {
        struct {
            nlmsghdr nh;
            tcmsg tc;
        } req{};
        req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(tcmsg));
        req.nh.nlmsg_type = RTM_GETTFILTER;
        req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
        req.nh.nlmsg_seq = ++seq;
        req.tc.tcm_family = AF_UNSPEC;
        req.tc.tcm_ifindex = ifindex;
        req.tc.tcm_parent = TC_H_MAKE(TC_H_CLSACT, minor);
        if (send(sock.get(), &req, req.nh.nlmsg_len, 0) < 0) {
            err = std::string("netlink send: ") + std::strerror(errno);
            return -1;
        }
        for (bool done = false; !done;) {
            alignas(nlmsghdr) char buf[16384];
            const ssize_t n = recv(sock.get(), buf, sizeof buf, 0);
            if (n < 0) {
                err = std::string("netlink recv: ") + std::strerror(errno);
                return -1;
            }
            auto len = static_cast<uint32_t>(n);
            for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len);
                 h = NLMSG_NEXT(h, len)) {
                if (h->nlmsg_type == NLMSG_DONE) {
                    done = true;
                    break;
                }
                if (h->nlmsg_type == NLMSG_ERROR) {
                    const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
                    if (e->error == 0) continue;
                    err = std::string("netlink filter dump: ") + std::strerror(-e->error);
                    return -1;
                }
                // A dump also lists each priority's chain head (handle 0): count filters only.
                if (h->nlmsg_type == RTM_NEWTFILTER &&
                    static_cast<const tcmsg*>(NLMSG_DATA(h))->tcm_handle != 0)
                    ++total;
            }
        }
    }
    return total;
}

struct Args {
    std::string cmd, dev, config, textfile;
    bool prometheus = false;
};

// The arguments of the command to run, or nothing (help or version printed, or bad usage
// reported: exit with kExitUsage or 0 as `exit_code` says).
struct ParseResult {
    std::optional<Args> args;
    int exit_code = kExitUsage;
};

ParseResult parse_args(int argc, char** argv) {
    const dscpgw::cli::Invocation inv = kProgram.invoke(argc, argv);
    if (inv.cmd == nullptr) return {std::nullopt, inv.exit_code};
    const dscpgw::cli::Command* c = inv.cmd;
    const dscpgw::cli::Parsed& p = inv.args;
    Args a;
    a.cmd = c->name;
    a.dev = p.get("--dev");
    a.config = p.get("--config");
    a.textfile = p.get("--textfile");
    a.prometheus = p.has("--prometheus");
    std::string why;
    if ((c == &kAttach || c == &kDetach) && a.dev.empty()) why = "--dev IFACE is required";
    if (why.empty() && (c == &kAttach || c == &kCheck) && a.config.empty())
        why = "--config FILE is required";
    if (why.empty() && a.prometheus && !a.textfile.empty())
        why = "--prometheus and --textfile exclude each other";
    if (!why.empty()) return {std::nullopt, kProgram.usage_error(*c, why).exit_code};
    return {a, 0};
}

// The classes of the config as a rule set; false (with the error printed) when unusable: bad
// input, which the callers exit 2 for, as dscpgw does.
bool ruleset_from(const std::string& path, hm_ruleset& rs) {
    try {
        std::vector<std::string> warnings;
        const std::string why = build_ruleset(load_classes(path, &warnings), rs);
        for (const std::string& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
        if (why.empty()) return true;
        fail("%s: %s", path.c_str(), why.c_str());
    } catch (const ConfigError& e) {
        fail("invalid config:\n%s", e.what());
    }
    return false;
}

// The device's index, or 0 (with the error printed) when it is missing or carries no Ethernet
// header (a tun or WireGuard device: the program parses Ethernet frames).
int device_index(const std::string& dev) {
    const unsigned idx = if_nametoindex(dev.c_str());
    if (idx == 0) {
        fail("interface %s not found: %s", dev.c_str(), std::strerror(errno));
        return 0;
    }
    Fd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ifreq ifr{};
    std::snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", dev.c_str());
    if (s.get() >= 0 && ioctl(s.get(), SIOCGIFHWADDR, &ifr) == 0 &&
        ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER && ifr.ifr_hwaddr.sa_family != ARPHRD_LOOPBACK) {
        fail(
            "interface %s is not an Ethernet device (ARPHRD type %u); dscpgw-hostmark marks "
            "Ethernet frames",
            dev.c_str(), ifr.ifr_hwaddr.sa_family);
        return 0;
    }
    return static_cast<int>(idx);
}

int cmd_check(const Args& a) {
    hm_ruleset rs{};
    if (!ruleset_from(a.config, rs)) return kExitUsage;
    std::printf("%s: %u classes\n", a.config.c_str(), rs.n);
    for (uint32_t i = 0; i < rs.n; ++i)
        std::printf("  %-20s %s\n", rs.rules[i].name, describe_rule(rs.rules[i]).c_str());
    return 0;
}

int cmd_attach(const Args& a) {
    hm_ruleset rs{};
    if (!ruleset_from(a.config, rs)) return kExitUsage;
    const int ifindex = device_index(a.dev);
    if (ifindex == 0) return kExitError;
    std::string err;
    std::optional<Maps> m = find_attached(ifindex, err);
    if (!err.empty()) return fail("%s: %s", a.dev.c_str(), err.c_str());
    if (m && m->compatible) return update_in_place(a.dev, *m, rs);
    std::optional<bool> created;
    if (m) {  // Attached by another version of this tool: replace the program, keep the qdisc's
              // story.
        hm_state st{};
        created = read_state(*m, st) && st.created_clsact != 0;
        std::printf(
            "dscpgw-hostmark: %s: replacing an attached program of another version "
            "(counters restart)\n",
            a.dev.c_str());
    }
    return load_and_attach(a.dev, ifindex, rs, created);
}

int cmd_detach(const Args& a) {
    const int ifindex = device_index(a.dev);
    if (ifindex == 0) return kExitError;
    std::string err;
    std::optional<Maps> m = find_attached(ifindex, err);
    if (!err.empty()) return fail("%s: %s", a.dev.c_str(), err.c_str());
    if (!m) {
        std::printf("dscpgw-hostmark: %s: not attached; nothing to remove\n", a.dev.c_str());
        return 0;
    }
    hm_state st{};
    const bool created = read_state(*m, st) && st.created_clsact != 0;
    bpf_tc_hook hook = egress_hook(ifindex);
    bpf_tc_opts opts = our_filter();
    if (const int rc = bpf_tc_detach(&hook, &opts); rc != 0)
        return fail("%s: cannot remove the tc filter: %s", a.dev.c_str(), std::strerror(-rc));
    std::string what = "filter removed";
    if (created) {
        const int others = count_filters(ifindex, err);
        if (others < 0) return fail("%s: %s", a.dev.c_str(), err.c_str());
        if (others == 0) {
            hook.attach_point = static_cast<bpf_tc_attach_point>(BPF_TC_INGRESS | BPF_TC_EGRESS);
            if (const int rc = bpf_tc_hook_destroy(&hook); rc != 0 && rc != -ENOENT)
                return fail("%s: cannot remove the clsact qdisc: %s", a.dev.c_str(),
                            std::strerror(-rc));
            what += ", clsact qdisc removed";
        } else {
            what += ", clsact qdisc kept (" + std::to_string(others) + " other filters use it)";
        }
    }
    std::printf("dscpgw-hostmark: %s: detached (%s)\n", a.dev.c_str(), what.c_str());
    return 0;
}

// The status of `dev`; false (error printed) when it cannot be read.
bool read_status(const std::string& dev, int ifindex, DeviceStatus& out) {
    std::string err;
    std::optional<Maps> m = find_attached(ifindex, err);
    if (!err.empty()) {
        fail("%s: %s", dev.c_str(), err.c_str());
        return false;
    }
    out.attachment.device = dev;
    if (!m) return true;
    if (!m->compatible) {
        fail(
            "%s: attached by another version of dscpgw-hostmark; its maps cannot be read by "
            "this one",
            dev.c_str());
        return false;
    }
    hm_state st{};
    if (!read_state(*m, st)) {
        fail("%s: cannot read the program's state: %s", dev.c_str(), std::strerror(errno));
        return false;
    }
    const uint32_t slot = st.active & 1;
    if (bpf_map_lookup_elem(m->rules.get(), &slot, &out.rules) != 0 ||
        !read_counters(m->counters.get(), out.counters)) {
        fail("%s: cannot read the program's maps: %s", dev.c_str(), std::strerror(errno));
        return false;
    }
    out.attachment.attached = true;
    out.attachment.prog_id = m->prog_id;
    out.attachment.generation = st.generation;
    out.attachment.created_clsact = st.created_clsact != 0;
    return true;
}

// Writes `text` to `path` for node_exporter, which reads the directory at any time: written
// aside, then renamed into place.
int write_textfile(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr) return fail("%s: %s", tmp.c_str(), std::strerror(errno));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        std::remove(tmp.c_str());
        return fail("%s: %s", path.c_str(), std::strerror(e));
    }
    return 0;
}

// With --dev, that device (attached or not); without, every device of this network namespace
// that has the classifier attached.
int cmd_status(const Args& a) {
    std::vector<DeviceStatus> devices;
    if (!a.dev.empty()) {
        const int ifindex = device_index(a.dev);
        if (ifindex == 0) return kExitError;
        if (!read_status(a.dev, ifindex, devices.emplace_back())) return kExitError;
    } else {
        struct if_nameindex* all = ::if_nameindex();
        if (all == nullptr) return fail("cannot list the interfaces: %s", std::strerror(errno));
        bool ok = true;
        for (const struct if_nameindex* i = all; i->if_index != 0; ++i) {
            DeviceStatus d;
            ok = read_status(i->if_name, static_cast<int>(i->if_index), d) && ok;
            if (d.attachment.attached) devices.push_back(std::move(d));
        }
        if_freenameindex(all);
        if (!ok) return kExitError;
    }
    bool any = false;
    for (const DeviceStatus& d : devices) any = any || d.attachment.attached;
    if (!a.textfile.empty()) {
        if (const int rc = write_textfile(a.textfile, prometheus_text(devices)); rc != 0) return rc;
    } else if (a.prometheus) {
        std::fputs(prometheus_text(devices).c_str(), stdout);
    } else if (devices.empty()) {
        std::puts("dscpgw-hostmark: attached to no device");
    } else {
        for (const DeviceStatus& d : devices)
            std::fputs(status_table(d.attachment, d.rules, d.counters).c_str(), stdout);
    }
    return any ? 0 : kExitNotAttached;
}

}  // namespace
}  // namespace dscpgw::hostmark

int main(int argc, char** argv) {
    using namespace dscpgw::hostmark;
    // libbpf's messages are kept and shown only with a load failure (a query of a device without
    // clsact, for one, makes the kernel say "Parent Qdisc doesn't exists").
    libbpf_set_print(libbpf_print);
    const ParseResult parsed = parse_args(argc, argv);
    if (!parsed.args) return parsed.exit_code;
    const std::optional<Args>& a = parsed.args;
    if (a->cmd == "check") return cmd_check(*a);
    if (geteuid() != 0)
        return fail(
            "%s needs root (CAP_BPF/CAP_SYS_ADMIN and CAP_NET_ADMIN to load and attach "
            "BPF programs)",
            a->cmd.c_str());
    if (a->cmd == "status") return cmd_status(*a);
    // attach and detach read, then write the program's state: one at a time on this host (two at
    // once could write the same half of the rule map, or both create the qdisc).
    const char* lock_path = access("/run/lock", W_OK) == 0 ? "/run/lock/dscpgw-hostmark.lock"
                                                           : "/tmp/dscpgw-hostmark.lock";
    Fd lock(open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (lock.get() < 0 || flock(lock.get(), LOCK_EX) != 0)
        return fail("cannot lock %s: %s", lock_path, std::strerror(errno));
    return a->cmd == "attach" ? cmd_attach(*a) : cmd_detach(*a);
}
