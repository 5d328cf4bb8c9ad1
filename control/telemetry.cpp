#include "control/telemetry.h"

#include <rte_telemetry.h>

#include <cctype>
#include <string>

namespace dscpgw {

namespace {

std::string key(std::string_view k) {
    std::string o(k.substr(0, RTE_TEL_MAX_STRING_LEN - 1));
    for (char& ch : o)
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '/') ch = '_';
    return o;
}

// Builds one reply; a dict that cannot be allocated is left out rather than failing the reply.
class Tel {
  public:
    explicit Tel(rte_tel_data* d) : d_(d) {}
    static void u64(rte_tel_data* t, std::string_view k, uint64_t v) {
        if (t != nullptr) rte_tel_data_add_dict_u64(t, key(k).c_str(), v);
    }
    static void str(rte_tel_data* t, std::string_view k, const std::string& v) {
        if (t != nullptr)
            rte_tel_data_add_dict_string(t, key(k).c_str(),
                                         v.substr(0, RTE_TEL_MAX_STRING_LEN - 1).c_str());
    }
    template <typename Family>
    static void totals(rte_tel_data* t, const Totals<Family>& v, std::string_view prefix = "") {
        for (size_t e = 0; e < Family::count; ++e)
            u64(t, std::string(prefix) + std::string(Family::info[e].field), v[e]);
    }
    static rte_tel_data* sub() {
        rte_tel_data* x = rte_tel_data_alloc();
        if (x != nullptr) rte_tel_data_start_dict(x);
        return x;
    }
    // Adds `x` to `t` under `name` (it is freed with the reply).
    static void nest(rte_tel_data* t, std::string_view name, rte_tel_data* x) {
        if (x != nullptr && rte_tel_data_add_dict_container(t, key(name).c_str(), x, 0) != 0)
            rte_tel_data_free(x);
    }
    // One dict per entry of Family, named prefix + field, holding name(item) -> value.
    template <typename Family, typename Items, typename Name, typename Values>
    void per_entry(std::string_view prefix, const Items& items, Name&& name_of,
                   Values&& values_of) {
        for (size_t e = 0; e < Family::count; ++e) {
            rte_tel_data* x = sub();
            for (const auto& it : items) u64(x, name_of(it), values_of(it)[e]);
            nest(d_, std::string(prefix) + std::string(Family::info[e].field), x);
        }
    }

  private:
    rte_tel_data* d_;
};

}  // namespace

void render_telemetry(const Report& r, std::string_view cmd, rte_tel_data* d) {
    rte_tel_data_start_dict(d);
    Tel tel(d);
    if (cmd == "/dscpgw/stats") {
        Tel::u64(d, "generation", r.generation);
        Tel::totals<DataplaneCounter>(d, r.dataplane);
        Tel::u64(d, "mbufs_in_use", r.mbufs_in_use);
        Tel::totals<ClassCounter>(d, r.unclassified, "unclassified_");
        rte_tel_data* drops = Tel::sub();
        for (size_t i = 1; i < kDropReasonCount; ++i)
            Tel::u64(drops, kDropReasonInfo[i].name, r.drops[i]);
        Tel::nest(d, "drops", drops);
        rte_tel_data* local = Tel::sub();
        for (size_t i = 1; i < kLocalReplyCount; ++i)
            Tel::u64(local, kLocalReplyInfo[i].name, r.local_replies[i]);
        Tel::nest(d, "local", local);
        tel.per_entry<ClassCounter>(
            "class_", r.classes, [](const auto& c) { return c.name; },
            [](const auto& c) { return c.t; });
        tel.per_entry<PortCounter>(
            "port_", r.ports, [](const auto& p) { return p.name; },
            [](const auto& p) { return p.t; });
    } else if (cmd == "/dscpgw/tunnels") {
        for (const TunnelReport& t : r.tunnels) {
            rte_tel_data* x = Tel::sub();
            Tel::str(x, "type", t.type);
            Tel::u64(x, "vni", t.vni);
            Tel::str(x, "remote", t.remote);
            Tel::totals<TunnelCounter>(x, t.t);
            Tel::nest(d, t.name, x);
        }
    } else if (cmd == "/dscpgw/classes") {
        for (const ClassReport& k : r.classes) {
            rte_tel_data* x = Tel::sub();
            if (x != nullptr) rte_tel_data_add_dict_int(x, "dscp", k.set_dscp);
            Tel::totals<ClassCounter>(x, k.t);
            Tel::nest(d, k.name, x);
        }
    } else if (cmd == "/dscpgw/policers") {
        for (const PolicerReport& p : r.policers) {
            rte_tel_data* x = Tel::sub();
            Tel::str(x, "mode", p.mode);
            Tel::u64(x, "cir", p.cir);
            Tel::u64(x, "pir", p.pir);
            Tel::totals<PolicerCounter>(x, p.t);
            Tel::nest(d, p.name, x);
        }
    } else if (cmd == "/dscpgw/queues") {
        for (const QueueReport& q : r.queues) {
            rte_tel_data* x = Tel::sub();
            Tel::str(x, "port", q.port);
            Tel::u64(x, "limit", q.limit);
            Tel::u64(x, "depth_bytes", q.depth_bytes);
            Tel::u64(x, "depth_max_bytes", q.peak_bytes);
            Tel::totals<QueueCounter>(x, q.t);
            Tel::nest(d, q.port + "_" + q.name, x);
        }
    } else {  // /dscpgw/config
        Tel::str(d, "path", r.config_path);
        Tel::u64(d, "generation", r.generation);
        Tel::str(d, "last_reload_result", r.last_reload_ok ? "success" : "failure");
        Tel::str(d, "last_reload_error",
                 r.last_reload_error.substr(0, r.last_reload_error.find('\n')));
        Tel::u64(d, "reloads_ok", r.reloads_ok);
        Tel::u64(d, "reloads_failed", r.reloads_failed);
        Tel::u64(d, "classes", r.classes.size());
        Tel::u64(d, "tunnels", r.tunnels.size());
        Tel::u64(d, "policers", r.policers.size());
        Tel::str(d, "version", r.version);
    }
}

}  // namespace dscpgw
