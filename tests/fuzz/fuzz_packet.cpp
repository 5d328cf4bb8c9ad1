// libFuzzer target over both directions of the packet path. The first input byte picks the port
// (bit 0: inner or outer), the headroom (bits 1-6, times two) and the LAN mode (bit 7: transparent
// or routed); the second what the device says of the checksums (RxCksum bits 0-3: mutated
// frames keep reaching decapsulation when the "device" vouches for them); the rest is the frame.
// Built with ASan and UBSan, so any read past the frame or the buffer, or any undefined behaviour,
// stops the run. It also holds the shortcuts to their reference: the straight-line parse of plain
// IPv4/UDP must equal the general parser's result, the plain-IPv4 encapsulation and decapsulation
// must equal the general paths', and a packet processed with a per-burst decap cache that has just
// seen it, and with a worker's encap and decap flow caches that every earlier input of its config
// has filled, must come out as it does without them. Bit 5 of the second byte picks a config whose
// ports are shaped with queues that mark CE (dataplane/sched.h): a forwarded frame is then queued
// twice (the second marked or dropped) and dequeued, as the workers' egress stage does.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "dataplane/decap.h"
#include "dataplane/encap.h"
#include "dataplane/local.h"
#include "dataplane/neighbor.h"
#include "dataplane/pipeline.h"
#include "dataplane/qos.h"
#include "dataplane/sched.h"
#include "gateway/eal.h"
#include "tests/common/dataplane_fixture.h"

namespace {

// Transparent LAN, routed LAN, the transparent one tagged with Border QoS classes, and shaped
// ports with egress queues.
const dscpgw::Snapshot* g_snaps[4] = {};
// One per config, kept across inputs: an input may hit an entry an earlier one left (another
// length, headroom, TTL or checksum on the same flow), and must still come out as without it.
dscpgw::EncapCache g_encap[4];
dscpgw::DecapFlowCache g_decap[4];
rte_mempool* g_pool = nullptr;
uint64_t g_now = 0;

// The forwarded frame through its out port's scheduler: queued twice (the second copy sees a
// non-empty queue: ECT marked CE in outer and inner header, Not-ECT dropped), then everything
// dequeued and freed. ASan checks the marking's parse of whatever the path produced.
void through_scheduler(const dscpgw::Snapshot& s, const dscpgw::Outcome& v, const dscpgw::Frame& f,
                       bool outer_rx) {
    dscpgw::PortSched* ps = s.scheds[v.out_port].get();
    if (ps == nullptr) return;
    auto st = std::make_unique<dscpgw::WorkerStats>();
    dscpgw::ConfigCounters& cc = st->bank[0];
    g_now += 1000000000ull;
    ps->lock();
    for (int copy = 0; copy < 2; ++copy) {
        rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
        if (m == nullptr || f.len > rte_pktmbuf_tailroom(m)) std::abort();
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.len)), f.data, f.len);
        if (!outer_rx && v.tx_udp6_cksum)
            m->ol_flags |= RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_UDP_CKSUM;
        dscpgw::sched_note(m, outer_rx ? dscpgw::kSchedDecap : dscpgw::kSchedEncap, v.class_id,
                           v.tunnel_id);
        const dscpgw::EnqResult r = ps->enqueue(s, v.out_port, m, g_now, cc);
        if (r.action == dscpgw::EnqAction::bypass || dscpgw::dropped(r.action)) rte_pktmbuf_free(m);
    }
    dscpgw::Departure out[8];
    unsigned n;
    while ((n = ps->dequeue(s, v.out_port, g_now + 1000000000ull, out, 8, *st, cc)) != 0)
        for (unsigned i = 0; i < n; ++i) rte_pktmbuf_free(out[i].m);
    if (ps->backlog() != 0) std::abort();
    ps->unlock();
}

