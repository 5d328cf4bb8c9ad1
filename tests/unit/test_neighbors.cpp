// The neighbor state machine (control/neighbors.cpp) and the table's room rules
// (dataplane/neighbor.cpp), driven with a made-up clock.
#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <string>

#include "config/config.h"
#include "control/neighbors.h"
#include "dataplane/neighbor.h"
#include "dataplane/pipeline.h"
#include "tests/unit/builder.h"

namespace dscpgw {
namespace {

using test::Bytes;

constexpr const char* kRouted = R"(
[[ports]]
name = "lan"
role = "inner"
device = "a"
ipv4 = "10.10.0.1/16"
mac = "02:00:00:00:10:01"
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
mac = "02:00:00:00:00:01"
[[tunnels]]
name = "t"
type = "vxlan"
vni = 1
remote = "198.18.7.7"
next_hop = "198.18.0.254"
routes = ["10.20.0.0/16"]
)";

class NeighborMachine : public ::testing::Test {
  protected:
    void SetUp() override {
        const std::string id = std::to_string(++seq_);
        pool_ = rte_pktmbuf_pool_create(("unit_nbr" + id).c_str(), 4095, 0, 0, 256, SOCKET_ID_ANY);
        ring_ = rte_ring_create(("unit_nbr" + id).c_str(), 4096, SOCKET_ID_ANY,
                                RING_F_SP_ENQ | RING_F_SC_DEQ);
        ASSERT_NE(pool_, nullptr);
        ASSERT_NE(ring_, nullptr);
        ctl_.pool = pool_;
        ctl_.inject = ring_;
        snap_ = build_snapshot(cfg_, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table_);
    }
    void TearDown() override {
        drain();
        rte_ring_free(ring_);
        rte_mempool_free(pool_);
    }
    // Probes sent since the last call (freed).
    unsigned drain() {
        void* m = nullptr;
        unsigned n = 0;
        while (rte_ring_dequeue(ring_, &m) == 0) {
            rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
            ++n;
        }
        return n;
    }
    uint64_t at(double s) const {
        return t0_ + static_cast<uint64_t>(s * static_cast<double>(hz_));
    }
    unsigned tick(double s) {
        maintain_neighbors(table_, *snap_, ctl_, at(s), hz_);
        return drain();
    }
    NeighborState state(int i, double s) const {
        return neighbor_state(table_.at(static_cast<size_t>(i)), at(s), hz_);
    }
    void request_hosts(unsigned from, unsigned n) {
        for (unsigned k = from; k < from + n; ++k) {
            const uint8_t a[4] = {10, 10, static_cast<uint8_t>(k >> 8), static_cast<uint8_t>(k)};
            table_.request(4, 0, a, 0);
            if (k % 256 == 255)
                while (table_.drain_requests(at(0)) != 0) {
                }
        }
        while (table_.drain_requests(at(0)) != 0) {
        }
    }

