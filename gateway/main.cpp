// dscpgw: the RoCEv2 border gateway. Subcommands: check, replay, run, ctl.
#include <rte_version.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "config/config.h"
#include "control/commands.h"
#include "control/socket.h"
#include "gateway/cli.h"
#include "gateway/commands.h"

namespace {

using dscpgw::cli::Command;

const Command kCheck{"check",
                     "validate a configuration: every error with file:line:col, then what each "
                     "tunnel carries",
                     {{"--config", "FILE", "the configuration (TOML)"}}};
const Command kReplay{
    "replay",
    "process a capture offline as the workers would, writing what they send",
    {{"--config", "FILE", "the configuration (TOML)"},
     {"--in", "IN.pcap", "the frames, as they arrive"},
     {"--out", "OUT.pcap", "what leaves, in order"},
     {"--port", "NAME", "the port they arrive on (default: the first inner port)"},
     {"--trace", nullptr, "print what happens to each packet"},
     {"--workers", "N", "spread the packets over N simulated workers by flow hash (1..64)"}}};
const Command kRun{"run",
                   "run the gateway: DPDK ports, workers and the control thread, until SIGINT or "
                   "SIGTERM",
                   {{"--config", "FILE", "the configuration (TOML)"},
                    {"--log-level", "TYPE:LEVEL",
                     "a log type's level from the start (dscpgw.neighbor:debug; as the EAL's)"}}};
const Command kCtl{"ctl",
                   "send one command to a running gateway's control socket",
                   {{"--socket", "PATH", "the control socket"},
                    {"--config", "FILE", "take the socket from this configuration's [control]"}},
                   "COMMAND [ARGS] [--json]"};

const Command kDoctor{
    "doctor",
    "check the host for the gateway: hugepages, NIC binding and IOMMU, lcores, MTU, ECN, RoCE NICs",
    {{"--config", "FILE", "the configuration (default: /etc/dscpgw/dscpgw.toml if present)"},
     {"--probe", nullptr, "ping each tunnel's remote VTEP with DF set at the tunnel's MTU"},
     {"--json", nullptr, "the checks as JSON"},
     {"--root", "DIR", "read /proc and /sys under DIR (containers, tests)"}}};

void ctl_usage(std::FILE* f) {
    std::fprintf(f,
                 "%s"
                 "the socket is --socket PATH, else [control] socket of --config FILE, else %s\n"
                 "commands:\n%s"
                 "--json after a view command prints JSON\n",
                 dscpgw::cli::help_text("dscpgw", kCtl).c_str(), dscpgw::kDefaultControlSocket,
                 dscpgw::ctl_help("  ").c_str());
}

// The second line says which drivers this binary can probe: those linked in (meson's dpdk_static,
// dpdk_drivers), or DPDK's shared plugins, which the EAL loads from its driver directory.
void version() {
    std::printf("dscpgw %s (%s)\n", DSCPGW_VERSION, rte_version());  // "DPDK 22.11.x".
#ifdef DSCPGW_DPDK_DRIVERS
    std::printf("DPDK drivers linked in: %s\n", DSCPGW_DPDK_DRIVERS);
#else
    std::printf("DPDK drivers: the shared plugins in %s\n", RTE_EAL_PMD_PATH);
#endif
}

void command_help(const Command& c) {
    if (&c == &kCtl)
        ctl_usage(stdout);
    else
        std::fputs(dscpgw::cli::help_text("dscpgw", c).c_str(), stdout);
}

const dscpgw::cli::Program kProgram{
    "dscpgw", {&kCheck, &kReplay, &kRun, &kCtl, &kDoctor}, "", version, command_help};

}  // namespace