void check_parse_shortcut(const uint8_t* frame, uint32_t len) {
    dscpgw::ParsedPacket fast, ref;
    if (!dscpgw::parse_plain_udp(frame, len, fast)) return;
    if (dscpgw::parse_packet_general(frame, len, ref) != dscpgw::DropReason::none) std::abort();
    if (fast.l3_off != ref.l3_off || fast.vlan_tags != ref.vlan_tags || fast.ip_ver != ref.ip_ver ||
        fast.tos != ref.tos || fast.proto != ref.proto || fast.is_fragment != ref.is_fragment ||
        fast.has_ports != ref.has_ports || fast.has_bth != ref.has_bth ||
        fast.l4_off != ref.l4_off || fast.ip_len != ref.ip_len || fast.sport != ref.sport ||
        fast.dport != ref.dport || fast.bth_opcode != ref.bth_opcode || fast.src != ref.src ||
        fast.dst != ref.dst || fast.tci != ref.tci)
        std::abort();
}

bool same_verdict(const dscpgw::Outcome& a, const dscpgw::Outcome& b) {
    return a.drop == b.drop && a.out_port == b.out_port && a.class_id == b.class_id &&
           a.tunnel_id == b.tunnel_id && a.dscp_in == b.dscp_in && a.dscp_out == b.dscp_out &&
           a.outer_path == b.outer_path && a.dscp_rewritten == b.dscp_rewritten &&
           (a.roce_bth == nullptr) == (b.roce_bth == nullptr) &&
           a.outer_remarked == b.outer_remarked && a.ce_marked == b.ce_marked &&
           a.tx_udp6_cksum == b.tx_udp6_cksum && a.local == b.local && a.pmtu == b.pmtu &&
           a.colour1 == b.colour1 && a.adaptive1 == b.adaptive1 && a.pcp_in1 == b.pcp_in1 &&
           a.pcp_out1 == b.pcp_out1 && a.pcp_mapped == b.pcp_mapped && a.pcp_set == b.pcp_set;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::string err;
    // Four snapshots (each with its 64 MB IPv4 route table): more than the usual 512 MB.
    std::vector<std::string> args = dscpgw::eal_args_offline();
    for (std::string& a : args)
        if (a == "512") a = "1024";
    if (!dscpgw::eal_init(args, err)) {
        std::fprintf(stderr, "%s\n", err.c_str());
        std::abort();
    }
    g_snaps[0] = dscpgw::test::wide_snapshot(false).release();
    g_snaps[1] = dscpgw::test::wide_snapshot(true).release();
    // The routed LAN's hosts the corpus's tunnelled frames are for, resolved, so that their flows
    // reach the decap flow cache (a routed LAN's entry reads the host's slot on every hit).
    dscpgw::NeighborTable& hosts = *g_snaps[1]->neighbors;
    for (size_t p = 0; p < g_snaps[1]->ports.size(); ++p) {
        if (g_snaps[1]->ports[p].role != dscpgw::PortRole::inner) continue;
        for (const uint8_t host : {uint8_t{5}, uint8_t{6}, uint8_t{9}}) {
            const uint64_t mac = dscpgw::kNeighborValid | 0x020000001000u | host;
            for (const uint8_t net : {uint8_t{0}, uint8_t{1}, uint8_t{2}}) {
                const uint8_t addr[4] = {10, net, 0, host};
                const int n = hosts.add(4, static_cast<uint16_t>(p), addr);
                if (n >= 0) hosts.at(static_cast<size_t>(n)).mac.store(mac);
            }
            // fd00::host, on the routed LAN's fd00::/64: the corpus's inner IPv6 frames.
            const uint8_t addr6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, host};
            const int n = hosts.add(6, static_cast<uint16_t>(p), addr6);
            if (n >= 0) hosts.at(static_cast<size_t>(n)).mac.store(mac);
        }
    }
    g_snaps[2] = dscpgw::test::wide_snapshot(false, dscpgw::test::kQosFirst, dscpgw::test::kQosLan)
                     .release();
    g_snaps[3] = dscpgw::test::wide_snapshot(false, dscpgw::test::kEgressFirst,
                                             dscpgw::test::kEgressPort, dscpgw::test::kEgressPort)
                     .release();
    g_pool = rte_pktmbuf_pool_create("fuzz_sched", 63, 0, 0, 20480 + RTE_PKTMBUF_HEADROOM,
                                     SOCKET_ID_ANY);
    if (g_pool == nullptr) std::abort();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2 || size > 16384) return 0;
    const uint16_t port = data[0] & 1;
    const unsigned config = (data[1] & 0x20) != 0 ? 3 : (data[1] & 0x10) != 0 ? 2 : data[0] >> 7;
    const dscpgw::Snapshot* g_snap = g_snaps[config];
    // Headroom from 0 to 126 bytes: encapsulation must never write before the buffer.
    const uint32_t headroom = ((data[0] >> 1) & 0x3f) * 2u;
    // Any RxCksum bits (NONE, both of a layer, included).
    const auto rx_cksum = static_cast<uint8_t>((data[1] & 0x03) | (data[1] & 0x0c) << 2);
    ++data;
    const size_t len = size - 2;
    // An exactly sized heap buffer, so ASan sees any access outside [buffer, buffer + headroom +
    // len).
    std::unique_ptr<uint8_t[]> buf(new uint8_t[headroom + len]);
    std::memcpy(buf.get() + headroom, data + 1, len);
    check_parse_shortcut(data + 1, static_cast<uint32_t>(len));
    // With a cache: once to fill it, once to use it; the second result is compared below.
    std::unique_ptr<uint8_t[]> cached(new uint8_t[headroom + len]);
    dscpgw::DecapCache cache;
    dscpgw::Frame fc{};
    dscpgw::Outcome vc;
    for (int i = 0; i < 2; ++i) {
        std::memcpy(cached.get() + headroom, data + 1, len);
        fc = dscpgw::Frame{cached.get() + headroom, static_cast<uint32_t>(len), headroom, rx_cksum};
        vc = dscpgw::process_packet(*g_snap, port, fc, &cache, nullptr, &g_encap[config],
                                    &g_decap[config]);
    }
    dscpgw::Frame f{buf.get() + headroom, static_cast<uint32_t>(len), headroom, rx_cksum};
    dscpgw::Outcome v = dscpgw::process_packet(*g_snap, port, f);
    if (!same_verdict(v, vc) || f.len != fc.len || f.headroom != fc.headroom ||
        std::memcmp(buf.get(), cached.get(), headroom + len) != 0)
        std::abort();
    {
        // The general path alone must give what the shortcut gave.
        std::memcpy(cached.get() + headroom, data + 1, len);
        fc = dscpgw::Frame{cached.get() + headroom, static_cast<uint32_t>(len), headroom, rx_cksum};
        vc = dscpgw::Outcome{};
        static_cast<dscpgw::Verdict&>(vc) =
            g_snap->ports[port].role == dscpgw::PortRole::inner
                ? dscpgw::process_inner_general(*g_snap, port, fc, vc, dscpgw::QosClock{})
                : dscpgw::process_outer_general(*g_snap, port, fc, vc);
        if (!same_verdict(v, vc) || f.len != fc.len || f.headroom != fc.headroom ||
            std::memcmp(buf.get(), cached.get(), headroom + len) != 0)
            std::abort();
    }
    if (v.pmtu != 0) {
        // The ICMP error is built in the same buffer, as the burst glue does.
        const dscpgw::PortConf& p = g_snap->ports[port];
        f = dscpgw::Frame{buf.get() + headroom, static_cast<uint32_t>(len), headroom, rx_cksum};
        if (dscpgw::make_too_big(p, p.icmp_src4.data(), p.icmp_src6.data(), v.pmtu, f))
            v.drop = dscpgw::DropReason::none;
    }
    if (v.drop == dscpgw::DropReason::none) {
        // The result must lie inside the buffer.
        if (f.data < buf.get() || f.data + f.len > buf.get() + headroom + len + 0 ||
            f.headroom != static_cast<uint32_t>(f.data - buf.get()))
            std::abort();
        volatile uint8_t sink = 0;
        for (uint32_t i = 0; i < f.len; ++i) sink = static_cast<uint8_t>(sink + f.data[i]);
        (void)sink;
        if (v.local == dscpgw::LocalReply::none && v.pmtu == 0)
            through_scheduler(*g_snap, v, f, g_snap->ports[port].role == dscpgw::PortRole::outer);
    }
    return 0;
}
