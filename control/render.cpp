// Text tables and JSON for the control socket (`dscpgw ctl`), from one Report.
#include "control/render.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <ctime>
#include <tuple>

namespace dscpgw {

namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

std::string iso_time(double t) {
    if (t <= 0) return "never";
    const time_t s = static_cast<time_t>(t);
    tm g{};
    gmtime_r(&s, &g);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &g);
    return buf;
}

const char* reload_word(bool ok) { return ok ? "ok" : "failed"; }

// The heaviest flows by byte rate, and the most congested by CNP rate (ties by packets).
std::vector<const FlowReport*> top(const std::vector<FlowReport>& fs, size_t n, bool by_cnp) {
    std::vector<const FlowReport*> v;
    for (const FlowReport& f : fs)
        if (!by_cnp || f.cnps != 0) v.push_back(&f);
    std::sort(v.begin(), v.end(), [by_cnp](const FlowReport* a, const FlowReport* b) {
        if (by_cnp)
            return a->cnps_per_s != b->cnps_per_s ? a->cnps_per_s > b->cnps_per_s
                                                  : a->cnps > b->cnps;
        return a->bps != b->bps ? a->bps > b->bps : a->bytes > b->bytes;
    });
    if (v.size() > n) v.resize(n);
    return v;
}

class Json {
  public:
    Json& key(const char* k) {
        sep();
        out_ += '"' + json_escape(k) + "\":";
        comma_ = false;
        return *this;
    }
    Json& raw(const std::string& v) { return value(v); }
    // A member: key and value.
    Json& str(const char* k, const std::string& v) { return key(k).str(v); }
    Json& num(const char* k, uint64_t v) { return key(k).num(v); }
    Json& dbl(const char* k, double v) { return key(k).dbl(v); }
    Json& boolean(const char* k, bool v) { return key(k).boolean(v); }
    Json& str(const std::string& v) { return value('"' + json_escape(v) + '"'); }
    Json& num(uint64_t v) { return value(std::to_string(v)); }
    Json& dbl(double v) { return value(fmt("%.3f", v)); }
    Json& boolean(bool v) { return value(v ? "true" : "false"); }
    Json& open(char c) {
        sep();
        out_ += c;
        comma_ = false;
        return *this;
    }
    Json& close(char c) {
        out_ += c;
        comma_ = true;
        return *this;
    }
    std::string take() const { return out_ + "\n"; }

  private:
    Json& value(const std::string& v) {
        sep();
        out_ += v;
        comma_ = true;
        return *this;
    }
    void sep() {
        if (comma_) out_ += ',';
    }
    std::string out_;
    bool comma_ = false;  // A value or container just ended: the next one needs a comma.
};

// A family's totals as JSON members, keyed by the entries' fields.
template <typename Family>
Json& json_totals(Json& j, const Totals<Family>& t) {
    for (size_t e = 0; e < Family::count; ++e)
        j.key(std::string(Family::info[e].field).c_str()).num(t[e]);
    return j;
}

// A family's text-table columns: the entries that name one.
template <typename Family>
int column_width(size_t e) {
    return std::max<int>(12, static_cast<int>(Family::info[e].column.size()) + 1);
}

template <typename Family>
std::string columns() {
    std::string o;
    for (size_t e = 0; e < Family::count; ++e)
        if (!Family::info[e].column.empty())
            o += fmt(" %*s", column_width<Family>(e), std::string(Family::info[e].column).c_str());
    return o;
}

template <typename Family>
std::string cells(const Totals<Family>& t) {
    std::string o;
    for (size_t e = 0; e < Family::count; ++e)
        if (!Family::info[e].column.empty()) o += fmt(" %*" PRIu64, column_width<Family>(e), t[e]);
    return o;
}

void json_flow(Json& j, const FlowReport& f) {
    j.open('{')
        .str("src", f.src)
        .str("dst", f.dst)
        .num("dest_qp", f.dqp)
        .str("tunnel", f.tunnel)
        .str("direction", f.decap ? "decap" : "encap")
        .num("packets", f.pkts)
        .num("bytes", f.bytes)
        .num("cnps", f.cnps)
        .dbl("packets_per_second", f.pps)
        .dbl("bytes_per_second", f.bps)
        .dbl("cnps_per_second", f.cnps_per_s)
        .dbl("idle_seconds", f.idle_s)
        .close('}');
}

