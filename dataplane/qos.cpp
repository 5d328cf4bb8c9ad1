#include "dataplane/qos.h"

#include <string>

namespace dscpgw {

namespace {
__extension__ typedef unsigned __int128 u128;
}

bool policer_init(PolicerState& st, const PolicerConf& p, std::string& why) {
    st.mode = p.mode;
    st.started = false;
    st.last = 0;
    int rc;
    // rte_meter counts bytes per second; the config's rates are bits.
    if (p.mode == MeterMode::trtcm) {
        rte_meter_trtcm_params tp{p.cir / 8, p.pir / 8, p.cbs, p.pbs};
        rc = rte_meter_trtcm_profile_config(&st.trp, &tp);
        if (rc == 0) rc = rte_meter_trtcm_config(&st.tr, &st.trp);
    } else {
        rte_meter_srtcm_params sp{p.cir / 8, p.cbs, p.pbs};
        rc = rte_meter_srtcm_profile_config(&st.srp, &sp);
        if (rc == 0) rc = rte_meter_srtcm_config(&st.sr, &st.srp);
    }
    if (rc != 0)
        why =
            "policer \"" + p.name + "\": rte_meter refuses its rates (" + std::to_string(rc) + ")";
    return rc == 0;
}

size_t carry_meters(const Snapshot& from, Snapshot& to) {
    size_t kept = 0;
    for (size_t i = 0; i < to.policers.size(); ++i) {
        const PolicerConf& t = to.policers[i];
        for (size_t j = 0; j < from.policers.size(); ++j) {
            const PolicerConf& f = from.policers[j];
            if (f.name == t.name && f.mode == t.mode && f.cir == t.cir && f.pir == t.pir &&
                f.cbs == t.cbs && f.pbs == t.pbs) {
                to.meters[i] = from.meters[j];
                ++kept;
                break;  // Names are unique.
            }
        }
    }
    return kept;
}

FlowRates::FlowRates(uint32_t entries, uint64_t hz) {
    uint32_t n = kWays;
    while (n < entries) n <<= 1;
    size_ = n;
    slots_ = std::make_unique<RateSlot[]>(n);
    window_ = hz * kRateWindowMs / 1000;
    if (window_ == 0) window_ = 1;
    per_second_ = hz;
}

void FlowRates::update(uint64_t tag, uint64_t now, uint32_t len, uint64_t& pps, uint64_t& bps) {
    RateSlot* set = &slots_[(static_cast<uint32_t>(tag) * kWays) & (size_ - 1)];
    RateSlot* s = nullptr;
    RateSlot* victim = &set[0];
    for (unsigned w = 0; w < kWays; ++w) {
        if (set[w].tag == tag) {
            s = &set[w];
            break;
        }
        if (set[w].tag == 0 || (victim->tag != 0 && set[w].last < victim->last)) victim = &set[w];
    }
    if (s == nullptr) {
        s = victim;
        *s = RateSlot{tag, now, now, 0, 0, 0, 0};
    }
    if (now < s->win_start) now = s->win_start;  // A clock that went back (a capture's): no rewind.
    const uint64_t since = now - s->win_start;
    if (since >= window_) {
        const bool adjacent = since < 2 * window_;
        s->prev_pkts = adjacent ? s->cur_pkts : 0;
        s->prev_bytes = adjacent ? s->cur_bytes : 0;
        s->cur_pkts = s->cur_bytes = 0;
        s->win_start = now - since % window_;
    }
    s->last = now;
    ++s->cur_pkts;
    s->cur_bytes += len;
    const uint64_t e = now - s->win_start, rest = window_ - e;
    // Packets (bytes) in the last window, then per second (128-bit products: no overflow).
    const u128 pk = static_cast<u128>(s->prev_pkts) * rest / window_ + s->cur_pkts;
    const u128 by = static_cast<u128>(s->prev_bytes) * rest / window_ + s->cur_bytes;
    pps = static_cast<uint64_t>(pk * per_second_ / window_);
    bps = static_cast<uint64_t>(by * 8 * per_second_ / window_);
}

}  // namespace dscpgw
