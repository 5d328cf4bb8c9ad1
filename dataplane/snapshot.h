// The compiled, immutable form of a configuration that workers read. Built by the control side
// (config/compile.cpp), never modified once published; the dataplane only reads it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

struct rte_lpm;
struct rte_lpm6;
struct rte_hash;

namespace dscpgw {

class NeighborTable;
struct PolicerState;  // dataplane/policer.h
class PortSched;      // dataplane/sched.h

// Whether the first `len` bits of `a` equal those of `net` (which has no bits set beyond them
// unless `masked_net` is false, as for an interface address like 10.10.0.1/24).
inline bool prefix_match(const uint8_t* net, unsigned len, const uint8_t* a,
                         bool masked_net = true) {
    const unsigned full = len / 8, rest = len % 8;
    for (unsigned i = 0; i < full; ++i)
        if (a[i] != net[i]) return false;
    if (rest == 0) return true;
    const auto mask = static_cast<uint8_t>(0xff00 >> rest);
    return (a[full] & mask) == (masked_net ? net[full] : (net[full] & mask));
}

inline constexpr size_t kMaxPorts = 16;
inline constexpr size_t kMaxClasses = 64;
inline constexpr size_t kMaxTunnels = 256;
inline constexpr size_t kMaxPolicers = 64;
inline constexpr size_t kMaxAdaptiveRules = 8;  // Per class.
inline constexpr size_t kMaxQueues = 64;        // All ports' [[queues]] together.
inline constexpr size_t kMaxQueuesPerPort = 8;
inline constexpr size_t kMaxOuterHdr = 14 + 40 + 8 + 8;  // Ethernet + IPv6 + UDP + VXLAN/Geneve.

enum class PortRole : uint8_t { inner, outer };
enum class TunnelType : uint8_t { vxlan, geneve };

// An IPv4 or IPv6 prefix; IPv4 occupies the first four bytes.
struct Prefix {
    uint8_t family = 0;  // 4 or 6.
    uint8_t len = 0;
    std::array<uint8_t, 16> addr{};

    bool contains(uint8_t fam, const uint8_t* a) const {
        return fam == family && prefix_match(addr.data(), len, a);
    }
};

// A class's `adaptive` rule: packets of at least `min_bytes` (IP length) in a flow measured at
// `min_pps` packets and `min_bps` bits per second or more get `dscp` (dataplane/qos.h).
struct AdaptiveRule {
    uint32_t min_bytes = 0;
    uint64_t min_pps = 0, min_bps = 0;
    uint8_t dscp = 0;
};

// A `[[policers]]` entry: an RFC 2698 (trtcm) or RFC 2697 (srtcm) meter shared by the classes
// naming it. Rates resolved to bits per second ("%" of the port's rate), sizes to bytes; with
// srtcm `pbs` is the excess burst size (EBS) and `pir` is unused.
enum class MeterMode : uint8_t { trtcm, srtcm };
enum Colour : uint8_t { kGreen = 0, kYellow = 1, kRed = 2 };  // rte_color's values.
inline constexpr int16_t kColourKeep = -1;                    // yellow = "keep": the class's DSCP.
inline constexpr int16_t kColourDrop = -2;                    // red = "drop".
struct PolicerConf {
    std::string name;
    MeterMode mode = MeterMode::trtcm;
    uint64_t cir = 0, pir = 0;  // Bits per second.
    uint64_t cbs = 0, pbs = 0;  // Bytes.
    bool colour_aware = false;
    int16_t yellow = kColourKeep;  // Or a DSCP.
    int16_t red = kColourDrop;     // Or a DSCP.
};

// A `[[queues]]` entry of a port's egress scheduler (dataplane/sched.h). Sizes in bytes of
// Ethernet frames as sent; rates in bits per second ("%" of the port's rate resolved).
struct QueueConf {
    std::string name;
    uint16_t port = 0;
    std::vector<std::string> classes;  // Class names; "*" in `any`.
    bool any = false;                  // Takes unclassified traffic and every class not named.
    bool strict = false;
    uint64_t max_rate = 0;  // Strict queues' cap; 0: none.
    uint64_t limit = 1000000;
    uint32_t weight = 1;  // Weighted queues.
    bool ecn = false;
    uint64_t ecn_min = 0, ecn_max = 0;
    double ecn_max_probability = 1.0;
    bool implicit = false;  // The one queue of a port with a rate and no [[queues]].
};

// How a snapshot maps its packets onto a port's scheduler (indices are the snapshot's; the
// scheduler itself knows queues and nodes only by position).
struct SchedPlan {
    bool on = false;
    bool classify_decap = false;  // More than one queue: decapsulated packets are classified.
    uint16_t first_queue = 0;     // Snapshot::queues index of the port's first queue.
    uint16_t nqueues = 0;
    std::array<uint8_t, kMaxClasses + 1> class_queue{};  // [class + 1] -> queue (0: none).
    std::vector<uint16_t> tunnel_node;                   // Per tunnel: node (0: the port's own).
    std::vector<int16_t> node_tunnel;                    // Per node: tunnel (-1 for node 0).
};

struct ClassRule {
    std::string name;
    // Match keys; a key whose has_ flag is false matches anything.
    bool has_udp_dst_port = false, has_bth_opcode = false, has_ip_proto = false, has_dscp = false;
    uint16_t udp_dst_port = 0;
    uint8_t bth_opcode = 0;
    uint8_t ip_proto = 0;
    uint64_t dscp_mask = 0;        // Bit n set: DSCP n matches.
    std::vector<Prefix> src, dst;  // Empty: any.
    int16_t set_dscp = -1;         // -1: preserve.
    int8_t pcp = -1;       // 802.1p priority dscpgw-hostmark sets on tagged frames; -1: keep.
    bool has_pcp = false;  // match.pcp: the frame's (outermost) VLAN tag's priority.
    uint8_t match_pcp = 0;
    int16_t policer = -1;  // Index into Config/Snapshot::policers.
    std::vector<AdaptiveRule> adaptive;
};

// ClassRule compiled for the hot path: plain data, the port/opcode/protocol keys folded into one
// masked compare against a packet's class_key() (pipeline.h), so that a rule costs a few
// instructions. Prefixes stay in ClassRule and are checked only when present.
struct ClassMatch {
    // Fields of a class key.
    static constexpr uint64_t kUdpPort = 0xffff, kIsUdp = uint64_t{1} << 16;
    static constexpr unsigned kOpcodeShift = 17;
    static constexpr uint64_t kHasBth = uint64_t{1} << 25;
    static constexpr unsigned kProtoShift = 26;
    static constexpr uint64_t kHasTag = uint64_t{1} << 34;
    static constexpr unsigned kPcpShift = 35;
    // `qos` bits: the class has a policer / adaptive rules (the general path's QoS stage).
    static constexpr uint8_t kQosPolicer = 1, kQosAdaptive = 2;

