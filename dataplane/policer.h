// A policer's shared meter: RFC 2698 (trtcm) or RFC 2697 (srtcm) from rte_meter, behind a lock so
// that one bucket pair sees every worker's packets (dataplane/qos.h has the rest of the QoS stage).
#pragma once

#include <rte_meter.h>
#include <rte_pause.h>

#include <atomic>
#include <cstdint>

#include "dataplane/snapshot.h"

namespace dscpgw {

// One policer's meter, shared by every worker: an aggregate rate is exact only when one bucket
// pair sees all of its packets, whatever RSS does with the flows. A spinlock around rte_meter's
// check (tens of nanoseconds held) keeps the buckets and their clock consistent; time never runs
// backwards under it (a worker whose burst started earlier than the last update is charged at the
// last update's time, not refunded tokens by an unsigned wrap). The lock is a std::atomic_flag
// rather than rte_spinlock_t: on x86 DPDK 22.11 takes that lock in inline assembly, which
// ThreadSanitizer cannot see, so the TSan run would report the buckets as raced (it did).
struct alignas(64) PolicerState {
    std::atomic_flag lock = ATOMIC_FLAG_INIT;
    bool started = false;  // The buckets start full at the first packet's time.
    uint64_t last = 0;     // The latest time the meter was run at.
    MeterMode mode = MeterMode::trtcm;
    rte_meter_trtcm tr{};
    rte_meter_srtcm sr{};
    rte_meter_trtcm_profile trp{};
    rte_meter_srtcm_profile srp{};
};

// The colour of a packet of `len` bytes (its IP length) at `now` (TSC units), `in` the colour it
// arrived with (kGreen when the policer is colour-blind).
inline Colour police(PolicerState& st, uint64_t now, uint32_t len, Colour in, bool colour_aware) {
    while (st.lock.test_and_set(std::memory_order_acquire))
        while (st.lock.test(std::memory_order_relaxed)) rte_pause();
    if (!st.started) {
        st.started = true;
        st.last = now;
        st.tr.time_tc = st.tr.time_tp = now;
        st.sr.time = now;
    }
    if (now < st.last) now = st.last;
    st.last = now;
    rte_color c;
    if (st.mode == MeterMode::trtcm)
        c = colour_aware ? rte_meter_trtcm_color_aware_check(&st.tr, &st.trp, now, len,
                                                             static_cast<rte_color>(in))
                         : rte_meter_trtcm_color_blind_check(&st.tr, &st.trp, now, len);
    else
        c = colour_aware ? rte_meter_srtcm_color_aware_check(&st.sr, &st.srp, now, len,
                                                             static_cast<rte_color>(in))
                         : rte_meter_srtcm_color_blind_check(&st.sr, &st.srp, now, len);
    st.lock.clear(std::memory_order_release);
    return static_cast<Colour>(c);
}

}  // namespace dscpgw