    static inline int seq_ = 0;
    const Config cfg_ = parse_config(kRouted, "routed.toml");
    NeighborTable table_;
    std::unique_ptr<Snapshot> snap_;
    rte_mempool* pool_ = nullptr;
    rte_ring* ring_ = nullptr;
    NeighborControl ctl_;
    const uint64_t hz_ = rte_get_tsc_hz(), t0_ = rte_get_tsc_cycles() + 100 * rte_get_tsc_hz();
};

// An unresolved next hop: probed once a second, failed after three unanswered probes, then
// retried every ten seconds (never forgotten: it is configured).
TEST_F(NeighborMachine, NextHopProbedThenFailedThenRetriedSlowly) {
    const uint8_t nh[4] = {198, 18, 0, 254};
    const int i = table_.find(4, 1, nh);
    ASSERT_GE(i, 0);
    EXPECT_EQ(tick(0), 1u);
    EXPECT_EQ(state(i, 0), NeighborState::incomplete);
    EXPECT_NE(table_.at(static_cast<size_t>(i)).probe_tsc.load(), 0u) << "a probe is outstanding";
    EXPECT_EQ(tick(0.5), 0u) << "one a second";
    EXPECT_EQ(tick(1.1), 1u);
    EXPECT_EQ(tick(2.2), 1u);
    EXPECT_EQ(tick(3.3), 0u) << "three unanswered: failed";
    EXPECT_EQ(state(i, 3.3), NeighborState::failed);
    EXPECT_EQ(tick(8), 0u) << "failed: no probing storm";
    EXPECT_EQ(tick(13.4), 1u) << "a configured next hop is retried every ten seconds";
    EXPECT_EQ(tick(14), 0u);
}

// A resolved entry goes stale after 30 s, is probed, and keeps its MAC while probed; silent, it
// loses it (failed).
TEST_F(NeighborMachine, ResolvedGoesStaleProbeFailed) {
    const uint8_t nh[4] = {198, 18, 0, 254};
    const int i = table_.find(4, 1, nh);
    Neighbor& n = table_.at(static_cast<size_t>(i));
    n.mac.store(kNeighborValid | 0x020000000077);
    n.learned_tsc.store(at(0));
    EXPECT_EQ(tick(1), 0u);
    EXPECT_EQ(state(i, 1), NeighborState::reachable);
    EXPECT_EQ(state(i, 31), NeighborState::stale);
    EXPECT_EQ(tick(31), 1u);
    EXPECT_EQ(state(i, 31), NeighborState::probe);
    EXPECT_NE(n.mac.load() & kNeighborValid, 0u) << "still used while probed";
    EXPECT_EQ(tick(32.1), 1u);
    EXPECT_EQ(tick(33.2), 1u);
    EXPECT_EQ(tick(34.3), 0u);
    EXPECT_EQ(n.mac.load() & kNeighborValid, 0u) << "silent through three probes";
    EXPECT_EQ(state(i, 34.3), NeighborState::failed);
    EXPECT_EQ(ctl_.expired, 1u);
}

// LAN hosts: capped per port, least recently used unresolved ones evicted, resolved ones kept,
// probes limited per port, failed ones removed, and the configuration always has room.
TEST_F(NeighborMachine, LanHostsCappedProbesLimitedConfigAlwaysFits) {
    request_hosts(0, 1100);
    EXPECT_EQ(table_.learned_count(0), kMaxLearnedPerPort);
    EXPECT_EQ(table_.evictions(), 1100 - kMaxLearnedPerPort);
    const uint8_t first[4] = {10, 10, 0, 0}, last[4] = {10, 10, 1100 >> 8, 1099 & 0xff};
    EXPECT_LT(table_.find(4, 0, first), 0) << "the oldest unresolved host made room";
    EXPECT_GE(table_.find(4, 0, last), 0);
    EXPECT_LE(tick(0), kNeighborProbesPerPort + 1u) << "50 a second for the LAN, 1 next hop";
    EXPECT_GT(ctl_.probes_limited, 0u);
    // Every host resolved: nobody more gets in, nobody known is evicted.
    for (size_t k = 0; k < table_.size(); ++k) {
        Neighbor& n = table_.at(k);
        if (n.live && n.port == 0) {
            n.mac.store(kNeighborValid | 0x020000000000 | k);
            n.learned_tsc.store(at(0));
        }
    }
    const uint64_t evicted = table_.evictions();
    request_hosts(2000, 10);
    EXPECT_EQ(table_.evictions(), evicted);
    EXPECT_EQ(table_.refused(), 10u);
    // A reload that adds next hops and static neighbors is never refused for want of room.
    const Config more = parse_config(std::string(kRouted) +
                                         "[[neighbors]]\nport = \"wan\"\nip = \"198.18.0.9\"\n"
                                         "mac = \"02:00:00:00:00:99\"\n",
                                     "more.toml");
    SnapshotBuild b = compile_snapshot(more, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table_);
    b.neighbors.apply(table_, *b.snap);
    EXPECT_EQ(table_.configured_count(), 2u);
}

TEST_F(NeighborMachine, FailedLanHostRemovedAndItsSlotReused) {
    request_hosts(5, 1);
    const uint8_t h[4] = {10, 10, 0, 5};
    const int i = table_.find(4, 0, h);
    ASSERT_GE(i, 0);
    for (double s : {0.0, 1.1, 2.2, 3.3}) tick(s);
    EXPECT_EQ(state(i, 3.3), NeighborState::failed);
    const uint64_t probed = table_.at(static_cast<size_t>(i)).last_probe_tsc;
    tick(20);
    EXPECT_EQ(table_.at(static_cast<size_t>(i)).last_probe_tsc, probed)
        << "a failed LAN host is not probed";
    tick(64);
    EXPECT_LT(table_.find(4, 0, h), 0) << "removed a minute after it failed";
    EXPECT_EQ(ctl_.removed, 1u);
    EXPECT_EQ(table_.learned_count(0), 0u);
    tick(66);  // The slot's grace period is over: reused by the next host.
    request_hosts(6, 1);
    const uint8_t h6[4] = {10, 10, 0, 6};
    EXPECT_EQ(table_.find(4, 0, h6), i);
}

// A routed LAN port learns and adopts only hosts on its prefix.
TEST_F(NeighborMachine, RoutedLanAdoptsOnlyItsPrefix) {
    auto arp_from = [](const Bytes& ip) {
        Bytes b = test::PacketBuilder().eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}).build();
        b[12] = 0x08;
        b[13] = 0x06;
        const Bytes hdr = {0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0x10, 9};
        b.insert(b.end(), hdr.begin(), hdr.end());
        b.insert(b.end(), ip.begin(), ip.end());
        b.insert(b.end(), 6, 0);
        const Bytes gw = {10, 10, 0, 1};
        b.insert(b.end(), gw.begin(), gw.end());
        return b;
    };
    for (const Bytes& src : {Bytes{10, 11, 0, 5}, Bytes{10, 10, 0, 5}}) {
        test::TestFrame t(arp_from(src));
        process_packet(*snap_, 0, t.frame);
    }
    EXPECT_EQ(table_.drain_requests(at(0)), 1u) << "only the on-prefix sender is adopted";
    EXPECT_GE(table_.find(4, 0, Bytes{10, 10, 0, 5}.data()), 0);
    EXPECT_LT(table_.find(4, 0, Bytes{10, 11, 0, 5}.data()), 0);
}

}  // namespace
}  // namespace dscpgw