    uint64_t dscp_mask = ~uint64_t{0};  // Bit n: DSCP n matches.
    uint64_t key = 0, mask = 0;         // Matches when (class_key ^ key) & mask == 0.
    bool prefixes = false;
    int8_t set_dscp = -1;
    uint8_t qos = 0;
    uint8_t policer = 0;  // With kQosPolicer.
};
static_assert(sizeof(ClassMatch) == 32);

struct PortConf {
    std::string name;
    std::string device;
    PortRole role = PortRole::inner;
    uint32_t mtu = 1500;
    std::array<uint8_t, 6> mac{};
    bool has_mac = false;
    bool has_ipv4 = false, has_ipv6 = false;
    std::array<uint8_t, 4> ipv4{};
    std::array<uint8_t, 16> ipv6{};
    uint8_t ipv4_len = 32, ipv6_len = 128;  // LAN prefix of an inner port's address.
    // Inner ports: whether unclassified packets' DSCP is carried into the outer header
    // (`trust_dscp`), or `default_dscp` is used there instead.
    bool trust_dscp = false;
    uint8_t default_dscp = 0;
    uint64_t rate = 0;   // `rate`: the line rate in bits per second (0: not given); the shaper.
    uint64_t burst = 0;  // `burst`: the shaper's depth in bytes (with rate).
    // Inner ports: `vlan` (0: untagged LAN), frames in must carry it and decapsulated frames leave
    // with it, their PCP from `dscp_to_pcp` (0 without); `pcp_to_dscp`: the DSCP of tagged frames
    // no class matched, from their PCP.
    uint16_t vlan = 0;
    // The shortcut's MTU: `mtu`, or 0 on a tagged port so that its one size compare also sends
    // every frame of a tagged LAN to the general path (set by compile_snapshot).
    uint32_t plain_mtu = 0;
    bool has_dscp_to_pcp = false, has_pcp_to_dscp = false;
    std::array<uint8_t, 64> dscp_to_pcp{};
    std::array<uint8_t, 8> pcp_to_dscp{};
    bool tx_udp_cksum_offload = false;  // Set by `run` from the device's capabilities.
    // `rx_workers`: RX queue q polled by worker rx_workers[q], as many queues as entries; empty:
    // one queue per worker where the device has them, placed by `run` (place_rx_queues()).
    std::vector<uint16_t> rx_workers;
    // Outer ports: the UDP ports tunnels listen on here, and the encapsulation each one carries.
    struct TunnelUdpPort {
        uint16_t udp_port;
        TunnelType type;
    };
    std::vector<TunnelUdpPort> tunnel_udp_ports;
    // Source addresses of the ICMP errors this port's senders get: its own address, else the first
    // outer port's VTEP address of the family (filled in by build_snapshot).
    bool has_icmp_src4 = false, has_icmp_src6 = false;
    std::array<uint8_t, 4> icmp_src4{};
    std::array<uint8_t, 16> icmp_src6{};
};

// What the underlay taught about a tunnel's path MTU: lowered by workers from ICMP errors quoting
// the gateway's own tunnel packets, raised back to the configured value by the control thread once
// nothing lowered it for kPathMtuAge (10 minutes, RFC 1191 section 6.3 / RFC 8201 section 4).
struct TunnelPath {
    std::atomic<uint32_t> mtu{0};          // IP bytes of outer packets the path carries now.
    std::atomic<uint64_t> lowered_tsc{0};  // When an ICMP error last lowered or confirmed it.
    std::atomic<uint64_t> lowered{0};      // Times an ICMP error lowered it (this snapshot's).
};
inline constexpr uint64_t kPathMtuAgeSeconds = 600;
inline constexpr uint32_t kMinPathMtu4 = 552, kMinPathMtu6 = 1280;

inline constexpr int16_t kDscpInherit = -1;
inline constexpr int16_t kDscpPreserve = -1;
inline constexpr int16_t kDscpCopyOuter = -2;
inline constexpr int16_t kDscpMapped = -3;  // A tunnel's outer_dscp given as a map.

inline constexpr std::array<uint8_t, 64> identity_dscp_map() {
    std::array<uint8_t, 64> m{};
    for (uint8_t d = 0; d < 64; ++d) m[d] = d;
    return m;
}

struct TunnelConf {
    std::string name;
    TunnelType type = TunnelType::vxlan;
    bool outer_v6 = false;
    uint32_t vni = 0;
    uint16_t udp_port = 0;
    uint16_t outer_port = 0;  // Index into Snapshot::ports.
    uint16_t inner_port = 0;
    uint8_t ttl = 64;
    bool ecn_rfc6040 = true;
    bool inner_vlan_keep = false;       // `inner_vlan = "keep"`: decapsulated 802.1Q tags pass.
    bool udp6_zero_csum_rx = false;     // `udp6_zero_checksum_rx`: RFC 6935/6936 zero checksums.
    bool udp6_zero_csum_tx = false;     // `udp6_zero_checksum_tx`: send them (IPv6 outer only).
    int16_t outer_dscp = kDscpInherit;  // Or 0..63; kDscpMapped with a map.
    // The outer DSCP for each DSCP the packet would hand the outer header (the inner DSCP after
    // marking, or the port's default_dscp): identity for "inherit", one value for a fixed
    // outer_dscp, the map's entries over its default otherwise. Bit d of outer_map_keys: d is one
    // of the map's own keys (counted as a map hit).
    std::array<uint8_t, 64> outer_map = identity_dscp_map();
    uint64_t outer_map_keys = 0;
    int16_t decap_dscp = kDscpPreserve;  // Or kDscpCopyOuter or 0..63.
    uint32_t outer_mtu = 1500;   // Configured path MTU: the tunnel's `mtu`, else outer_port's.
    uint32_t inner_mtu = 1500;   // IP MTU of inner_port.
    TunnelPath* path = nullptr;  // The live path MTU (Snapshot::paths); set by compile_snapshot.
    std::array<uint8_t, 16> remote{};
    std::array<uint8_t, 16> local{};
    std::vector<Prefix> routes;
    // `next_hop = "IP"`: the NeighborTable entry whose MAC goes into the outer Ethernet header;
    // -1 with `next_hop_mac` (already in the template).
    int16_t neighbor = -1;
    bool has_next_hop_ip = false;
    // `inner_mac`: routed mode rewrites the inner Ethernet header on encap to inner_src_mac (the
    // inner port's MAC) -> inner_mac (the far end's router or VXLAN device).
    bool has_inner_mac = false;
    std::array<uint8_t, 6> inner_mac{}, inner_src_mac{};
    bool tx_udp_offload = false;   // The outer port's device computes UDP checksums on transmit.
    uint64_t rate = 0, burst = 0;  // `rate`/`burst`: the tunnel's shaper (0: none), bits/s, bytes.
    std::array<uint8_t, 16> next_hop{};

