// The one's-complement sum of long data (the outer IPv6 UDP checksum of a tunnelled frame, summed
// on encap when the device does not offload it, and verified on decap when the device gave no
// verdict): 32 bytes a step with AVX2 where the CPU has it (checked once), else DPDK's sum.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dscpgw {

// Adds the `len` bytes at `p` to `sum` as DPDK's __rte_raw_cksum() does (16-bit words in host
// order, an odd last byte as the low byte). The result is not bit-equal to DPDK's but the same
// one's-complement number: folded to 16 bits it is equal, and it is zero only when DPDK's is.
uint32_t raw_sum(const uint8_t* p, size_t len, uint32_t sum);

// Whether raw_sum() takes the AVX2 loop on this CPU (for the benchmarks' header).
bool raw_sum_vectorised();

// The AVX2 loop itself, for the unit test on CPUs that have it; any length.
uint32_t raw_sum_avx2(const uint8_t* p, size_t len, uint32_t sum);

}  // namespace dscpgw