namespace dscpgw {

int cmd_check(const std::string& config) {
    try {
        const Config cfg = load_config(config);
        for (const std::string& w : cfg.warnings) std::fprintf(stderr, "%s\n", w.c_str());
        std::printf("%s: OK (%zu ports, %zu tunnels, %zu classes)\n", config.c_str(),
                    cfg.ports.size(), cfg.tunnels.size(), cfg.classes.size());
        // What each tunnel carries: a LAN may be larger than its tunnels (jumbo LAN, 1500-byte
        // underlay); the gateway then signals the difference like a router between two links.
        for (const TunnelConf& t : cfg.tunnels) {
            const uint32_t carried = carried_inner_mtu(t, t.outer_mtu);
            const PortConf& lan = cfg.ports[t.inner_port];
            std::printf("tunnel %s: path MTU %u over IPv%c carries inner IP packets up to %u bytes",
                        t.name.c_str(), t.outer_mtu, t.outer_v6 ? '6' : '4', carried);
            if (lan.mtu > carried)
                std::printf(
                    "; inner port %s has mtu %u: larger packets get ICMP "
                    "Fragmentation Needed / Packet Too Big (DF, IPv6) or are dropped "
                    "too_big\n",
                    lan.name.c_str(), lan.mtu);
            else
                std::printf(" (inner port %s mtu %u fits)\n", lan.name.c_str(), lan.mtu);
        }
        return 0;
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "dscpgw: invalid config:\n%s\n", e.what());
        return cli::kExitUsage;
    }
}

}  // namespace dscpgw

