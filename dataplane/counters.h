// The counter families: each is one list, and everything else about a counter derives from its
// entry. An entry X(field, metric, label, unit, column, help) gives
//   field   the index into the family's per-worker array and its key in `ctl --json` and telemetry;
//   metric  the Prometheus family, without the `dscpgw_` prefix; entries sharing one are samples of
//           one family, told apart by
//   label   "name=value" added to the entry's samples (empty: none);
//   unit    what one count is (packets, bytes, cycles, ...);
//   column  its column in the `ctl` text table (empty: JSON, telemetry and Prometheus only);
//   help    one line: the Prometheus HELP and the docs' table (docs/metrics.md is generated).
// Adding a counter is one entry here plus its increment; storage, reset, aggregation across
// workers and reloads, the Prometheus families, the ctl columns and keys, telemetry and the docs
// follow (control/report.h, control/metrics.cpp, control/render.cpp, control/telemetry.cpp).
// Names are a contract: add, never rename (issue 16 renamed a few once, before 1.0; see
// docs/metrics.md, Renamed).
//
// A new family (per queue, per policer, ...) is a list and a DSCPGW_FAMILY here, a CounterBlock
// in WorkerStats (dataplane/stats.h), Totals in its report row (control/report.h), and one call
// each to the generic renderers: Families::list<F>() (Prometheus), json_totals<F>() and
// columns<F>()/cells<F>() (ctl), Tel::totals<F>() or per_entry<F>() (telemetry).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dscpgw {

// What one worker writes and another must not: aligned and padded to two cache lines, the pair an
// x86 core's spatial prefetcher fetches together, so that one worker's line is never the
// neighbour the other's prefetch takes (two workers writing neighbouring lines of net_null's TX
// queue array cost the second 10-15 % at 1 KB; docs/performance.md, Multi-core scaling).
inline constexpr size_t kWorkerBlockAlign = 128;

// Per tunnel, in the snapshot's counter bank (kept per tunnel name across reloads).
#define DSCPGW_TUNNEL_COUNTERS(X)                                                            \
    X(encap_packets, "tunnel_packets_total", "direction=encap", "packets", "ENCAP_PKTS",     \
      "Packets through the tunnel, by direction: encap = encapsulated into it, decap = "     \
      "decapsulated from it.")                                                               \
    X(encap_bytes, "tunnel_bytes_total", "direction=encap", "bytes", "",                     \
      "Bytes through the tunnel, by direction: encap = sent into it, outer headers "         \
      "included; decap = the inner frames out of it.")                                       \
    X(decap_packets, "tunnel_packets_total", "direction=decap", "packets", "DECAP_PKTS",     \
      "Packets decapsulated from the tunnel.")                                               \
    X(decap_bytes, "tunnel_bytes_total", "direction=decap", "bytes", "",                     \
      "Bytes of the inner frames out of the tunnel.")                                        \
    X(outer_dscp_remarked, "tunnel_outer_dscp_remarked_total", "", "packets", "BLEACHED",    \
      "Tunnel packets whose outer DSCP differs from the one the far end sets: a network in " \
      "between bleached or rewrote it, and RoCE lost its priority in transit.")              \
    X(ecn_ce_marked, "tunnel_ecn_ce_marked_total", "", "packets", "CE",                      \
      "Inner ECT packets marked CE on decapsulation because the outer header carried CE "    \
      "(RFC 6040): congestion in the underlay, passed on to the receiver.")                  \
    X(outer_dscp_mapped, "tunnel_outer_dscp_map_hits_total", "", "packets", "MAPPED",        \
      "Packets encapsulated whose outer DSCP came from an entry of the tunnel's outer_dscp " \
      "map (not its default).")                                                              \
    X(cnp_encap, "tunnel_cnp_packets_total", "direction=encap", "packets", "CNP_IN",         \
      "RoCEv2 congestion notification packets (BTH opcode 0x81) through the tunnel, by "     \
      "direction: encap = sent to the far side (congestion on this side), decap = received " \
      "from it (congestion there).")                                                         \
    X(cnp_decap, "tunnel_cnp_packets_total", "direction=decap", "packets", "CNP_OUT",        \
      "RoCEv2 CNPs received from the far side: its receivers slow our senders down.")        \
    X(path_mtu_lowered, "tunnel_path_mtu_lowered_total", "", "packets", "PMTU_LOWERED",      \
      "ICMP Fragmentation Needed / Packet Too Big from the underlay, quoting the gateway's " \
      "own tunnel packets, that lowered the tunnel's path MTU.")                             \
    X(shaper_bytes, "tunnel_shaper_bytes_total", "", "bytes", "",                            \
      "Bytes (Ethernet frames, outer headers included) the tunnel's shaper (its rate) let "  \
      "through.")                                                                            \
    X(shaper_throttled, "tunnel_shaper_throttled_seconds_total", "", "nanoseconds", "",      \
      "Time packets of the tunnel waited for its shaper's tokens (the tunnel at its rate).")

