// The one's-complement sum of long data (the outer IPv6 UDP checksum of a tunnelled frame, summed
// on encap when the device does not offload it, and verified on decap when the device gave no
// verdict): 64 bytes a step with AVX-512BW, else 32 with AVX2, where the CPU has them (checked
// once), else, and for short data, eight bytes a step in a 64-bit sum.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dscpgw {

// Adds the `len` bytes at `p` to `sum` as DPDK's __rte_raw_cksum() does (16-bit words in host
// order, an odd last byte as the low byte). The result is not bit-equal to DPDK's but the same
// one's-complement number: folded to 16 bits it is equal, and it is zero only when DPDK's is.
uint32_t raw_sum(const uint8_t* p, size_t len, uint32_t sum);

// Which loop raw_sum() takes on this CPU from 128 bytes on (the benchmark, the tests); shorter
// data, and the AVX2 loop's tail, take the scalar loop (the AVX-512 loop takes its own tail).
enum class RawSumLoop : uint8_t { kScalar, kAvx2, kAvx512 };
RawSumLoop raw_sum_loop();

// The loops themselves, for the unit tests (the vector ones on CPUs that have them); any length.
uint32_t raw_sum_scalar(const uint8_t* p, size_t len, uint32_t sum);
uint32_t raw_sum_avx2(const uint8_t* p, size_t len, uint32_t sum);
uint32_t raw_sum_avx512(const uint8_t* p, size_t len, uint32_t sum);

}  // namespace dscpgw