void json_tunnel(Json& j, const TunnelReport& t) {
    j.open('{')
        .str("name", t.name)
        .str("type", t.type)
        .num("vni", t.vni)
        .num("udp_port", t.udp_port)
        .str("local", t.local)
        .str("remote", t.remote)
        .str("outer_port", t.outer_port)
        .str("inner_port", t.inner_port)
        .str("next_hop", t.next_hop)
        .key("next_hop_resolved");
    if (t.next_hop_resolved < 0)
        j.raw("null");
    else
        j.boolean(t.next_hop_resolved == 1);
    j.num("mtu", t.mtu).num("path_mtu", t.path_mtu).num("carries_inner_mtu", t.carries);
    j.key("path_mtu_learned_seconds_ago");
    if (t.path_mtu_age < 0)
        j.raw("null");
    else
        j.raw(fmt("%.1f", t.path_mtu_age));
    json_totals<TunnelCounter>(j, t.t)
        .dbl("cnp_encap_per_second", t.cnp_encap_rate)
        .dbl("cnp_decap_per_second", t.cnp_decap_rate)
        .close('}');
}

// Every shaper of the report, the ports' then the tunnels': f(kind, name, rate, burst, bytes sent,
// nanoseconds throttled).
template <typename F>
void each_shaper(const Report& r, F&& f) {
    for (const PortReport& p : r.ports)
        f("port", p.name, p.rate, p.burst, p.t[PortCounter::shaper_bytes],
          p.t[PortCounter::shaper_throttled]);
    for (const TunnelReport& t : r.tunnels)
        f("tunnel", t.name, t.rate, t.burst, t.t[TunnelCounter::shaper_bytes],
          t.t[TunnelCounter::shaper_throttled]);
}

// A DSCP action of a policer's colour: the DSCP, or the word ("keep", "drop").
std::string colour_action(int v, const char* word) { return v < 0 ? word : std::to_string(v); }

void json_policer(Json& j, const PolicerReport& p) {
    j.open('{')
        .str("name", p.name)
        .str("mode", p.mode)
        .num("cir_bits_per_second", p.cir)
        .num("pir_bits_per_second", p.pir)
        .num("cbs_bytes", p.cbs)
        .num(p.mode == "srtcm" ? "ebs_bytes" : "pbs_bytes", p.pbs)
        .boolean("colour_aware", p.colour_aware);
    // A DSCP as a number, the word otherwise, as the config writes them (and classes' "dscp").
    for (const auto& [key, v, word] :
         {std::tuple{"yellow", p.yellow, "keep"}, std::tuple{"red", p.red, "drop"}}) {
        j.key(key);
        if (v < 0)
            j.str(word);
        else
            j.num(static_cast<uint64_t>(v));
    }
    j.key("classes").open('[');
    for (const std::string& c : p.classes) j.str(c);
    j.close(']');
    json_totals<PolicerCounter>(j, p.t).close('}');
}

void json_status(Json& j, const Report& r) {
    j.str("version", r.version)
        .str("dpdk", r.dpdk_version)
        .str("config", r.config_path)
        .num("generation", r.generation)
        .dbl("uptime_seconds", r.now - r.start_time)
        .str("last_reload", iso_time(r.last_reload_time))
        .str("last_reload_result", reload_word(r.last_reload_ok))
        .str("last_reload_error", r.last_reload_error)
        .dbl("last_reload_seconds", r.last_reload_seconds)
        .num("reloads_ok", r.reloads_ok)
        .num("reloads_failed", r.reloads_failed)
        .num("workers", r.workers.size())
        .num("mbufs_in_use", r.mbufs_in_use)
        .num("mbufs_total", r.mbufs_total)
        .key("ports")
        .open('[');
    for (const PortReport& p : r.ports) {
        j.open('{')
            .str("name", p.name)
            .str("device", p.device)
            .str("role", p.role)
            .num("mtu", p.mtu)
            .key("link_up");
        if (p.link_up < 0)
            j.raw("null");
        else
            j.boolean(p.link_up == 1);
        j.num("speed_mbps", p.speed_mbps).close('}');
    }
    j.close(']');
}

}  // namespace