// Per class, in the snapshot's counter bank; index kNoClass counts the packets no class matched.
#define DSCPGW_CLASS_COUNTERS(X)                                                   \
    X(packets, "class_packets_total", "", "packets", "PACKETS",                    \
      "Packets classified into the class on the inner path, counted as received.") \
    X(bytes, "class_bytes_total", "", "bytes", "BYTES",                            \
      "Bytes of the packets classified into the class, as received.")              \
    X(adaptive_hits, "class_adaptive_hits_total", "", "packets", "ADAPTIVE",       \
      "Packets of the class whose DSCP came from one of its adaptive rules.")

// Per policer and colour, in the snapshot's counter bank (kept per policer name across reloads):
// what the meter saw, red packets dropped included. Indexed by Colour (packets) and 3 + Colour
// (bytes).
#define DSCPGW_POLICER_COUNTERS(X)                                                         \
    X(green_packets, "policer_packets_total", "colour=green", "packets", "GREEN",          \
      "Packets the policer metered, by colour (green: within cir and cbs; yellow: above, " \
      "within pir and pbs, or the srtcm excess burst; red: beyond).")                      \
    X(yellow_packets, "policer_packets_total", "colour=yellow", "packets", "YELLOW",       \
      "Packets the policer metered yellow.")                                               \
    X(red_packets, "policer_packets_total", "colour=red", "packets", "RED",                \
      "Packets the policer metered red (dropped where red = \"drop\").")                   \
    X(green_bytes, "policer_bytes_total", "colour=green", "bytes", "GREEN_BYTES",          \
      "IP bytes the policer metered, by colour (what cir and pir count).")                 \
    X(yellow_bytes, "policer_bytes_total", "colour=yellow", "bytes", "",                   \
      "IP bytes metered "                                                                  \
      "yellow.")                                                                           \
    X(red_bytes, "policer_bytes_total", "colour=red", "bytes", "", "IP bytes metered red.")

// Per egress queue ([[queues]], kept per port and queue name across reloads).
#define DSCPGW_QUEUE_COUNTERS(X)                                                                \
    X(packets, "queue_packets_total", "", "packets", "PACKETS", "Packets the queue sent.")      \
    X(bytes, "queue_bytes_total", "", "bytes", "BYTES",                                         \
      "Bytes (Ethernet frames as sent) the queue sent.")                                        \
    X(ce_marked, "queue_ecn_marked_total", "", "packets", "CE_MARKED",                          \
      "ECT packets the queue marked CE (outer and inner header) for its depth (ecn min..max).") \
    X(drop_not_ect, "queue_drops_total", "reason=ecn_not_ect", "packets", "DROP_NOT_ECT",       \
      "Packets the queue dropped, by cause: ecn_not_ect = a Not-ECT packet at or above ecn "    \
      "max; limit = the queue held `limit` bytes; buffers = the port's queues held every "      \
      "packet buffer set aside for them.")                                                      \
    X(drop_limit, "queue_drops_total", "reason=limit", "packets", "DROP_LIMIT",                 \
      "Packets dropped because the queue was at its limit.")                                    \
    X(drop_buffers, "queue_drops_total", "reason=buffers", "packets", "DROP_BUFFERS",           \
      "Packets dropped because the port's queues held all their buffers (small frames).")       \
    X(delay, "queue_delay_seconds_total", "", "nanoseconds", "",                                \
      "Sum of the time the queue's packets waited (divide by queue_packets_total: the mean "    \
      "delay).")