namespace dscpgw {

// The "STATE recorded=K count=N armed=A" line a trace reply starts with; false if it has none.
bool trace_state(std::string& body, uint32_t& recorded, bool& armed) {
    unsigned k = 0, n = 0, a = 0;
    const size_t nl = body.find('\n');
    if (nl == std::string::npos ||
        std::sscanf(body.c_str(), "STATE recorded=%u count=%u armed=%u", &k, &n, &a) != 3)
        return false;
    body.erase(0, nl + 1);
    recorded = k;
    armed = a != 0;
    return true;
}

// `dscpgw ctl trace`: arms the gateway's trace, prints the records as they come (text) or all
// of them at the end (--json), and disarms it; a trace that ends with fewer than N packets (the
// timeout) exits 1, as nothing of that kind came.
int ctl_trace(const std::string& socket, const CtlRequest& req) {
    std::string start = "trace --start --count " + std::to_string(req.trace_count);
    if (!req.trace_port.empty()) start += " --port " + req.trace_port;
    if (!req.trace_class.empty()) start += " --class " + req.trace_class;
    std::string body;
    uint32_t recorded = 0;
    bool armed = false;
    if (control_request(socket, start, body) != 0 || !trace_state(body, recorded, armed)) {
        std::fprintf(stderr, "dscpgw ctl: %s%s", body.c_str(),
                     !body.empty() && body.back() == '\n' ? "" : "\n");
        return body.rfind("no port", 0) == 0 || body.rfind("no class", 0) == 0 ? cli::kExitUsage
                                                                               : cli::kExitFailure;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + std::chrono::duration<double>(req.trace_timeout);
    uint32_t shown = 0;
    for (;;) {
        const std::string read =
            "trace --read " + std::to_string(req.json ? 0 : shown) + (req.json ? " --json" : "");
        if (control_request(socket, read, body) != 0 || !trace_state(body, recorded, armed)) {
            std::fprintf(stderr, "dscpgw ctl: trace: %s%s", body.c_str(),
                         !body.empty() && body.back() == '\n' ? "" : "\n");
            return cli::kExitFailure;
        }
        if (!req.json) {
            std::fputs(body.c_str(), stdout);
            std::fflush(stdout);
            shown = recorded;
        }
        if (recorded >= req.trace_count || !armed || std::chrono::steady_clock::now() >= deadline)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::string ignored;
    control_request(socket, "trace --stop", ignored);
    if (req.json) std::fputs(body.c_str(), stdout);
    const bool complete = recorded >= req.trace_count;
    if (!req.json)
        std::printf("%u of %u packet(s) traced%s\n", recorded, req.trace_count,
                    complete ? ""
                    : armed  ? " before the timeout"
                             : " (the trace was replaced)");
    if (!complete)
        std::fprintf(stderr, "dscpgw ctl: trace: %u of %u packet(s) in %.0f s\n", recorded,
                     req.trace_count, req.trace_timeout);
    return complete ? cli::kExitOk : cli::kExitFailure;
}

// `dscpgw ctl`: one request to a running gateway's control socket. The request is checked here
// first, so that a wrong command is a usage error (2) without a gateway; a reload the gateway
// refuses for its config is 2 as well, any other failure 1.
int cmd_ctl(const cli::Parsed& p) {
    std::string socket = p.get("--socket");
    const std::string config = p.get("--config");
    std::string request;
    for (const std::string& w : p.operands) {
        if (w == "-h" || w == "--help") {  // `dscpgw ctl flows --help`: the commands' list.
            ctl_usage(stdout);
            return cli::kExitOk;
        }
        request += (request.empty() ? "" : " ") + w;
    }
    if (request.empty()) {
        std::fprintf(stderr, "dscpgw ctl: a command is required\n");
        ctl_usage(stderr);
        return cli::kExitUsage;
    }
    CtlRequest req;
    std::string err;
    if (!parse_ctl_request(request, req, err)) {
        std::fprintf(stderr, "dscpgw ctl: %s%s", err.c_str(),
                     !err.empty() && err.back() == '\n' ? "" : "\n");
        return cli::kExitUsage;
    }
    if (socket.empty() && !config.empty()) {
        try {
            socket = load_config(config).control_socket;
        } catch (const ConfigError& e) {
            std::fprintf(stderr, "dscpgw ctl: cannot read the socket path from %s:\n%s\n",
                         config.c_str(), e.what());
            return cli::kExitUsage;
        }
    }
    if (socket.empty()) socket = kDefaultControlSocket;
    if (req.cmd == CtlCommand::trace && req.trace_op == CtlRequest::TraceOp::none)
        return ctl_trace(socket, req);
    std::string body;
    const int rc = control_request(socket, request, body);
    if (rc == 0) {
        std::fputs(body.c_str(), stdout);
        return cli::kExitOk;
    }
    std::fprintf(stderr, "dscpgw ctl: %s%s", body.c_str(),
                 !body.empty() && body.back() == '\n' ? "" : "\n");
    // Refused for what was asked (a config, a log type or level): a usage error.
    const bool refused =
        (req.cmd == CtlCommand::reload && body.rfind("reload refused", 0) == 0) ||
        (req.cmd == CtlCommand::log_level &&
         (body.rfind("unknown log level", 0) == 0 || body.rfind("no log type matches", 0) == 0));
    return refused ? cli::kExitUsage : cli::kExitFailure;
}

}  // namespace dscpgw

int main(int argc, char** argv) {
    using namespace dscpgw;
    const cli::Invocation inv = kProgram.invoke(argc, argv);
    if (inv.cmd == nullptr) return inv.exit_code;
    const cli::Command* c = inv.cmd;
    const cli::Parsed& p = inv.args;
    if (c == &kCtl) return cmd_ctl(p);
    if (c == &kDoctor) {
        DoctorOptions d;
        d.config = p.get("--config");
        d.root = p.get("--root");
        d.json = p.has("--json");
        d.probe = p.has("--probe");
        return cmd_doctor(d);
    }
    ReplayOptions o;
    o.config = p.get("--config");
    if (o.config.empty()) return kProgram.usage_error(*c, "--config FILE is required").exit_code;
    if (c == &kCheck) return cmd_check(o.config);
    if (c == &kRun) return cmd_run(o.config, p.get("--log-level"));
    o.in = p.get("--in");
    o.out = p.get("--out");
    o.port = p.get("--port");
    o.trace = p.has("--trace");
    if (p.has("--workers")) {
        const std::string v = p.get("--workers");
        char* end = nullptr;
        const unsigned long w = std::strtoul(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || w < 1 || w > 64)
            return kProgram.usage_error(*c, "--workers " + v + ": expected 1..64").exit_code;
        o.workers = static_cast<unsigned>(w);
    }
    if (o.in.empty() || o.out.empty())
        return kProgram.usage_error(*c, "--in and --out are required").exit_code;
    return cmd_replay(o);
}