std::string json_escape(const std::string& s) {
    std::string o;
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            o += '\\';
            o += ch;
        } else if (c < 0x20) {
            o += fmt("\\u%04x", c);
        } else {
            o += ch;
        }
    }
    return o;
}

std::string render_json(const Report& r, CtlCommand what, size_t n) {
    Json j;
    j.open('{');
    if (what == CtlCommand::status) {
        json_status(j, r);
    } else if (what == CtlCommand::stats) {
        j.num("generation", r.generation).key("ports").open('[');
        for (const PortReport& p : r.ports) {
            j.open('{').str("name", p.name);
            json_totals<PortCounter>(j, p.t);
            json_totals<DeviceCounter>(j, p.dev).close('}');
        }
        j.close(']').key("classes").open('{');
        for (const ClassReport& c : r.classes)
            json_totals<ClassCounter>(j.key(c.name.c_str()).open('{'), c.t).close('}');
        j.close('}').key("unclassified").open('{');
        json_totals<ClassCounter>(j, r.unclassified).close('}');
        j.key("tunnels").open('[');
        for (const TunnelReport& t : r.tunnels) json_tunnel(j, t);
        j.close(']').key("policers").open('[');
        for (const PolicerReport& p : r.policers) json_policer(j, p);
        j.close(']').key("drops").open('{');
        for (size_t d = 1; d < kDropReasonCount; ++d)
            j.key(std::string(kDropReasonInfo[d].name).c_str()).num(r.drops[d]);
        j.close('}').key("local").open('{');
        for (size_t l = 1; l < kLocalReplyCount; ++l)
            j.key(std::string(kLocalReplyInfo[l].name).c_str()).num(r.local_replies[l]);
        j.close('}');
        json_totals<DataplaneCounter>(j, r.dataplane)
            .num("mbufs_in_use", r.mbufs_in_use)
            .key("workers")
            .open('[');
        for (const WorkerReport& w : r.workers) {
            json_totals<WorkerCounter>(j.open('{').num("lcore", w.lcore), w.t)
                .key("rx_queues")
                .open('[');
            for (const auto& [port, queue] : w.rx)
                j.open('{').str("port", port).num("queue", queue).close('}');
            j.close(']').close('}');
        }
        j.close(']');
    } else if (what == CtlCommand::tunnels) {
        j.key("tunnels").open('[');
        for (const TunnelReport& t : r.tunnels) json_tunnel(j, t);
        j.close(']');
    } else if (what == CtlCommand::policers) {
        j.key("policers").open('[');
        for (const PolicerReport& p : r.policers) json_policer(j, p);
        j.close(']');
    } else if (what == CtlCommand::queues) {
        j.key("shapers").open('[');
        const auto shaper = [&](const char* kind, const std::string& name, uint64_t rate,
                                uint64_t burst, uint64_t bytes, uint64_t throttled_ns) {
            if (rate != 0)
                j.open('{')
                    .str("kind", kind)
                    .str("name", name)
                    .num("rate", rate)
                    .num("burst", burst)
                    .num("bytes", bytes)
                    .num("throttled_ns", throttled_ns)
                    .close('}');
        };
        each_shaper(r, shaper);
        j.close(']').key("queues").open('[');
        for (const QueueReport& q : r.queues) {
            j.open('{')
                .str("port", q.port)
                .str("name", q.name)
                .str("priority", q.strict ? "strict" : "weighted")
                .num("weight", q.weight)
                .num("max_rate", q.max_rate)
                .num("limit", q.limit)
                .key("classes")
                .open('[');
            for (const std::string& c : q.classes) j.str(c);
            j.close(']');
            if (q.ecn)
                j.key("ecn")
                    .open('{')
                    .num("min", q.ecn_min)
                    .num("max", q.ecn_max)
                    .dbl("max_probability", q.ecn_max_probability)
                    .close('}');
            j.num("depth_bytes", q.depth_bytes)
                .num("depth_packets", q.depth_packets)
                .num("depth_max_bytes", q.peak_bytes);
            json_totals<QueueCounter>(j, q.t).close('}');
        }
        j.close(']');
    } else if (what == CtlCommand::classes) {
        j.key("classes").open('[');
        for (const ClassReport& c : r.classes) {
            j.open('{').str("name", c.name).key("dscp");
            if (c.set_dscp < 0)
                j.str("preserve");
            else
                j.num(static_cast<uint64_t>(c.set_dscp));
            json_totals<ClassCounter>(j, c.t).close('}');
        }
        j.close(']');
    } else if (what == CtlCommand::neighbors) {
        j.key("neighbors").open('[');
        for (const NeighborReport& nb : r.neighbors)
            j.open('{')
                .str("address", nb.addr)
                .str("port", nb.port)
                .str("mac", nb.mac)
                .boolean("resolved", !nb.mac.empty())
                .boolean("static", nb.is_static)
                .str("state", nb.state)
                .close('}');
        j.close(']');
    } else if (what == CtlCommand::flows) {
        j.num("tracked", r.flows_tracked).num("slots_per_worker", r.flow_slots);
        j.key("heaviest").open('[');
        for (const FlowReport* f : top(r.flows, n, false)) json_flow(j, *f);
        j.close(']').key("most_congested").open('[');
        for (const FlowReport* f : top(r.flows, n, true)) json_flow(j, *f);
        j.close(']');
    }
    j.close('}');
    return j.take();
}

