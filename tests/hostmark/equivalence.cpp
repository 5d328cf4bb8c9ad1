// Holds dscpgw-hostmark's BPF program to the gateway's classifier: every frame of a capture goes
// through the program in the kernel (BPF_PROG_TEST_RUN, no device needed) and through the
// gateway's own parse_packet() + classify(); the TOS the program leaves must be the one the
// gateway's class gives (DSCP set or kept, ECN kept), the IPv4 header checksum must stay valid, a
// class's pcp must land in an in-frame VLAN tag, and nothing else in the frame may change.
//
// usage: hostmark_equivalence CONFIG PCAP [--bench]. Needs root (loading BPF); exits 77 without
// it. With --bench, also times the program on the capture's first frame of each class and its
// first unclassified IP frame (BPF_PROG_TEST_RUN's repeat: the kernel's own per-run average).
// Prints "N frames: M classified, K rewritten, J malformed, 0 mismatches"; exits 1 on a mismatch.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "config/config.h"
#include "dataplane/packet.h"
#include "dataplane/pipeline.h"
#include "dataplane/wire.h"
#include "hostmark/hostmark.skel.h"
#include "hostmark/rules.h"

using namespace dscpgw;

namespace {

// The frames of a classic pcap file (libpcap's header clashes with linux/bpf.h: read it here).
bool read_pcap(const char* path, std::vector<std::vector<uint8_t>>& frames) {
    std::ifstream f(path, std::ios::binary);
    const std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), {});
    if (b.size() < 24) return false;
    uint32_t magic;
    std::memcpy(&magic, b.data(), 4);
    const bool swap = magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1;
    if (!swap && magic != 0xa1b2c3d4 && magic != 0xa1b23c4d) return false;
    for (size_t off = 24; off + 16 <= b.size();) {
        uint32_t caplen;
        std::memcpy(&caplen, b.data() + off + 8, 4);
        if (swap) caplen = __builtin_bswap32(caplen);
        off += 16;
        if (off + caplen > b.size()) return false;
        frames.emplace_back(b.begin() + static_cast<long>(off),
                            b.begin() + static_cast<long>(off + caplen));
        off += caplen;
    }
    return true;
}

uint16_t ipv4_header_sum(const uint8_t* ip, unsigned ihl) {
    uint32_t sum = wire::sum16(ip, ihl);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(sum);
}

}  // namespace