    // Outer header template: Ethernet + IPv4/IPv6 + UDP + VXLAN/Geneve, lengths, TOS, checksum and
    // source port left zero for the worker to patch.
    std::array<uint8_t, kMaxOuterHdr> hdr{};
    uint8_t hdr_len = 0;
    // IPv4: one's-complement sum of the template's IP header words read big-endian (lengths, TOS,
    // checksum zero), unfolded. IPv6: the sum of the UDP pseudo-header's addresses and next header
    // in host word order, as DPDK's __rte_raw_cksum computes it.
    uint32_t hdr_csum_base = 0;
};

// Key of the decapsulation table: which tunnel a received packet belongs to. Four 64-bit words,
// made only by make_decap_key(): the remote address (IPv4 in the first four bytes, the rest zero),
// then VNI | UDP port << 32 | family << 48 | receiving port << 56, then zero. 32 bytes because
// rte_hash compares 16/32/48/64-byte keys with vector instructions and others with memcmp(). Kept
// and compared as words, in registers on the hot path: a key stored field by field and read back
// whole stalls on failed store-to-load forwarding.
struct DecapKey {
    uint64_t w[4];

    uint8_t family() const { return static_cast<uint8_t>(w[2] >> 48); }
    uint16_t udp_port() const { return static_cast<uint16_t>(w[2] >> 32); }
    uint8_t rx_port() const { return static_cast<uint8_t>(w[2] >> 56); }
    bool remote_is(const std::array<uint8_t, 16>& a) const {
        return std::memcmp(w, a.data(), 16) == 0;
    }
    bool operator==(const DecapKey& o) const {
        return ((w[0] ^ o.w[0]) | (w[1] ^ o.w[1]) | (w[2] ^ o.w[2]) | (w[3] ^ o.w[3])) == 0;
    }
};
static_assert(sizeof(DecapKey) == 32);

inline DecapKey make_decap_key(uint8_t family, const uint8_t* remote, uint32_t vni,
                               uint16_t udp_port, uint8_t rx_port) {
    DecapKey k{{0, 0,
                uint64_t{vni} | uint64_t{udp_port} << 32 | uint64_t{family} << 48 |
                    uint64_t{rx_port} << 56,
                0}};
    if (family == 4) {
        uint32_t a;
        std::memcpy(&a, remote, sizeof a);
        k.w[0] = a;  // Host order of the bytes as they are: only equality matters.
    } else {
        std::memcpy(&k.w[0], remote, 8);
        std::memcpy(&k.w[1], remote + 8, 8);
    }
    return k;
}

// Outer IP + UDP + tunnel header + inner Ethernet: what a tunnel adds to an inner IP packet.
inline uint32_t tunnel_overhead(const TunnelConf& t) {
    return (t.outer_v6 ? 40u : 20u) + 8u + 8u + 14u;
}
// The largest inner IP packet tunnel `t` carries now, and as configured.
inline uint32_t carried_inner_mtu(const TunnelConf& t, uint32_t path_mtu) {
    return path_mtu > tunnel_overhead(t) ? path_mtu - tunnel_overhead(t) : 0;
}

struct Snapshot {
    uint64_t generation = 1;  // Set by the owner: +1 per configuration that went live.
    uint8_t bank = 0;  // Which of each worker's ConfigCounters banks this snapshot counts in.
    uint32_t icmp_rate = 100;  // ICMP errors per second per worker; 0: none.
    std::vector<PortConf> ports;
    std::vector<ClassRule> classes;
    std::vector<ClassMatch> class_match;  // Same order as `classes`.
    std::vector<PolicerConf> policers;
    // One per policer: the meters every worker shares (policer.h). Shared pointers, so that a
    // reload that keeps a policer as it was keeps its buckets (carry_meters()); the deleter is
    // bound where the type is complete.
    std::vector<std::shared_ptr<PolicerState>> meters;
    std::vector<TunnelConf> tunnels;
    std::unique_ptr<TunnelPath[]> paths;  // One per tunnel.
    // Egress: every port's queues, the port's first; per port the plan (how this snapshot's
    // classes and tunnels map onto its scheduler) and the scheduler, shared like the meters so
    // that a reload keeping a port's policy keeps its queued packets (carry_scheds()).
    std::vector<QueueConf> queues;
    std::vector<SchedPlan> sched_plans;
    std::vector<std::shared_ptr<PortSched>> scheds;
    uint32_t shaped_ports = 0;  // Bit p: port p has a scheduler (one load on the packet path).
    rte_lpm* lpm4 = nullptr;
    rte_lpm6* lpm6 = nullptr;
    rte_hash* decap = nullptr;
    NeighborTable* neighbors = nullptr;  // Not owned: it outlives snapshots.

    Snapshot() = default;
    Snapshot(const Snapshot&) = delete;
    Snapshot& operator=(const Snapshot&) = delete;
    ~Snapshot();
};

}  // namespace dscpgw