// Per port, what the workers moved.
#define DSCPGW_PORT_COUNTERS(X)                                                              \
    X(rx_packets, "port_dataplane_rx_packets_total", "", "packets", "RX_PKTS",               \
      "Packets the workers took from the port's RX queues.")                                 \
    X(rx_bytes, "port_dataplane_rx_bytes_total", "", "bytes", "RX_BYTES",                    \
      "Bytes of the packets the workers took from the port's RX queues.")                    \
    X(tx_packets, "port_dataplane_tx_packets_total", "", "packets", "TX_PKTS",               \
      "Packets the workers handed to the port's TX queues and the device accepted.")         \
    X(tx_bytes, "port_dataplane_tx_bytes_total", "", "bytes", "TX_BYTES",                    \
      "Bytes of the packets the workers handed to the port and the device accepted.")        \
    X(shaper_bytes, "port_shaper_bytes_total", "", "bytes", "",                              \
      "Bytes (Ethernet frames as sent) the port's egress scheduler let through its shaper.") \
    X(shaper_throttled, "port_shaper_throttled_seconds_total", "", "nanoseconds", "",        \
      "Time packets waited for the port shaper's tokens: the port was sending at its rate.")

// Gateway-wide, summed over the workers.
#define DSCPGW_DATAPLANE_COUNTERS(X)                                                              \
    X(dscp_rewrites, "dscp_rewrites_total", "", "packets", "DSCP_REWRITES",                       \
      "Packets whose DSCP the gateway rewrote (class marking on encap, DSCP policy on decap).")   \
    X(icmp_too_big_sent, "icmp_too_big_sent_total", "", "packets", "ICMP_TOO_BIG",                \
      "ICMP Fragmentation Needed / Packet Too Big messages sent for path MTU discovery.")         \
    X(icmp_rate_limited, "icmp_rate_limited_total", "", "packets", "ICMP_LIMITED",                \
      "ICMP errors not sent because of [gateway] icmp_rate.")                                     \
    X(icmp_too_big_suppressed, "icmp_too_big_suppressed_total", "", "packets", "ICMP_SUPPRESSED", \
      "Packets too big for their tunnel that may get no ICMP error (RFC 1812 4.3.2.7): a "        \
      "non-first fragment, an ICMP error, a source that is no unicast host.")                     \
    X(echo_rate_limited, "echo_rate_limited_total", "", "packets", "ECHO_LIMITED",                \
      "ICMP/ICMPv6 echo requests to the gateway not answered because of [gateway] icmp_rate.")    \
    X(tx_failed, "tx_failed_total", "", "packets", "TX_FAILED",                                   \
      "Packets the dataplane sent that the port's TX queue refused (freed): the port is full.")   \
    X(pcp_rewrites, "pcp_rewrites_total", "", "packets", "PCP_SET",                               \
      "Decapsulated frames that left a tagged inner port with the PCP its dscp_to_pcp gives "     \
      "their DSCP.")                                                                              \
    X(pcp_to_dscp, "pcp_to_dscp_total", "", "packets", "PCP_TO_DSCP",                             \
      "Tagged frames no class matched whose DSCP came from their PCP (the port's pcp_to_dscp).")

// Per worker.
#define DSCPGW_WORKER_COUNTERS(X)                                                               \
    X(rx_packets, "worker_packets_total", "", "packets", "RX_PKTS",                             \
      "Packets the worker received (busy seconds times dscpgw_tsc_hertz, divided by packets, "  \
      "is cycles per packet).")                                                                 \
    X(busy_cycles, "worker_cpu_seconds_total", "state=busy", "cycles", "",                      \
      "Time the worker spent polling, by state: busy = polls that received packets, idle = "    \
      "empty polls (counted in TSC cycles, exposed in seconds).")                               \
    X(idle_cycles, "worker_cpu_seconds_total", "state=idle", "cycles", "",                      \
      "Time the worker spent on empty polls.")                                                  \
    X(polls, "worker_polls_total", "", "polls", "POLLS", "Poll loop iterations of the worker.") \
    X(flow_evictions, "worker_flow_evictions_total", "", "flows", "EVICTIONS",                  \
      "RoCE conversations the worker's flow table evicted to make room (raise [metrics] flows " \
      "if it grows steadily).")

