// libFuzzer target over both directions of the packet path. The first input byte picks the port
// (bit 0: inner or outer), the headroom (bits 1-6, times two) and the LAN mode (bit 7: transparent
// or routed); the rest is the frame. Built with ASan and UBSan, so any read
// past the frame or the buffer, or any undefined behaviour, stops the run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "dataplane/local.h"
#include "dataplane/pipeline.h"
#include "gateway/eal.h"
#include "tests/common/dataplane_fixture.h"

namespace {

const dscpgw::Snapshot* g_snaps[2] = {};  // Transparent LAN, routed LAN.

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::string err;
    if (!dscpgw::eal_init(dscpgw::eal_args_offline(), err)) {
        std::fprintf(stderr, "%s\n", err.c_str());
        std::abort();
    }
    g_snaps[0] = dscpgw::test::wide_snapshot(false).release();
    g_snaps[1] = dscpgw::test::wide_snapshot(true).release();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1 || size > 16384) return 0;
    const uint16_t port = data[0] & 1;
    const dscpgw::Snapshot* g_snap = g_snaps[data[0] >> 7];
    // Headroom from 0 to 126 bytes: encapsulation must never write before the buffer.
    const uint32_t headroom = ((data[0] >> 1) & 0x3f) * 2u;
    const size_t len = size - 1;
    // An exactly sized heap buffer, so ASan sees any access outside [buffer, buffer + headroom +
    // len).
    std::unique_ptr<uint8_t[]> buf(new uint8_t[headroom + len]);
    std::memcpy(buf.get() + headroom, data + 1, len);
    dscpgw::Frame f{buf.get() + headroom, static_cast<uint32_t>(len), headroom};
    dscpgw::Verdict v = dscpgw::process_packet(*g_snap, port, f);
    if (v.pmtu != 0) {
        // The ICMP error is built in the same buffer, as the burst glue does.
        const dscpgw::PortConf& p = g_snap->ports[port];
        f = dscpgw::Frame{buf.get() + headroom, static_cast<uint32_t>(len), headroom};
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
    }
    return 0;
}
