#include "dataplane/cksum.h"

#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "dataplane/wire.h"

namespace dscpgw {

namespace {

// A namespace-scope initializer may run before libgcc's own CPU detection: run it first.
const bool kHasAvx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}();
const bool kHasAvx512 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0 && __builtin_cpu_supports("avx512bw") != 0;
}();

// The vector loops take 16-bit words with their top bit flipped (XOR 0x8000): each is then the
// signed number word − 0x8000, which VPMADDWD multiplies by one and adds in pairs into 32-bit
// lanes, three instructions per 32 bytes against four for 32-bit words widened into 64-bit lanes
// (AVX-512 VNNI's VPDPWSSD, which also adds, measured no faster). The bias is added back once a
// block: 0x8000 for every word. A lane gains at most 2 × 0x8000 in magnitude per chunk it takes,
// so a block of kBlock bytes cannot overflow it whatever the lanes' share.
constexpr size_t kChunk = 32;
constexpr size_t kWideChunk = 64;
constexpr size_t kBlock = size_t{1} << 16;

// The 16 words at `p`, biased, added in pairs into eight 32-bit lanes. VLDDQU: the release build's
// tuning (-march=corei7) has GCC split an unaligned 32-byte load (_mm256_loadu_si256) into two
// 16-byte loads and an insert, which cost the loop about a sixth of its time (4154 bytes 22 bytes
// past a line, in L1, on this VM's EPYC: 46 against 56 ns; 9000 bytes: 90 against 111).
__attribute__((target("avx2"))) inline __m256i pair_sums(const uint8_t* p) {
    const __m256i v = _mm256_lddqu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_madd_epi16(_mm256_xor_si256(v, _mm256_set1_epi16(INT16_MIN)),
                             _mm256_set1_epi16(1));
}

// The eight signed 32-bit lanes of `a`, added exactly.
__attribute__((target("avx2"))) inline int64_t lanes_sum(__m256i a) {
    const __m256i w = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_castsi256_si128(a)),
                                       _mm256_cvtepi32_epi64(_mm256_extracti128_si256(a, 1)));
    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    return _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
}

// The biased sum of `n` bytes (a multiple of kChunk, at most kBlock): two chunks a step into two
// accumulators (VPMADDWD's latency overlaps; the adds' chains are one cycle).
__attribute__((target("avx2"))) int64_t block_avx2(const uint8_t* p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0;
    size_t i = 0;
    for (; i + 2 * kChunk <= n; i += 2 * kChunk) {
        a0 = _mm256_add_epi32(a0, pair_sums(p + i));
        a1 = _mm256_add_epi32(a1, pair_sums(p + i + kChunk));
    }
    if (i < n) a0 = _mm256_add_epi32(a0, pair_sums(p + i));
    return lanes_sum(a0) + lanes_sum(a1);
}

// The 32 words of `v`, biased, added in pairs into sixteen 32-bit lanes.
__attribute__((target("avx512f,avx512bw"))) inline __m512i pair_sums512(__m512i v) {
    return _mm512_madd_epi16(_mm512_xor_si512(v, _mm512_set1_epi16(INT16_MIN)),
                             _mm512_set1_epi16(1));
}

// The sixteen signed 32-bit lanes of `a` and the sixteen of `b`, added exactly: sign-extended by
// GCC's vector shifts (GCC 12's widening, extracting and shifting intrinsics trip -Wuninitialized
// on their own headers, GCC bug 105593).
__attribute__((target("avx512f,avx512bw"))) inline int64_t lanes_sum(__m512i a, __m512i b) {
    using I64x8 = int64_t __attribute__((vector_size(64)));
    const auto x = reinterpret_cast<I64x8>(a);
    const auto y = reinterpret_cast<I64x8>(b);
    const I64x8 w = ((x << 32) >> 32) + (x >> 32) + ((y << 32) >> 32) + (y >> 32);
    int64_t s = 0;
    for (int i = 0; i < 8; ++i) s += w[i];
    return s;
}

// The same with 64-byte vectors: half the instructions a byte. On the development VM's EPYC
// (taken for Zen 4, which runs a 512-bit operation as two 256-bit halves) 4096 bytes in L1 took 80
// TSC cycles against the AVX2 loop's 100-109, 9000 bytes 173-177 against 209 (the instruction
// count, not the execution units, held the AVX2 loop back); on a Zen 5 host (family 0x1a,
// 512-bit units) BM_RawSum gave 4154 bytes 26 against 42 ns, 9000 bytes 49 against 94. `n`:
// at most kBlock, of any length: a last part chunk is one masked load, its missing bytes zeros
// (a mask also keeps the load from faulting past the data), so that the sum takes one reduction
// and no scalar tail. Returns the sum itself, the bias added back for every word of every chunk
// (a missing word's -0x8000 with the rest).
__attribute__((target("avx512f,avx512bw"))) int64_t block_avx512(const uint8_t* p, size_t n) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0;
    size_t i = 0;
    for (; i + 2 * kWideChunk <= n; i += 2 * kWideChunk) {
        a0 = _mm512_add_epi32(a0, pair_sums512(_mm512_loadu_si512(p + i)));
        a1 = _mm512_add_epi32(a1, pair_sums512(_mm512_loadu_si512(p + i + kWideChunk)));
    }
    if (i + kWideChunk <= n) {
        a0 = _mm512_add_epi32(a0, pair_sums512(_mm512_loadu_si512(p + i)));
        i += kWideChunk;
    }
    if (i < n) {
        const __mmask64 k = _cvtu64_mask64(~uint64_t{0} >> (kWideChunk - (n - i)));
        a1 = _mm512_add_epi32(a1, pair_sums512(_mm512_maskz_loadu_epi8(k, p + i)));
        i += kWideChunk;
    }
    return lanes_sum(a0, a1) + int64_t{0x8000} * static_cast<int64_t>(i / 2);
}