std::string render_text(const Report& r, CtlCommand what, size_t n) {
    std::string o;
    if (what == CtlCommand::status) {
        o += fmt("dscpgw %s (DPDK %s), up %.0f s\n", r.version.c_str(), r.dpdk_version.c_str(),
                 r.now - r.start_time);
        o += fmt("config      %s, generation %" PRIu64 "\n", r.config_path.c_str(), r.generation);
        o += fmt("last reload %s: %s (%" PRIu64 " ok, %" PRIu64 " failed since start)\n",
                 iso_time(r.last_reload_time).c_str(), reload_word(r.last_reload_ok), r.reloads_ok,
                 r.reloads_failed);
        if (!r.last_reload_error.empty()) {
            std::string e = "  " + r.last_reload_error;
            for (size_t p = e.find('\n'); p != std::string::npos; p = e.find('\n', p + 3))
                e.replace(p, 1, "\n  ");
            o += e + "\n";
        }
        o += fmt("workers     %zu, mbufs in use %" PRIu64 " of %" PRIu64 "\n", r.workers.size(),
                 r.mbufs_in_use, r.mbufs_total);
        for (const PortReport& p : r.ports)
            o += fmt("port %-12s %-6s mtu %-5u %-40s %s\n", p.name.c_str(), p.role.c_str(), p.mtu,
                     p.device.c_str(),
                     p.link_up < 0   ? "link unknown"
                     : p.link_up > 0 ? fmt("link up %u Mbps", p.speed_mbps).c_str()
                                     : "link down");
    } else if (what == CtlCommand::stats) {
        o += fmt("%-12s", "PORT") + columns<PortCounter>() + columns<DeviceCounter>() + "\n";
        for (const PortReport& p : r.ports)
            o += fmt("%-12s", p.name.c_str()) + cells<PortCounter>(p.t) +
                 cells<DeviceCounter>(p.dev) + "\n";
        o += fmt("\n%-20s", "CLASS") + columns<ClassCounter>() + "\n";
        for (const ClassReport& c : r.classes)
            o += fmt("%-20s", c.name.c_str()) + cells<ClassCounter>(c.t) + "\n";
        o += fmt("%-20s", "(no class)") + cells<ClassCounter>(r.unclassified) + "\n";
        o += fmt("\n%-20s", "TUNNEL") + columns<TunnelCounter>() + "\n";
        for (const TunnelReport& t : r.tunnels)
            o += fmt("%-20s", t.name.c_str()) + cells<TunnelCounter>(t.t) + "\n";
        if (!r.policers.empty()) {
            o += fmt("\n%-20s", "POLICER") + columns<PolicerCounter>() + "\n";
            for (const PolicerReport& p : r.policers)
                o += fmt("%-20s", p.name.c_str()) + cells<PolicerCounter>(p.t) + "\n";
        }
        o += "\nDROPS\n";
        uint64_t total = 0;
        for (size_t d = 1; d < kDropReasonCount; ++d) {
            total += r.drops[d];
            if (r.drops[d] != 0)
                o += fmt("  %-22s %12" PRIu64 "\n", std::string(kDropReasonInfo[d].name).c_str(),
                         r.drops[d]);
        }
        o += fmt("  %-22s %12" PRIu64 "\n", "total", total);
        o.append("\n")
            .append(columns<DataplaneCounter>().substr(1))
            .append("\n")
            .append(cells<DataplaneCounter>(r.dataplane).substr(1))
            .append("\n");
        o += fmt("\n%-8s %8s", "WORKER", "LCORE") + columns<WorkerCounter>() +
             fmt(" %12s %8s  %s\n", "CYCLES/PKT", "BUSY%", "RX_QUEUES");
        for (size_t w = 0; w < r.workers.size(); ++w) {
            const WorkerReport& x = r.workers[w];
            const uint64_t pkts = x.t[WorkerCounter::rx_packets],
                           busy = x.t[WorkerCounter::busy_cycles],
                           all = busy + x.t[WorkerCounter::idle_cycles];
            std::string rx;
            for (const auto& [port, queue] : x.rx) {
                rx += rx.empty() ? "" : " ";
                rx += port;
                rx += '/';
                rx += std::to_string(queue);
            }
            o += fmt("%-8zu %8u", w, x.lcore) + cells<WorkerCounter>(x.t) +
                 fmt(" %12.1f %7.1f%%  %s\n",
                     pkts ? static_cast<double>(busy) / static_cast<double>(pkts) : 0.0,
                     all ? 100.0 * static_cast<double>(busy) / static_cast<double>(all) : 0.0,
                     rx.empty() ? "-" : rx.c_str());
        }
    } else if (what == CtlCommand::tunnels) {
        o += fmt("%-16s %-6s %8s %-24s %-24s %-10s %-10s %-24s %8s %8s %s\n", "TUNNEL", "TYPE",
                 "VNI", "LOCAL", "REMOTE", "OUTER", "INNER", "NEXT HOP", "PATH_MTU", "CARRIES",
                 "PMTU_LEARNED");
        for (const TunnelReport& t : r.tunnels)
            o += fmt(
                "%-16s %-6s %8u %-24s %-24s %-10s %-10s %-24s %8u %8u %s\n", t.name.c_str(),
                t.type.c_str(), t.vni, t.local.c_str(), t.remote.c_str(), t.outer_port.c_str(),
                t.inner_port.c_str(),
                t.next_hop_resolved < 0
                    ? "static MAC"
                    : (t.next_hop + (t.next_hop_resolved ? " resolved" : " unresolved")).c_str(),
                t.path_mtu, t.carries,
                t.path_mtu_age < 0 ? "-"
                                   : fmt("%.0fs ago (configured %u, back at %.0fs)", t.path_mtu_age,
                                         t.mtu, static_cast<double>(kPathMtuAgeSeconds))
                                         .c_str());
    } else if (what == CtlCommand::policers) {
        if (r.policers.empty()) return "no policers configured\n";
        o += fmt("%-20s %-6s %14s %14s %10s %10s %-6s %-6s %-6s %s\n", "POLICER", "MODE", "CIR",
                 "PIR", "CBS", "PBS/EBS", "AWARE", "YELLOW", "RED", "CLASSES");
        for (const PolicerReport& p : r.policers) {
            std::string cls;
            for (const std::string& c : p.classes) cls += (cls.empty() ? "" : ",") + c;
            o += fmt("%-20s %-6s %14" PRIu64 " %14" PRIu64 " %10" PRIu64 " %10" PRIu64
                     " %-6s %-6s %-6s %s\n",
                     p.name.c_str(), p.mode.c_str(), p.cir, p.pir, p.cbs, p.pbs,
                     p.colour_aware ? "yes" : "no", colour_action(p.yellow, "keep").c_str(),
                     colour_action(p.red, "drop").c_str(), cls.empty() ? "-" : cls.c_str());
        }
        o += fmt("\n%-20s", "POLICER") + columns<PolicerCounter>() + "\n";
        for (const PolicerReport& p : r.policers)
            o += fmt("%-20s", p.name.c_str()) + cells<PolicerCounter>(p.t) + "\n";
    } else if (what == CtlCommand::queues) {
        if (r.queues.empty()) return "no shaped ports\n";
        o += fmt("%-12s %-14s %12s %10s %-22s %-22s %12s %12s %s\n", "SHAPER", "NAME", "RATE",
                 "BURST", "", "", "BYTES", "THROTTLED_S", "");
        const auto shaper = [&](const char* kind, const std::string& name, uint64_t rate,
                                uint64_t burst, uint64_t bytes, uint64_t throttled_ns) {
            if (rate != 0)
                o += fmt("%-12s %-14s %12" PRIu64 " %10" PRIu64 " %-22s %-22s %12" PRIu64
                         " %12.6f\n",
                         kind, name.c_str(), rate, burst, "", "", bytes,
                         static_cast<double>(throttled_ns) / 1e9);
        };
        each_shaper(r, shaper);
        o += fmt("\n%-12s %-14s %-10s %10s %10s %-22s %s\n", "PORT", "QUEUE", "PRIORITY", "LIMIT",
                 "DEPTH", "ECN", "CLASSES");
        for (const QueueReport& q : r.queues) {
            std::string cls;
            for (const std::string& c : q.classes) cls += (cls.empty() ? "" : ",") + c;
            const std::string prio = q.strict
                                         ? (q.max_rate != 0 ? fmt("strict<=%" PRIu64, q.max_rate)
                                                            : std::string("strict"))
                                         : fmt("w%u", q.weight);
            const std::string ecn = q.ecn ? fmt("%" PRIu64 "..%" PRIu64 " p%.2f", q.ecn_min,
                                                q.ecn_max, q.ecn_max_probability)
                                          : std::string("-");
            o +=
                fmt("%-12s %-14s %-10s %10" PRIu64 " %10" PRIu64 " %-22s %s\n", q.port.c_str(),
                    q.name.c_str(), prio.c_str(), q.limit, q.depth_bytes, ecn.c_str(), cls.c_str());
        }
        o += fmt("\n%-27s", "PORT/QUEUE") + columns<QueueCounter>() + "\n";
        for (const QueueReport& q : r.queues)
            o += fmt("%-27s", (q.port + "/" + q.name).c_str()) + cells<QueueCounter>(q.t) + "\n";
    } else if (what == CtlCommand::classes) {
        o += fmt("%-20s %-9s", "CLASS", "DSCP") + columns<ClassCounter>() + "\n";
        for (const ClassReport& c : r.classes)
            o += fmt("%-20s %-9s", c.name.c_str(),
                     c.set_dscp < 0 ? "preserve" : std::to_string(c.set_dscp).c_str()) +
                 cells<ClassCounter>(c.t) + "\n";
    } else if (what == CtlCommand::neighbors) {
        o += fmt("%-40s %-12s %-18s %s\n", "ADDRESS", "PORT", "MAC", "STATE");
        for (const NeighborReport& nb : r.neighbors)
            o += fmt("%-40s %-12s %-18s %s\n", nb.addr.c_str(), nb.port.c_str(),
                     nb.mac.empty() ? "-" : nb.mac.c_str(), nb.state.c_str());
    } else if (what == CtlCommand::flows) {
        if (r.flow_slots == 0) return "flow tracking is off ([metrics] flows = 0)\n";
        o += fmt("%zu RoCE conversations tracked (%u slots per worker)\n", r.flows_tracked,
                 r.flow_slots);
        for (const bool by_cnp : {false, true}) {
            o +=
                by_cnp ? "\nMOST CONGESTED (CNPs per second)\n" : "\nHEAVIEST (bytes per second)\n";
            o += fmt("%-28s %-28s %8s %-12s %-5s %12s %12s %10s %10s %7s\n", "SRC", "DST",
                     "DEST_QP", "TUNNEL", "DIR", "PACKETS", "BYTES/S", "CNPS", "CNPS/S", "IDLE_S");
            for (const FlowReport* f : top(r.flows, n, by_cnp))
                o += fmt(
                    "%-28s %-28s %8u %-12s %-5s %12" PRIu64 " %12.0f %10" PRIu64 " %10.1f %7.1f\n",
                    f->src.c_str(), f->dst.c_str(), f->dqp, f->tunnel.c_str(),
                    f->decap ? "out" : "in", f->pkts, f->bps, f->cnps, f->cnps_per_s, f->idle_s);
        }
    }
    return o;
}

}  // namespace dscpgw
