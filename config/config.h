// Configuration: TOML loading and validation (no EAL needed), and compilation into the snapshot the
// dataplane reads (needs EAL for the route and decap tables).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dataplane/snapshot.h"

namespace dscpgw {

// Every problem found in a config, one per line, each naming file:line:column and the key.
class ConfigError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

inline constexpr uint32_t kDefaultFlowEntries = 4096;
inline constexpr const char* kDefaultControlSocket = "/run/dscpgw/dscpgw.sock";

struct Config {
    std::string path;
    std::vector<std::string> eal_args;
    unsigned workers = 0;            // [gateway] workers; 0: every lcore but the main one.
    uint32_t icmp_rate = 100;        // [gateway] icmp_rate: ICMP errors per second per worker.
    std::string log_level = "info";  // [gateway] log_level: of every dscpgw.* log type.
    std::string metrics_listen;      // [metrics] listen: the Prometheus endpoint; empty: none.
    uint32_t flow_entries = kDefaultFlowEntries;  // [metrics] flows: RoCE flow slots per worker.
    std::string control_socket = kDefaultControlSocket;  // [control] socket.
    std::vector<PortConf> ports;
    std::vector<ClassRule> classes;
    std::vector<PolicerConf> policers;
    std::vector<TunnelConf> tunnels;                    // Templates not yet built.
    std::vector<QueueConf> queues;                      // [[queues]] as written (by port).
    std::vector<std::array<uint8_t, 6>> next_hop_macs;  // Per tunnel (zero with `next_hop`).
    struct StaticNeighbor {
        uint16_t port = 0;
        uint8_t family = 0;
        std::array<uint8_t, 16> addr{};
        std::array<uint8_t, 6> mac{};
    };
    std::vector<StaticNeighbor> neighbors;  // [[neighbors]]
    std::vector<std::string> warnings;      // file:line:column: warning: ... (the config loads).

    int first_port(PortRole role) const;
    int port_index(const std::string& name) const;
};

// Bounds on what a config may hold.
inline constexpr size_t kMaxConfigBytes = 16 << 20;  // A regular file of at most 16 MiB.
inline constexpr size_t kMaxNameLen = 63;            // Port, class and tunnel names.
inline constexpr size_t kMaxRoutes = 262144;         // Tunnel routes in all (both families).

// Parses and validates; throws ConfigError listing every problem.
Config load_config(const std::string& path);
Config parse_config(std::string_view text, const std::string& source_name);

// Only the [[classes]] of a config file (dscpgw-hostmark shares them with the gateway): the other
// sections are not validated. Throws ConfigError like load_config().
// `warnings`, when given, gets what `check` would warn of (a class an earlier one shadows).
std::vector<ClassRule> load_classes(const std::string& path,
                                    std::vector<std::string>* warnings = nullptr);
std::vector<ClassRule> parse_classes(std::string_view text, const std::string& source_name,
                                     std::vector<std::string>* warnings = nullptr);

// What differs between the running config and `next` that a reload cannot apply because the
// ports, queues, lcores or tables would have to be set up again (one line each; empty: the
// reload can go live).
std::vector<std::string> restart_reasons(const Config& running, const Config& next);

// A class's port/opcode/protocol/DSCP keys as one masked compare (see ClassMatch).
ClassMatch compile_class(const ClassRule& c);

// Neighbor entries a snapshot needs (its tunnels' next hops, [[neighbors]] with static MACs),
// staged while it is compiled and added to the live table only once it is accepted, so that a
// refused reload leaves the table as it was.
struct StagedNeighbors {
    struct Entry {
        uint8_t family = 0;
        uint16_t port = 0;
        std::array<uint8_t, 16> addr{};
        bool is_static = false;
        std::array<uint8_t, 6> mac{};  // With is_static.
        int tunnel = -1;               // The tunnel whose next hop this is, if any.
    };
    std::vector<Entry> entries;

    // Control thread, before `s` is published: creates the entries (or finds them), sets the
    // static MACs and points `s`'s tunnels at their next hops. Cannot fail: compiling checked
    // that the table has room.
    void apply(NeighborTable& table, Snapshot& s) const;
};

struct SnapshotBuild {
    std::unique_ptr<Snapshot> snap;
    StagedNeighbors neighbors;
};

// Compiles the immutable snapshot: outer-header templates, LPM tables and the decap hash.
// `port_macs` gives each port's own MAC where the config sets none (the device's, or a made-up one
// in replay). Requires rte_eal_init. Throws std::runtime_error on resource failure (a full neighbor
// table included). Touches nothing live: `neighbors` (which must outlive the snapshot, as workers
// read it) is only read; what it must gain is staged. The snapshot's generation is 1; a reload
// numbers its own.
SnapshotBuild compile_snapshot(const Config& cfg,
                               const std::vector<std::array<uint8_t, 6>>& port_macs,
                               const NeighborTable& neighbors);

// compile_snapshot() and its staged neighbors applied at once: for a start, where nothing runs yet.
std::unique_ptr<Snapshot> build_snapshot(const Config& cfg,
                                         const std::vector<std::array<uint8_t, 6>>& port_macs,
                                         NeighborTable& neighbors);

// Addresses and prefixes as the config writes them.
bool parse_mac(std::string_view s, std::array<uint8_t, 6>& mac);
std::optional<Prefix> parse_prefix(std::string_view s, std::string& why);
std::string format_mac(const std::array<uint8_t, 6>& mac);
std::string format_prefix(const Prefix& p);
std::string format_ip(uint8_t family, const uint8_t* addr);  // 4 or 16 bytes.

}  // namespace dscpgw