// Adds the whole chunks of `chunk` bytes at `p` (at most `len`) to `s` through `block`, a block at
// a time, the bias added back; returns how many bytes it took.
template <size_t chunk, typename Block>
inline size_t add_blocks(const uint8_t* p, size_t len, uint64_t& s, Block block) {
    size_t i = 0;
    while (len - i >= chunk) {
        const size_t n = std::min(kBlock, (len - i) / chunk * chunk);
        s += static_cast<uint64_t>(block(p + i, n) + int64_t{0x8000} * static_cast<int64_t>(n / 2));
        i += n;
    }
    return i;
}

// `a` + `b` in one's complement (the carry out added back in).
inline uint64_t add1c(uint64_t a, uint64_t b) {
    a += b;
    return a + (a < b);
}

// The `len` bytes at `p` added to `s` as 64-bit words in one's complement (2^64 and 2^16 are both
// 1 modulo 0xffff: the folded value is the 16-bit words' sum), sixteen bytes a step in two
// chains; then a four- and a two-byte word and an odd last byte as the low byte, as DPDK's loop
// takes it. Zero only for zero data and a zero `s`.
inline uint64_t add_scalar(const uint8_t* p, size_t len, uint64_t s) {
    uint64_t t = 0;
    size_t i = 0;
    for (; i + 16 <= len; i += 16) {
        uint64_t v, w;
        std::memcpy(&v, p + i, sizeof v);
        std::memcpy(&w, p + i + 8, sizeof w);
        s = add1c(s, v);
        t = add1c(t, w);
    }
    if (i + 8 <= len) {
        uint64_t v;
        std::memcpy(&v, p + i, sizeof v);
        t = add1c(t, v);
        i += 8;
    }
    if (i + 4 <= len) {
        uint32_t v;
        std::memcpy(&v, p + i, sizeof v);
        t = add1c(t, v);
        i += 4;
    }
    if (i + 2 <= len) {
        uint16_t v;
        std::memcpy(&v, p + i, sizeof v);
        t = add1c(t, v);
        i += 2;
    }
    if (i < len) t = add1c(t, p[i]);
    return add1c(s, t);
}

}  // namespace

uint32_t raw_sum_scalar(const uint8_t* p, size_t len, uint32_t sum) {
    return wire::fold64(add_scalar(p, len, sum));
}

// The whole chunks through block_avx2(), a block at a time, the bias added back; the tail (under
// 32 bytes) through the scalar loop. (Its whole dwords as one VPMASKMOVD load, the way the
// AVX-512 loop takes its tail, measured slower on the Zen 5 host: BM_RawSum arg 1 at 90 / 1082 /
// 4154 bytes 12.0 / 28.6 / 83.3 ns against 9.2 / 25.1 / 79.7, three rounds alternated.)
uint32_t raw_sum_avx2(const uint8_t* p, size_t len, uint32_t sum) {
    uint64_t s = sum;
    const size_t i = add_blocks<kChunk>(p, len, s, block_avx2);
    return wire::fold64(add_scalar(p + i, len - i, s));
}

// Through block_avx512(), a block at a time, the tail with the block.
uint32_t raw_sum_avx512(const uint8_t* p, size_t len, uint32_t sum) {
    uint64_t s = sum;
    for (size_t i = 0; i < len; i += kBlock)
        s += static_cast<uint64_t>(block_avx512(p + i, std::min(kBlock, len - i)));
    return wire::fold64(s);
}

uint32_t raw_sum(const uint8_t* p, size_t len, uint32_t sum) {
    if (len >= 128) {
        if (kHasAvx512) return raw_sum_avx512(p, len, sum);
        if (kHasAvx2) return raw_sum_avx2(p, len, sum);
    }
    return raw_sum_scalar(p, len, sum);
}

RawSumLoop raw_sum_loop() {
    return kHasAvx512 ? RawSumLoop::kAvx512 : kHasAvx2 ? RawSumLoop::kAvx2 : RawSumLoop::kScalar;
}

}  // namespace dscpgw
