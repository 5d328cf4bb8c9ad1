#include "dataplane/cksum.h"

#include <immintrin.h>
#include <rte_ip.h>

#include "dataplane/wire.h"

namespace dscpgw {

namespace {

// A namespace-scope initializer may run before libgcc's own CPU detection: run it first.
const bool kHasAvx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}();

}  // namespace

// 32-bit little-endian words summed exactly into 64-bit lanes: a 32-bit word is its two 16-bit
// words' sum modulo 0xffff, so the folded result is DPDK's 16-bit sum. Two 32-byte loads a step
// into four accumulators; the tail (under 64 bytes, at an even offset) through DPDK's loop.
__attribute__((target("avx2"))) uint32_t raw_sum_avx2(const uint8_t* p, size_t len, uint32_t sum) {
    const __m256i zero = _mm256_setzero_si256();
    __m256i a0 = zero, a1 = zero, a2 = zero, a3 = zero;
    size_t i = 0;
    for (; i + 64 <= len; i += 64) {
        const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
        const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32));
        a0 = _mm256_add_epi64(a0, _mm256_unpacklo_epi32(v0, zero));
        a1 = _mm256_add_epi64(a1, _mm256_unpackhi_epi32(v0, zero));
        a2 = _mm256_add_epi64(a2, _mm256_unpacklo_epi32(v1, zero));
        a3 = _mm256_add_epi64(a3, _mm256_unpackhi_epi32(v1, zero));
    }
    const __m256i t = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    uint64_t s = static_cast<uint64_t>(_mm_cvtsi128_si64(h)) +
                 static_cast<uint64_t>(_mm_extract_epi64(h, 1)) + sum;
    if (i < len) s += __rte_raw_cksum(p + i, len - i, 0);
    return wire::fold64(s);
}

uint32_t raw_sum(const uint8_t* p, size_t len, uint32_t sum) {
    if (kHasAvx2 && len >= 128) return raw_sum_avx2(p, len, sum);
    return __rte_raw_cksum(p, len, sum);
}

bool raw_sum_vectorised() { return kHasAvx2; }

}  // namespace dscpgw
