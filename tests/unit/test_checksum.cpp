#include <gtest/gtest.h>
#include <rte_ip.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <vector>

#include "dataplane/cksum.h"
#include "dataplane/wire.h"
#include "tests/unit/builder.h"

namespace dscpgw {
namespace {

using wire::csum_update16;

struct CsumCase {
    uint16_t hc, m, m_new, expect;
    const char* what;
};

TEST(Checksum, Rfc1624Cases) {
    const CsumCase cases[] = {
        // RFC 1624 section 4: equation 2 gives 0xFFFF here, equation 3 the correct 0x0000.
        {0xdd2f, 0x5555, 0x3285, 0x0000, "RFC 1624 example"},
        {0x0000, 0x0000, 0x0000, 0x0000, "no change keeps 0x0000"},
        {0xffff, 0x0000, 0x0001, 0xfffe, "0xFFFF (only from an all-zero header) decrements"},
        {0x1234, 0x4500, 0x4500, 0x1234, "identity"},
        {0x0001, 0x4500, 0x4568, 0xff98, "wrap below zero"},
        {0xfffe, 0x45ff, 0x4500, 0x00fe, "wrap above 0xffff"},
    };
    for (const auto& c : cases) EXPECT_EQ(csum_update16(c.hc, c.m, c.m_new), c.expect) << c.what;
}

// Against a full recomputation over random headers and every TOS value.
TEST(Checksum, IncrementalMatchesFullOverEveryTos) {
    std::mt19937 rng(7);
    for (int round = 0; round < 200; ++round) {
        uint8_t h[20];
        for (auto& b : h) b = static_cast<uint8_t>(rng());
        h[0] = 0x45;
        h[10] = h[11] = 0;
        const uint16_t full = test::finish(test::sum16(h, 20));
        h[10] = static_cast<uint8_t>(full >> 8);
        h[11] = static_cast<uint8_t>(full);
        for (int tos = 0; tos < 256; ++tos) {
            uint8_t c[20];
            std::copy(h, h + 20, c);
            wire::set_ipv4_tos(c, static_cast<uint8_t>(tos));
            EXPECT_EQ(test::finish(test::sum16(c, 20)), 0) << "round " << round << " tos " << tos;
            EXPECT_EQ(c[1], tos);
        }
    }
}

// The encap cache's form: the change's sum computed once per flow gives the bytes set_ipv4_tos()
// gives, for every pair of TOS values and a spread of checksums (every 251st, from an offset per
// pair, and both zeros, 0x0000 and 0xffff), so a hit and the slow way cannot differ.
TEST(Checksum, PrecomputedTosDeltaEqualsIncremental) {
    for (int from = 0; from < 256; ++from) {
        for (int to = 0; to < 256; ++to) {
            if (from == to) continue;
            const auto old_tos = static_cast<uint8_t>(from), new_tos = static_cast<uint8_t>(to);
            const uint16_t delta = wire::ipv4_tos_csum_delta(0x45, old_tos, new_tos);
            ASSERT_NE(delta, 0);
            std::vector<uint32_t> csums = {0x0000, 0xffff};
            for (uint32_t c = (from * 257u + to) % 251; c <= 0xffff; c += 251) csums.push_back(c);
            for (const uint32_t csum : csums) {
                uint8_t a[20] = {0x45, old_tos};
                a[10] = static_cast<uint8_t>(csum >> 8);
                a[11] = static_cast<uint8_t>(csum);
                uint8_t b[20];
                std::copy(a, a + 20, b);
                wire::set_ipv4_tos(a, new_tos);
                wire::set_ipv4_tos_delta(b, new_tos, delta);
                ASSERT_EQ(std::memcmp(a, b, 20), 0)
                    << "tos " << from << " -> " << to << " csum " << csum;
            }
        }
    }
}

// The receive-side check against a 16-bit recomputation: every header length, right sums (0x0000
// and 0xffff among them), and every single-bit error, which a one's-complement sum always catches.
TEST(Checksum, Ipv4HeaderCheckMatchesRecomputation) {
    std::mt19937 rng(11);
    for (unsigned ihl = 5; ihl <= 15; ++ihl) {
        for (int round = 0; round < 50; ++round) {
            uint8_t h[60];
            for (auto& b : h) b = round == 0 ? 0 : static_cast<uint8_t>(rng());
            h[0] = static_cast<uint8_t>(0x40 | ihl);
            h[10] = h[11] = 0;
            const uint16_t full = test::finish(test::sum16(h, ihl * 4));
            h[10] = static_cast<uint8_t>(full >> 8);
            h[11] = static_cast<uint8_t>(full);
            ASSERT_TRUE(wire::ipv4_header_sum_ok(h, ihl)) << "ihl " << ihl << " round " << round;
            for (unsigned bit = 0; bit < ihl * 32; ++bit) {
                h[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
                EXPECT_FALSE(wire::ipv4_header_sum_ok(h, ihl)) << "ihl " << ihl << " bit " << bit;
                h[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
            }
        }
    }
}

// The check (a nonzero multiple of 0xffff, no fold) against the folded 16-bit sum on any header,
// the checksum field right or not: right, each of its two forms of zero, one off either way, its
// complement, random; and an all-zero header, whose sum folds to 0, not 0xffff.
TEST(Checksum, Ipv4HeaderCheckAgreesWithTheFoldedSum) {
    std::mt19937 rng(12);
    const auto folded_ok = [](const uint8_t* h, unsigned ihl) {
        uint32_t s = test::sum16(h, ihl * 4);
        while (s >> 16) s = (s & 0xffff) + (s >> 16);
        return s == 0xffff;
    };
    unsigned right = 0, wrong = 0;
    for (unsigned ihl = 5; ihl <= 15; ++ihl) {
        for (int round = 0; round < 200; ++round) {
            uint8_t h[60];
            for (auto& b : h) b = static_cast<uint8_t>(rng());
            if (round % 10 == 0) std::fill(h, h + sizeof h, round % 20 == 0 ? 0x00 : 0xff);
            h[10] = h[11] = 0;
            const uint16_t c = test::finish(test::sum16(h, ihl * 4));
            for (const uint16_t field : {c, uint16_t{0}, uint16_t{0xffff},
                                         static_cast<uint16_t>(c + 1), static_cast<uint16_t>(c - 1),
                                         static_cast<uint16_t>(~c), static_cast<uint16_t>(rng())}) {
                h[10] = static_cast<uint8_t>(field >> 8);
                h[11] = static_cast<uint8_t>(field);
                const bool want = folded_ok(h, ihl);
                (want ? right : wrong)++;
                ASSERT_EQ(wire::ipv4_header_sum_ok(h, ihl), want)
                    << "ihl " << ihl << " round " << round << " field " << field;
            }
        }
    }
    EXPECT_GT(right, 2200u);  // Each header's own checksum at least.
    EXPECT_GT(wrong, 4400u);
    const uint8_t zero[20] = {};
    EXPECT_FALSE(wire::ipv4_header_sum_ok(zero, 5));
}

// raw_sum() against DPDK's own sum, folded: every length 0..300 and jumbo lengths, every offset
// 0..3 (the loads are unaligned), random data, all-ones data (the 64-bit lanes' worst case) and a
// non-zero start as large as six pseudo-header sums (DPDK's 32-bit sum wraps, without the carry,
// when the start is near 2^32: no caller gives one); and zero only when DPDK's is. Each loop is
// also taken directly (the vector ones where the CPU has them), so that the dispatch's length
// threshold hides none.
TEST(Checksum, VectorisedSumEqualsDpdks) {
    std::mt19937 rng(7);
    std::vector<uint8_t> buf(9216 + 8);
    const auto folded = [](uint32_t s) { return wire::fold(s); };
    std::vector<size_t> lens;
    for (size_t n = 0; n <= 300; ++n) lens.push_back(n);
    for (size_t n : {1023u, 1024u, 1025u, 4155u, 4196u, 9000u, 9001u, 9216u}) lens.push_back(n);
    unsigned checked = 0;
    for (int fill = 0; fill < 3; ++fill) {
        for (auto& b : buf) b = fill == 0 ? static_cast<uint8_t>(rng()) : fill == 1 ? 0xff : 0;
        for (size_t off = 0; off < 4; ++off) {
            for (size_t n : lens) {
                for (uint32_t init : {0u, 0x1234u, 0x5fffau}) {
                    const uint8_t* p = buf.data() + off;
                    const uint32_t want = __rte_raw_cksum(p, n, init);
                    const uint32_t got = raw_sum(p, n, init);
                    ASSERT_EQ(folded(got), folded(want)) << "len " << n << " off " << off;
                    ASSERT_EQ(got == 0, want == 0) << "len " << n << " off " << off;
                    const uint32_t sc = raw_sum_scalar(p, n, init);
                    ASSERT_EQ(folded(sc), folded(want)) << "scalar len " << n << " off " << off;
                    ASSERT_EQ(sc == 0, want == 0) << "scalar len " << n << " off " << off;
                    if (raw_sum_loop() >= RawSumLoop::kAvx2) {
                        const uint32_t v = raw_sum_avx2(p, n, init);
                        ASSERT_EQ(folded(v), folded(want)) << "avx2 len " << n << " off " << off;
                        ASSERT_EQ(v == 0, want == 0) << "avx2 len " << n << " off " << off;
                    }
                    if (raw_sum_loop() >= RawSumLoop::kAvx512) {
                        const uint32_t v = raw_sum_avx512(p, n, init);
                        ASSERT_EQ(folded(v), folded(want)) << "avx512 len " << n << " off " << off;
                        ASSERT_EQ(v == 0, want == 0) << "avx512 len " << n << " off " << off;
                    }
                    ++checked;
                }
            }
        }
    }
    EXPECT_EQ(checked, 3u * 4u * (301u + 8u) * 3u);
}

// Data that ends where readable memory ends (the next page inaccessible): no loop reads past the
// last byte (the AVX-512 loop's last part chunk is a masked load, which does not fault on the
// bytes it leaves out), and each still sums right. Every length up to 300 and some longer ones.
TEST(Checksum, LoopsReadNothingPastTheData) {
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* m = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    auto* base = static_cast<uint8_t*>(m);
    ASSERT_EQ(mprotect(base + 3 * page, page, PROT_NONE), 0);
    uint8_t* const end = base + 3 * page;
    std::mt19937 rng(5);
    for (uint8_t* b = base; b != end; ++b) *b = static_cast<uint8_t>(rng());
    std::vector<size_t> lens;
    for (size_t n = 0; n <= 300; ++n) lens.push_back(n);
    for (size_t n : {1023u, 1025u, 4155u, 9001u}) lens.push_back(n);
    for (size_t n : lens) {
        const uint8_t* p = end - n;
        const uint16_t want = wire::fold(__rte_raw_cksum(p, n, 0));
        EXPECT_EQ(wire::fold(raw_sum(p, n, 0)), want) << "len " << n;
        EXPECT_EQ(wire::fold(raw_sum_scalar(p, n, 0)), want) << "scalar len " << n;
        if (raw_sum_loop() >= RawSumLoop::kAvx2) {
            EXPECT_EQ(wire::fold(raw_sum_avx2(p, n, 0)), want) << "avx2 len " << n;
        }
        if (raw_sum_loop() >= RawSumLoop::kAvx512) {
            EXPECT_EQ(wire::fold(raw_sum_avx512(p, n, 0)), want) << "avx512 len " << n;
        }
    }
    munmap(m, 4 * page);
}

// The loops over data longer than a block (64 KiB: the vector loops' biased 32-bit lanes are added
// up and cleared once a block), against an exact 64-bit sum of the 16-bit words (DPDK's 32-bit sum
// would wrap here): random, all-ones (every biased word +0x7fff, the lanes' largest) and all-zero
// data (every word -0x8000, their smallest), every offset 0..3.
TEST(Checksum, VectorLoopsSumDataLongerThanABlock) {
    std::mt19937 rng(11);
    std::vector<uint8_t> buf(3 * 65536 + 64);
    const auto exact = [](const uint8_t* p, size_t n) {
        uint64_t s = 0;
        for (size_t i = 0; i + 1 < n; i += 2) s += uint64_t{p[i]} | uint64_t{p[i + 1]} << 8;
        if (n & 1) s += p[n - 1];
        return wire::fold(wire::fold64(s));
    };
    unsigned checked = 0;
    for (int fill = 0; fill < 3; ++fill) {
        for (auto& b : buf) b = fill == 0 ? static_cast<uint8_t>(rng()) : fill == 1 ? 0xff : 0;
        for (size_t off = 0; off < 4; ++off) {
            for (size_t n : {65535u, 65536u, 65537u, 65568u, 131104u, 196608u + 31u}) {
                const uint8_t* p = buf.data() + off;
                const uint16_t want = exact(p, n);
                EXPECT_EQ(wire::fold(raw_sum(p, n, 0)), want) << "len " << n << " off " << off;
                EXPECT_EQ(wire::fold(raw_sum_scalar(p, n, 0)), want) << "scalar len " << n;
                if (raw_sum_loop() >= RawSumLoop::kAvx2) {
                    EXPECT_EQ(wire::fold(raw_sum_avx2(p, n, 0)), want) << "avx2 len " << n;
                }
                if (raw_sum_loop() >= RawSumLoop::kAvx512) {
                    EXPECT_EQ(wire::fold(raw_sum_avx512(p, n, 0)), want) << "avx512 len " << n;
                }
                ++checked;
            }
        }
    }
    EXPECT_EQ(checked, 3u * 4u * 6u);
}

TEST(Wire, Ipv6TrafficClassStraddlesBytes) {
    uint8_t h[4] = {0x6a, 0xbc, 0xde, 0xf1};  // TC 0xab, flow 0xcdef1.
    EXPECT_EQ(wire::ipv6_tclass(h), 0xab);
    wire::set_ipv6_tclass(h, 0x68);
    EXPECT_EQ(h[0], 0x66);
    EXPECT_EQ(h[1], 0x8c);
    EXPECT_EQ(h[2], 0xde);
    EXPECT_EQ(h[3], 0xf1);
}

TEST(Wire, EntropyPortRange) {
    EXPECT_EQ(entropy_port(0), 49152);
    EXPECT_EQ(entropy_port(0xffffffff), 65535);
    for (uint32_t h = 0; h < 100000; h += 7) {
        EXPECT_GE(entropy_port(h), 49152);
    }
}

}  // namespace
}  // namespace dscpgw