// Frames for the gateway's own addresses, by what became of them: X(name, kind, help), counted
// in `local_packets_total{kind}` (answered, or consumed: a neighbor's MAC learned, a path MTU).
#define DSCPGW_LOCAL_REPLIES(X)                                                              \
    X(arp, "arp_reply", "ARP requests for a port's IPv4 address, answered.")                 \
    X(icmp_echo, "icmp_echo_reply", "ICMP echo requests to a port's address, answered.")     \
    X(nd_advert, "nd_advert", "Neighbor Solicitations for a port's IPv6 address, answered.") \
    X(icmp6_echo, "icmp6_echo_reply", "ICMPv6 echo requests to a port's address, answered.") \
    X(learned, "neighbor_learned",                                                           \
      "ARP or Neighbor Discovery that told a neighbor's MAC, consumed (nothing sent).")      \
    X(path_mtu, "path_mtu_update",                                                           \
      "ICMP Fragmentation Needed / Packet Too Big quoting one of the gateway's own tunnel "  \
      "packets: the tunnel's path MTU lowered or confirmed, consumed.")

// One counter of a family, as the lists above describe it.
struct CounterInfo {
    std::string_view field, metric, label, unit, column, help;
};

#define DSCPGW_COUNTER_ENUM(field, ...) field,
// Entries may carry more arguments after the help (the device list names its rte_eth_stats
// member); the family ignores them.
#define DSCPGW_COUNTER_INFO(field, metric, label, unit, column, help, ...) \
    CounterInfo{#field, metric, label, unit, column, help},

// Family F: F::count entries, indexed by F::field, described by F::info.
#define DSCPGW_FAMILY(Name, LIST)                                               \
    struct Name {                                                               \
        enum : size_t { LIST(DSCPGW_COUNTER_ENUM) count };                      \
        static constexpr CounterInfo info[count] = {LIST(DSCPGW_COUNTER_INFO)}; \
    };

DSCPGW_FAMILY(TunnelCounter, DSCPGW_TUNNEL_COUNTERS)
DSCPGW_FAMILY(ClassCounter, DSCPGW_CLASS_COUNTERS)
DSCPGW_FAMILY(PolicerCounter, DSCPGW_POLICER_COUNTERS)
DSCPGW_FAMILY(QueueCounter, DSCPGW_QUEUE_COUNTERS)
DSCPGW_FAMILY(PortCounter, DSCPGW_PORT_COUNTERS)
DSCPGW_FAMILY(DataplaneCounter, DSCPGW_DATAPLANE_COUNTERS)
DSCPGW_FAMILY(WorkerCounter, DSCPGW_WORKER_COUNTERS)

// Replies the gateway makes to traffic for its own addresses (dataplane/local.h); `learned`: an
// ARP/ND packet told a neighbor's MAC and was consumed.
enum class LocalReply : uint8_t {
    none,
#define DSCPGW_X(name, kind, help) name,
    DSCPGW_LOCAL_REPLIES(DSCPGW_X)
#undef DSCPGW_X
        count_
};
inline constexpr size_t kLocalReplyCount = static_cast<size_t>(LocalReply::count_);
struct LocalReplyInfo {
    std::string_view name, help;
};
inline constexpr LocalReplyInfo kLocalReplyInfo[kLocalReplyCount] = {{"none", "not local"},
#define DSCPGW_X(name, kind, help) {kind, help},
                                                                     DSCPGW_LOCAL_REPLIES(DSCPGW_X)
#undef DSCPGW_X
};

// Totals of one family's counters for one item (a tunnel, a class, a port, a worker).
template <typename Family>
using Totals = std::array<uint64_t, Family::count>;

template <typename A>
void add_to(A& a, const A& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
}

// A single-writer counter: relaxed load+store compiles to a plain add, yet a concurrent reader
// sees a whole value and the program has no data race.
class Counter {
  public:
    void add(uint64_t n) {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void inc() { add(1); }
    uint64_t get() const { return v_.load(std::memory_order_relaxed); }
    // Only while no worker can write it: the control thread clears a retired bank.
    void reset() { v_.store(0, std::memory_order_relaxed); }

  private:
    std::atomic<uint64_t> v_{0};
};

// A family's counters for N items: block[Family::field][item].
template <typename Family, size_t N>
struct CounterBlock {
    Counter c[Family::count][N];

    Counter* operator[](size_t field) { return c[field]; }
    const Counter* operator[](size_t field) const { return c[field]; }
    Totals<Family> totals(size_t item) const {
        Totals<Family> t{};
        for (size_t f = 0; f < Family::count; ++f) t[f] = c[f][item].get();
        return t;
    }
    void reset() {
        for (auto& row : c)
            for (Counter& x : row) x.reset();
    }
};

}  // namespace dscpgw