int main(int argc, char** argv) {
    const bool bench = argc == 4 && std::strcmp(argv[3], "--bench") == 0;
    if (argc != 3 && !bench) {
        std::fprintf(stderr, "usage: %s CONFIG PCAP [--bench]\n", argv[0]);
        return 2;
    }
    if (geteuid() != 0) {
        std::puts("SKIP: needs root to load BPF");
        return 77;
    }
    Snapshot snap;
    try {
        snap.classes = load_classes(argv[1]);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
    for (const ClassRule& c : snap.classes) snap.class_match.push_back(compile_class(c));
    hm_ruleset rs{};
    if (const std::string why = hostmark::build_ruleset(snap.classes, rs); !why.empty()) {
        std::fprintf(stderr, "%s\n", why.c_str());
        return 2;
    }

    hostmark_bpf* skel = hostmark_bpf__open_and_load();
    if (skel == nullptr) {
        std::fprintf(stderr, "cannot load the BPF program: %s\n", std::strerror(errno));
        return 1;
    }
    const uint32_t zero = 0;
    hm_state st{};
    st.abi = HM_ABI_VERSION;
    if (bpf_map_update_elem(bpf_map__fd(skel->maps.hm_rules), &zero, &rs, BPF_ANY) != 0 ||
        bpf_map_update_elem(bpf_map__fd(skel->maps.hm_state), &zero, &st, BPF_ANY) != 0) {
        std::fprintf(stderr, "cannot write the maps: %s\n", std::strerror(errno));
        return 1;
    }
    const int prog = bpf_program__fd(skel->progs.hostmark_egress);

    std::vector<std::vector<uint8_t>> capture;
    if (!read_pcap(argv[2], capture)) {
        std::fprintf(stderr, "%s: not a readable pcap file\n", argv[2]);
        return 2;
    }
    unsigned frames = 0, classified = 0, rewritten = 0, malformed = 0, mismatches = 0;
    std::vector<uint8_t> out(16384);
    std::vector<std::pair<int, const std::vector<uint8_t>*>>
        timed;  // (class * 8 + IP version, frame)
    for (const std::vector<uint8_t>& in : capture) {
        ++frames;
        if (in.size() < 14) continue;  // BPF_PROG_TEST_RUN wants at least an Ethernet header.
        bpf_test_run_opts o{};
        o.sz = sizeof o;
        o.data_in = in.data();
        o.data_size_in = static_cast<uint32_t>(in.size());
        o.data_out = out.data();
        o.data_size_out = static_cast<uint32_t>(out.size());
        ParsedPacket pp;
        const DropReason parse = parse_packet(in.data(), static_cast<uint32_t>(in.size()), pp);
        if (bpf_prog_test_run_opts(prog, &o) != 0) {
            // The kernel's test harness refuses an IP EtherType without a whole IP header; the
            // gateway calls such a frame truncated. Nothing to compare.
            if (errno == EINVAL && parse == DropReason::truncated) {
                ++malformed;
                continue;
            }
            std::fprintf(stderr, "frame %u (%zu bytes): BPF_PROG_TEST_RUN: %s:", frames, in.size(),
                         std::strerror(errno));
            for (size_t i = 0; i < in.size() && i < 64; ++i) std::fprintf(stderr, " %02x", in[i]);
            std::fputc('\n', stderr);
            return 1;
        }
        std::vector<uint8_t> want = in;
        const bool gateway_parses = parse == DropReason::none && pp.ip_ver != 0;
        if (parse != DropReason::none) {
            // The gateway drops what it cannot parse (a UDP/4791 datagram too short for a BTH,
            // a length beyond the frame); a host marker has no such verdict and may still mark
            // by port. Hold it only to not corrupting the frame: the same length, and at most
            // a VLAN priority, the TOS / traffic class and the IPv4 checksum changed.
            const std::vector<uint8_t> got(out.begin(), out.begin() + o.data_size_out);
            unsigned diff = got.size() == in.size() ? 0 : 100;
            for (size_t i = 0; diff < 100 && i < got.size(); ++i) diff += got[i] != in[i];
            ++malformed;
            if (diff > 5 && ++mismatches <= 10)
                std::fprintf(stderr,
                             "frame %u: unparsable for the gateway (%.*s), %u bytes changed\n",
                             frames, static_cast<int>(drop_reason_name(parse).size()),
                             drop_reason_name(parse).data(), diff);
            continue;
        }
        int cls = -1;
        if (gateway_parses) {
            cls = classify(snap, pp);
            bool seen = false;
            for (const auto& t : timed) seen = seen || t.first == cls * 8 + pp.ip_ver;
            if (!seen) timed.emplace_back(cls * 8 + pp.ip_ver, &in);
            if (cls >= 0) {
                ++classified;
                const ClassRule& c = snap.classes[static_cast<size_t>(cls)];
                const uint8_t tos =
                    c.set_dscp >= 0 ? static_cast<uint8_t>(c.set_dscp << 2 | (pp.tos & 3)) : pp.tos;
                uint8_t* ip = want.data() + pp.l3_off;
                if (pp.ip_ver == 4) {
                    ip[1] = tos;
                } else {
                    ip[0] = static_cast<uint8_t>((ip[0] & 0xf0) | tos >> 4);
                    ip[1] = static_cast<uint8_t>((ip[1] & 0x0f) | (tos & 0x0f) << 4);
                }
                if (pp.vlan_tags > 0 && c.pcp >= 0)
                    want[14] = static_cast<uint8_t>((want[14] & 0x1f) | c.pcp << 5);
                if (tos != pp.tos) ++rewritten;
            }
        }
        const std::vector<uint8_t> got(out.begin(), out.begin() + o.data_size_out);
        // IPv4: the header checksum field may differ from the input's, but the header must sum
        // as the input's did (valid stays valid: the incremental update is right; a frame that
        // came in with a bad checksum is not silently repaired either). All else as expected.
        bool same = got.size() == want.size();
        if (same && gateway_parses && pp.ip_ver == 4) {
            const unsigned ihl = (in[pp.l3_off] & 0xfu) * 4u;
            const auto norm = [](uint16_t v) { return v == 0 ? uint16_t{0xffff} : v; };
            same = norm(ipv4_header_sum(got.data() + pp.l3_off, ihl)) ==
                   norm(ipv4_header_sum(in.data() + pp.l3_off, ihl));
            for (size_t i = 0; same && i < got.size(); ++i)
                if (i != pp.l3_off + 10u && i != pp.l3_off + 11u && got[i] != want[i]) same = false;
        } else if (same) {
            same = got == want;
        }
        if (!same) {
            if (++mismatches <= 10) {
                std::fprintf(stderr, "frame %u (%zu bytes): gateway class %d, ", frames, in.size(),
                             cls);
                std::fprintf(stderr, "tos in %02x; program's frame differs:\n  want", pp.tos);
                for (size_t i = 0; i < want.size() && i < 64; ++i)
                    std::fprintf(stderr, " %02x", want[i]);
                std::fputs("\n  got ", stderr);
                for (size_t i = 0; i < got.size() && i < 64; ++i)
                    std::fprintf(stderr, " %02x", got[i]);
                std::fputc('\n', stderr);
            }
        }
    }
    for (const auto& [key, frame] : bench ? timed : decltype(timed){}) {
        const int cls = key < 0 ? -1 : key / 8;
        const int ver = key < 0 ? key + 8 : key % 8;
        bpf_test_run_opts o{};
        o.sz = sizeof o;
        o.data_in = frame->data();
        o.data_size_in = static_cast<uint32_t>(frame->size());
        o.repeat = 1000000;
        if (bpf_prog_test_run_opts(prog, &o) != 0) continue;
        const std::string name =
            cls < 0 ? "(no class)" : snap.classes[static_cast<size_t>(cls)].name;
        std::printf("bench: %-12s IPv%d %4zu-byte frame: %u ns per run\n", name.c_str(), ver,
                    frame->size(), o.duration);
    }
    if (bench && !timed.empty()) {
        // The harness's own cost: a program that returns at once (vlan_push.bpf.o, built beside
        // this tool, reads the Ethernet and IP headers of a frame it does not tag and returns).
        std::string floor_obj = argv[0];
        floor_obj = floor_obj.substr(0, floor_obj.find_last_of('/') + 1) + "vlan_push.bpf.o";
        if (bpf_object* obj = bpf_object__open_file(floor_obj.c_str(), nullptr);
            obj != nullptr && bpf_object__load(obj) == 0) {
            bpf_test_run_opts o{};
            o.sz = sizeof o;
            o.data_in = timed.front().second->data();
            o.data_size_in = static_cast<uint32_t>(timed.front().second->size());
            o.repeat = 1000000;
            bpf_program* p = bpf_object__next_program(obj, nullptr);
            if (p != nullptr && bpf_prog_test_run_opts(bpf_program__fd(p), &o) == 0)
                std::printf(
                    "bench: harness floor (a program that reads two headers and returns): "
                    "%u ns per run\n",
                    o.duration);
            bpf_object__close(obj);
        }
    }
    hostmark_bpf__destroy(skel);
    std::printf("%u frames: %u classified, %u rewritten, %u malformed, %u mismatches\n", frames,
                classified, rewritten, malformed, mismatches);
    return mismatches == 0 ? 0 : 1;
}
