// dscpgw: the RoCEv2 border gateway. Subcommands: check, replay, run.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "config/config.h"
#include "control/commands.h"
#include "control/socket.h"
#include "gateway/commands.h"

namespace {

void usage(std::FILE* f) {
    std::fprintf(
        f,
        "usage:\n"
        "  dscpgw check  --config FILE\n"
        "  dscpgw replay --config FILE --in IN.pcap --out OUT.pcap [--port NAME] [--trace]\n"
        "                [--workers N]\n"
        "  dscpgw run    --config FILE\n"
        "  dscpgw ctl    [--socket PATH | --config FILE] COMMAND [--json]\n"
        "      the socket is [control] socket of FILE, else %s; COMMAND is one of\n%s"
        "      (--json after a view command prints JSON)\n",
        dscpgw::kDefaultControlSocket, dscpgw::ctl_help("        ").c_str());
}

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
        return 2;
    }
}

}  // namespace dscpgw

namespace dscpgw {

// `dscpgw ctl`: one request to a running gateway's control socket.
int cmd_ctl(int argc, char** argv) {
    std::string socket, config, request;
    int i = 2;
    for (; i < argc; ++i) {
        const std::string a = argv[i];
        if ((a == "--socket" || a == "--config") && i + 1 < argc) {
            (a == "--socket" ? socket : config) = argv[++i];
        } else if (a == "--socket" || a == "--config") {
            std::fprintf(stderr, "dscpgw ctl: %s needs a value\n", a.c_str());
            return 2;
        } else {  // The command and its arguments (--json, --top N) go to the gateway as they are.
            request += (request.empty() ? "" : " ") + a;
        }
    }
    if (request.empty()) {
        std::fprintf(stderr, "dscpgw ctl: a command is required\n");
        usage(stderr);
        return 2;
    }
    if (socket.empty() && !config.empty()) {
        try {
            socket = load_config(config).control_socket;
        } catch (const ConfigError& e) {
            std::fprintf(stderr, "dscpgw ctl: cannot read the socket path from %s:\n%s\n",
                         config.c_str(), e.what());
            return 2;
        }
    }
    if (socket.empty()) socket = kDefaultControlSocket;
    std::string body;
    const int rc = control_request(socket, request, body);
    if (rc == 0) {
        std::fputs(body.c_str(), stdout);
    } else {
        std::fprintf(stderr, "dscpgw ctl: %s%s", body.c_str(),
                     !body.empty() && body.back() == '\n' ? "" : "\n");
    }
    return rc;
}

}  // namespace dscpgw

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const std::string cmd = argv[1];
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
        usage(stdout);
        return 0;
    }
    if (cmd == "ctl") return dscpgw::cmd_ctl(argc, argv);
    dscpgw::ReplayOptions o;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](std::string& dst) {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "dscpgw %s: %s needs a value\n", cmd.c_str(), a.c_str());
                std::exit(2);
            }
            dst = argv[++i];
        };
        if (a == "--config")
            value(o.config);
        else if (a == "--in" && cmd == "replay")
            value(o.in);
        else if (a == "--out" && cmd == "replay")
            value(o.out);
        else if (a == "--port" && cmd == "replay")
            value(o.port);
        else if (a == "--trace" && cmd == "replay")
            o.trace = true;
        else if (a == "--workers" && cmd == "replay") {
            std::string v;
            value(v);
            char* end = nullptr;
            const unsigned long w = std::strtoul(v.c_str(), &end, 10);
            if (v.empty() || *end != '\0' || w < 1 || w > 64) {
                std::fprintf(stderr, "dscpgw replay: --workers %s: expected 1..64\n", v.c_str());
                return 2;
            }
            o.workers = static_cast<unsigned>(w);
        } else {
            std::fprintf(stderr, "dscpgw %s: unknown argument %s\n", cmd.c_str(), a.c_str());
            usage(stderr);
            return 2;
        }
    }
    if (cmd != "check" && cmd != "replay" && cmd != "run") {
        std::fprintf(stderr, "dscpgw: unknown command %s\n", cmd.c_str());
        usage(stderr);
        return 2;
    }
    if (o.config.empty()) {
        std::fprintf(stderr, "dscpgw %s: --config FILE is required\n", cmd.c_str());
        return 2;
    }
    if (cmd == "check") return dscpgw::cmd_check(o.config);
    if (cmd == "run") return dscpgw::cmd_run(o.config);
    if (o.in.empty() || o.out.empty()) {
        std::fprintf(stderr, "dscpgw replay: --in and --out are required\n");
        return 2;
    }
    return dscpgw::cmd_replay(o);
}
