// The control plane's EAL-free parts: counters kept per name across reloads, the RoCE flow table
// and its aggregation, the Prometheus families, and the control socket.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "control/flows.h"
#include "control/log.h"
#include "control/metrics.h"
#include "control/render.h"
#include "control/report.h"
#include "control/sdnotify.h"
#include "control/socket.h"
#include "control/trace.h"
#include "tests/unit/builder.h"

namespace dscpgw {
namespace {

std::unique_ptr<Snapshot> snap_with(std::vector<std::string> classes,
                                    std::vector<std::string> tunnels, uint8_t bank) {
    auto s = std::make_unique<Snapshot>();
    s->bank = bank;
    for (auto& c : classes) {
        ClassRule r;
        r.name = c;
        s->classes.push_back(r);
    }
    for (auto& t : tunnels) {
        TunnelConf tc;
        tc.name = t;
        s->tunnels.push_back(tc);
    }
    PortConf p;
    p.name = "lan";
    s->ports.push_back(p);
    return s;
}

// A reload moves "y" from index 1 to index 0 and drops "x": its counters follow the name, none
// are lost or double-counted, and the retired bank is cleared for the snapshot after next.
TEST(NamedTotals, CountersFollowNamesAcrossReloads) {
    auto w0 = std::make_unique<WorkerStats>(), w1 = std::make_unique<WorkerStats>();
    std::vector<WorkerStats*> ws{w0.get(), w1.get()};
    const std::vector<const WorkerStats*> cws{w0.get(), w1.get()};
    auto a = snap_with({"x", "y"}, {"t1", "t2"}, 0);
    w0->bank[0].cls[ClassCounter::packets][0].add(5);
    w1->bank[0].cls[ClassCounter::packets][1].add(7);
    w1->bank[0].cls[ClassCounter::bytes][1].add(700);
    w0->bank[0].cls[ClassCounter::packets][kNoClass].add(3);
    w0->bank[0].tunnel[TunnelCounter::encap_packets][1].add(11);
    w1->bank[0].tunnel[TunnelCounter::cnp_decap][1].add(2);
    NamedTotals t;
    EXPECT_EQ(t.classes(*a, cws)[1][0], 7u);
    auto b = snap_with({"y", "z"}, {"t2"}, 1);
    t.fold(*a, ws);
    for (WorkerStats* w : ws) {
        EXPECT_EQ(w->bank[0].cls[ClassCounter::packets][0].get(), 0u);
        EXPECT_EQ(w->bank[0].cls[ClassCounter::packets][1].get(), 0u);
        EXPECT_EQ(w->bank[0].tunnel[TunnelCounter::encap_packets][1].get(), 0u);
    }
    w0->bank[1].cls[ClassCounter::packets][0].add(2);
    w0->bank[1].cls[ClassCounter::bytes][0].add(200);
    w0->bank[1].tunnel[TunnelCounter::encap_packets][0].add(1);
    const auto c = t.classes(*b, cws);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0][0], 9u);  // y: 7 before the reload, 2 after.
    EXPECT_EQ(c[0][1], 900u);
    EXPECT_EQ(c[1][0], 0u);  // z: new.
    EXPECT_EQ(t.unclassified(*b, cws)[0], 3u);
    const auto tt = t.tunnels(*b, cws);
    ASSERT_EQ(tt.size(), 1u);
    EXPECT_EQ(tt[0][TunnelCounter::encap_packets], 12u);
    EXPECT_EQ(tt[0][TunnelCounter::cnp_decap], 2u);
    // "x" comes back in a later reload: it continues from where it was.
    auto c2 = snap_with({"x"}, {}, 0);
    t.fold(*b, ws);
    EXPECT_EQ(t.classes(*c2, cws)[0][0], 5u);
}

FlowKey key(uint8_t last, uint32_t qp) {
    FlowKey k;
    k.family = 4;
    k.src[0] = 10;
    k.src[3] = last;
    k.dst[0] = 10;
    k.dst[3] = 200;
    k.dqp = qp;
    return k;
}

TEST(FlowTable, CountsAndEvictsTheLongestIdle) {
    FlowTable ft(4);  // One set of four ways.
    ASSERT_EQ(ft.size(), 4u);
    for (uint8_t i = 1; i <= 4; ++i)
        ft.update(key(i, 7), 0, false, 1, 100, (false) ? 1 : 0, i * 10);
    ft.update(key(1, 7), 0, false, 1, 100, (true) ? 1 : 0, 50);  // 1 is now the most recent.
    ft.update(key(5, 7), 1, true, 1, 60, (false) ? 1 : 0, 60);   // Evicts 2, idle since 20.
    EXPECT_EQ(ft.evictions(), 1u);
    std::set<uint8_t> present;
    for (uint32_t i = 0; i < ft.size(); ++i) {
        FlowSample s;
        ASSERT_TRUE(ft.read(i, s));
        present.insert(s.key.src[3]);
        if (s.key.src[3] == 1) {
            EXPECT_EQ(s.pkts, 2u);
            EXPECT_EQ(s.bytes, 200u);
            EXPECT_EQ(s.cnps, 1u);
        }
        if (s.key.src[3] == 5) {
            EXPECT_EQ(s.pkts, 1u);
            EXPECT_TRUE(s.decap);
            EXPECT_EQ(s.tunnel, 1);
        }
    }
    EXPECT_EQ(present, (std::set<uint8_t>{1, 3, 4, 5}));
}

TEST(FlowTable, BoundedWhateverTheTraffic) {
    FlowTable ft(100);
    ASSERT_EQ(ft.size(), 128u);  // Rounded up to a power of two.
    for (uint32_t i = 0; i < 20000; ++i)
        ft.update(key(static_cast<uint8_t>(i), i), 0, false, 1, 64, (false) ? 1 : 0, i);
    uint32_t used = 0;
    for (uint32_t i = 0; i < ft.size(); ++i) {
        FlowSample s;
        used += ft.read(i, s);
    }
    EXPECT_EQ(used, 128u);
    EXPECT_EQ(ft.evictions(), 20000u - 128u);
}

// The worker rewrites slots while the control thread reads them: every key read is one the worker
// wrote, never a mix of two (the ThreadSanitizer run of the unit tests also holds the reads to be
// free of data races).
TEST(FlowTable, ConcurrentReaderSeesWholeKeys) {
    FlowTable ft(8);
    std::atomic<bool> done{false};
    std::atomic<uint64_t> reads{0};
    uint64_t torn = 0;
    // The worker goes on writing until the reader has read a good many slots, so that the two
    // overlap however the scheduler places them (on a loaded two-core CI machine the worker could
    // otherwise finish its 200000 writes before the reader first ran).
    std::thread worker([&] {
        for (uint32_t i = 0; i < 200000 || reads.load(std::memory_order_relaxed) < 10000; ++i) {
            FlowKey k = key(static_cast<uint8_t>(i), i & 0xffffff);
            k.family = 6;  // All five words of the stored key carry something.
            std::memset(k.dst, static_cast<int>(i & 0xff), sizeof k.dst);  // Derived from dqp.
            ft.update(k, 0, false, 1, 64, 0, i);
        }
        done.store(true);
    });
    while (!done.load()) {
        for (uint32_t i = 0; i < ft.size(); ++i) {
            FlowSample s;
            if (!ft.read(i, s)) continue;
            reads.fetch_add(1, std::memory_order_relaxed);
            bool whole = s.key.src[3] == static_cast<uint8_t>(s.key.dqp);
            for (const uint8_t b : s.key.dst) whole = whole && b == static_cast<uint8_t>(s.key.dqp);
            torn +=
                !whole;  // Counted, not asserted: returning here would leave the worker running.
        }
    }
    worker.join();
    EXPECT_EQ(torn, 0u) << "torn keys";
    EXPECT_GE(reads.load(), 10000u);
}

// The worker's path: conversations read from the IP header and BTH as they lie in the frame,
// consecutive packets of one accumulated before they reach the table.
TEST(FlowTable, AddsFromHeadersInRuns) {
    uint8_t v4[20] = {0x45, 0, 0, 100, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 5, 10, 0, 0, 9};
    uint8_t v6[40] = {0x60, 0, 0, 0, 0, 60, 17, 64};
    for (int i = 0; i < 16; ++i) {
        v6[8 + i] = static_cast<uint8_t>(i == 0 ? 0xfd : i == 15 ? 5 : 0);
        v6[24 + i] = static_cast<uint8_t>(i == 0 ? 0xfd : i == 15 ? 9 : 0);
    }
    uint8_t data[12] = {0x04, 0, 0xff, 0xff, 0, 0x00, 0x00, 0x12};
    uint8_t cnp[12] = {0x81, 0, 0xff, 0xff, 0, 0x00, 0x00, 0x52};
    FlowTable ft(64);
    FlowRuns run;  // 0x12 and 0x52 share an entry: they take turns.
    for (int i = 0; i < 3; ++i) ft.add(run, v4, data, 2, false, false, 10);
    ft.add(run, v4, cnp, 2, false, true, 11);
    ft.add(run, v6, data, 2, true, false, 12);
    ft.add(run, v6, data, 2, true, false, 12);
    ft.add(run, v4, data, 2, false, false,
           13);  // The first conversation again: merged in the table.
    ft.flush(run, 13);
    ft.flush(run, 14);  // Nothing left: no effect.
    std::map<std::pair<uint32_t, uint32_t>, FlowSample> got;
    for (uint32_t i = 0; i < ft.size(); ++i) {
        FlowSample fs;
        if (ft.read(i, fs)) got[{fs.key.family, fs.key.dqp}] = fs;
    }
    ASSERT_EQ(got.size(), 3u);
    const FlowSample& d4 = got[{4, 0x12}];
    EXPECT_EQ(d4.pkts, 4u);
    EXPECT_EQ(d4.bytes, 400u);
    EXPECT_EQ(d4.cnps, 0u);
    EXPECT_EQ(d4.tunnel, 2);
    EXPECT_EQ(d4.last_tsc, 13u);
    EXPECT_EQ(d4.key.src[0], 10);
    EXPECT_EQ(d4.key.dst[3], 9);
    EXPECT_EQ((got[{4, 0x52}].cnps), 1u);
    const FlowSample& d6 = got[{6, 0x12}];
    EXPECT_EQ(d6.pkts, 2u);
    EXPECT_EQ(d6.bytes, 200u);
    EXPECT_TRUE(d6.decap);
    EXPECT_EQ(d6.key.src[15], 5);
    EXPECT_EQ(d6.key.dst[15], 9);
    // The key read back, given to update(), is the conversation the headers made: no new slot.
    ft.update(d4.key, 2, false, 1, 100, 0, 20);
    ft.update(d6.key, 2, true, 1, 100, 0, 20);
    std::map<std::pair<uint32_t, uint32_t>, FlowSample> again;
    for (uint32_t i = 0; i < ft.size(); ++i) {
        FlowSample fs;
        if (ft.read(i, fs)) again[{fs.key.family, fs.key.dqp}] = fs;
    }
    ASSERT_EQ(again.size(), 3u);
    EXPECT_EQ((again[{4, 0x12}].pkts), 5u);
    EXPECT_EQ((again[{6, 0x12}].pkts), 3u);
    EXPECT_EQ(ft.evictions(), 0u);
}

// Queue pairs interleaved packet by packet, more of them than FlowRuns has entries (QPs 16 apart
// share one): every packet counted once, in its own conversation, whatever the order.
TEST(FlowTable, InterleavedQueuePairsEachCountedOnce) {
    uint8_t v4[20] = {0x45, 0, 0, 100, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 5, 10, 0, 0, 9};
    FlowTable ft(256);
    FlowRuns runs;
    constexpr int kQps = 24, kRounds = 7;
    for (int r = 0; r < kRounds; ++r) {
        for (int q = 0; q < kQps; ++q) {
            uint8_t bth[12] = {0x04, 0, 0xff, 0xff, 0, 0x01, 0x00, static_cast<uint8_t>(q)};
            v4[19] = static_cast<uint8_t>(9 + (q & 1));  // Two destinations as well.
            ft.add(runs, v4, bth, 0, false, false, 100 + static_cast<uint64_t>(r));
        }
        if (r % 3 == 2) ft.flush(runs, 100 + static_cast<uint64_t>(r));  // A burst's end.
    }
    ft.flush(runs, 200);
    std::map<uint32_t, FlowSample> got;
    for (uint32_t i = 0; i < ft.size(); ++i) {
        FlowSample fs;
        if (ft.read(i, fs)) {
            EXPECT_TRUE(got.emplace(fs.key.dqp, fs).second) << "one slot per conversation";
            EXPECT_EQ(fs.key.dst[3], 9 + (fs.key.dqp & 1));
        }
    }
    ASSERT_EQ(got.size(), static_cast<size_t>(kQps));
    for (const auto& [qp, fs] : got) {
        EXPECT_EQ(qp >> 8, 0x100u);
        EXPECT_EQ(fs.pkts, static_cast<uint64_t>(kRounds)) << "QP " << qp;
        EXPECT_EQ(fs.bytes, 100u * kRounds);
    }
    EXPECT_EQ(ft.evictions(), 0u);
}

TEST(FlowAggregator, MergesWorkersAndComputesRates) {
    FlowTable a(64), b(64);
    const uint64_t hz = 1000;
    for (int i = 0; i < 10; ++i) a.update(key(1, 9), 0, false, 1, 100, (i < 2) ? 1 : 0, 1);
    for (int i = 0; i < 5; ++i) b.update(key(1, 9), 0, false, 1, 100, (false) ? 1 : 0, 1);
    FlowAggregator agg;
    agg.sample({&a, &b}, 1000, hz);
    for (int i = 0; i < 30; ++i) a.update(key(1, 9), 0, false, 1, 100, (true) ? 1 : 0, 1500);
    agg.sample({&a, &b}, 3000, hz);  // Two seconds later.
    auto s = snap_with({}, {"cloud"}, 0);
    const auto fr = agg.report(*s);
    ASSERT_EQ(fr.size(), 1u);
    EXPECT_EQ(fr[0].pkts, 45u);
    EXPECT_EQ(fr[0].cnps, 32u);
    EXPECT_EQ(fr[0].tunnel, "cloud");
    EXPECT_DOUBLE_EQ(fr[0].pps, 15.0);
    EXPECT_DOUBLE_EQ(fr[0].cnps_per_s, 15.0);
    EXPECT_DOUBLE_EQ(fr[0].idle_s, 1.5);
    EXPECT_EQ(fr[0].src, "10.0.0.1");
    EXPECT_EQ(fr[0].dqp, 9u);
}

TEST(Metrics, EveryDropReasonAndConventionalNames) {
    auto s = snap_with({"roce-cnp"}, {"az1"}, 0);
    auto w = std::make_unique<WorkerStats>();
    w->drops[static_cast<size_t>(DropReason::no_route)].add(4);
    w->bank[0].cls[ClassCounter::packets][0].add(3);
    Report r;
    fill_counters(r, *s, NamedTotals{}, {w.get()});
    r.version = "t";
    const auto fams = metric_families(r);
    const std::string text = prometheus::TextSerializer().Serialize(fams);
    for (size_t d = 1; d < kDropReasonCount; ++d)
        EXPECT_NE(text.find("dscpgw_drops_total{reason=\"" + std::string(kDropReasonInfo[d].name) +
                            "\"}"),
                  std::string::npos)
            << kDropReasonInfo[d].name;
    EXPECT_NE(text.find("dscpgw_drops_total{reason=\"no_route\"} 4\n"), std::string::npos);
    EXPECT_NE(text.find("dscpgw_class_packets_total{class=\"roce-cnp\"} 3\n"), std::string::npos);
    std::set<std::string> names;
    for (const auto& f : fams) {
        EXPECT_EQ(f.name.rfind("dscpgw_", 0), 0u) << f.name;
        EXPECT_TRUE(names.insert(f.name).second) << "family twice: " << f.name;
        const bool total = f.name.size() > 6 && f.name.substr(f.name.size() - 6) == "_total";
        EXPECT_EQ(total, f.type == prometheus::MetricType::Counter) << f.name;
        EXPECT_FALSE(f.help.empty()) << f.name;
    }
}

// Clients that connect and say nothing, or trickle a byte at a time, delay no other client and
// never keep serve() from returning to the control thread's periodic work.
TEST(ControlSocket, IdleAndTricklingClientsDelayNoOne) {
    char tmpl[] = "/tmp/dscpgw-ctl-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string path = std::string(tmpl) + "/g.sock";
    ControlServer srv(path);
    std::atomic<bool> stop{false};
    std::atomic<int> rounds{0};
    std::thread server([&] {
        while (!stop) {
            srv.serve(20, [](const std::string& req, bool&) { return "got [" + req + "]\n"; });
            ++rounds;
        }
    });
    const auto connect_to = [&] {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
        EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
        return fd;
    };
    std::vector<int> idle;
    for (int i = 0; i < 20; ++i) idle.push_back(connect_to());
    std::atomic<bool> trickling{true};
    std::thread trickler([&] {
        const int fd = connect_to();
        while (trickling) {
            (void)::send(fd, "s", 1, MSG_NOSIGNAL);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        ::close(fd);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int rounds_before = rounds;
    const auto t0 = std::chrono::steady_clock::now();
    std::string body;
    EXPECT_EQ(control_request(path, "status", body), 0);
    EXPECT_EQ(body, "got [status]\n");
    const auto took = std::chrono::steady_clock::now() - t0;
    // Before, each silent client held the server for a second in turn: 20 s here.
    EXPECT_LT(took, std::chrono::milliseconds(900));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_GE(rounds - rounds_before, 5) << "serve() keeps returning for periodic work";
    trickling = false;
    trickler.join();
    for (const int fd : idle) ::close(fd);
    stop = true;
    server.join();
}

TEST(ControlSocket, RequestReplyErrorsAndPermissions) {
    char tmpl[] = "/tmp/dscpgw-ctl-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string dir = std::string(tmpl) + "/sub";  // Created by the server, mode 0700.
    const std::string path = dir + "/g.sock";
    std::string body;
    EXPECT_EQ(control_request(path, "status", body), 1);
    EXPECT_NE(body.find("no gateway is running"), std::string::npos) << body;
    {
        ControlServer srv(path);
        struct stat st {};
        ASSERT_EQ(stat(path.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0600u);
        ASSERT_EQ(stat(dir.c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0700u);
        EXPECT_THROW(ControlServer second(path), std::runtime_error);  // Someone answers there.
        std::atomic<bool> stop{false};
        std::thread t([&] {
            while (!stop)
                srv.serve(20, [](const std::string& req, bool& ok) {
                    ok = req != "bad";
                    return "got [" + req + "]\n";
                });
        });
        EXPECT_EQ(control_request(path, "stats --json", body), 0);
        EXPECT_EQ(body, "got [stats --json]\n");
        EXPECT_EQ(control_request(path, "bad", body), 1);
        EXPECT_EQ(body, "got [bad]\n");
        stop = true;
        t.join();
    }
    struct stat st {};
    EXPECT_NE(stat(path.c_str(), &st), 0) << "the socket is removed on exit";
    // A stale socket file (its gateway died without removing it) is refused by clients with a
    // clear message and replaced by the next gateway.
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    close(fd);
    EXPECT_EQ(control_request(path, "status", body), 1);
    EXPECT_NE(body.find("refuses connections"), std::string::npos) << body;
    EXPECT_NO_THROW(ControlServer again(path));
    // A file that is not a socket is never replaced.
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        std::fclose(f);
    }
    EXPECT_THROW(ControlServer over_file(path), std::runtime_error);
    // A directory that cannot be created: the message says what to set.
    try {
        ControlServer nowhere(path + "/under-a-file/g.sock");
        ADD_FAILURE() << "a socket under a regular file";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("set [control] socket"), std::string::npos)
            << e.what();
    }
    std::string cmd = "rm -rf " + std::string(tmpl);
    EXPECT_EQ(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace dscpgw

namespace dscpgw {
namespace {

// Every entry of every counter list reaches Prometheus (with its help), the ctl JSON (under its
// field) and, where it names a column, the ctl table: the renderings derive from the lists.
TEST(CounterLists, EveryEntryReachesEveryRendering) {
    auto s = snap_with({"roce-cnp"}, {"az1"}, 0);
    auto w = std::make_unique<WorkerStats>();
    uint64_t v = 1000;
    for (size_t e = 0; e < TunnelCounter::count; ++e) w->bank[0].tunnel[e][0].add(++v);
    for (size_t e = 0; e < ClassCounter::count; ++e) w->bank[0].cls[e][0].add(++v);
    for (size_t e = 0; e < PortCounter::count; ++e) w->port[e][0].add(++v);
    for (size_t e = 0; e < DataplaneCounter::count; ++e) w->dataplane[e][0].add(++v);
    for (size_t e = 0; e < WorkerCounter::count; ++e) w->worker[e][0].add(++v);
    Report r;
    fill_counters(r, *s, NamedTotals{}, {w.get()});
    r.version = "t";
    r.tsc_hz = 1;
    const std::string prom = prometheus::TextSerializer().Serialize(metric_families(r));
    const std::string json = render_json(r, CtlCommand::stats);
    const std::string text = render_text(r, CtlCommand::stats);
    v = 1000;
    const auto check = [&](const CounterInfo& c, const char* label) {
        const std::string value = std::to_string(++v);
        const std::string metric = "dscpgw_" + std::string(c.metric);
        EXPECT_NE(prom.find("# HELP " + metric + " "), std::string::npos) << metric;
        std::string sample = metric + "{";
        if (!c.label.empty()) {
            const std::string l(c.label);
            sample += l.substr(0, l.find('=')) + "=\"" + l.substr(l.find('=') + 1) + "\",";
        }
        if (label != nullptr)
            sample += label;
        else if (sample.back() == '{')
            sample.pop_back();
        else
            sample.back() = '}';
        // Nanoseconds are exposed in seconds (the sample is there; its value scaled); TSC
        // cycles too, divided by the TSC frequency (1 Hz here: the value itself).
        const std::string exposed = c.unit == "nanoseconds" ? "" : value + "\n";
        EXPECT_NE(prom.find(sample + (label != nullptr ? "} " : " ") + exposed), std::string::npos)
            << sample << " " << value << "\n"
            << prom;
        EXPECT_NE(json.find("\"" + std::string(c.field) + "\":" + value), std::string::npos)
            << c.field;
        if (!c.column.empty()) {
            EXPECT_NE(text.find(std::string(c.column)), std::string::npos) << c.column;
        }
    };
    for (const CounterInfo& c : TunnelCounter::info) check(c, "tunnel=\"az1\"");
    for (const CounterInfo& c : ClassCounter::info) check(c, "class=\"roce-cnp\"");
    for (const CounterInfo& c : PortCounter::info) check(c, "port=\"lan\"");
    for (const CounterInfo& c : DataplaneCounter::info) check(c, nullptr);
    for (const CounterInfo& c : WorkerCounter::info) check(c, "worker=\"0\"");
}

// The tables of docs/metrics.md and docs/packet-path.md are what the lists generate
// (scripts/gen-docs.sh rewrites them).
TEST(Docs, GeneratedTablesAreCurrent) {
    for (const char* page : {"docs/metrics.md", "docs/packet-path.md"}) {
        const std::string path = std::string(DSCPGW_SOURCE_ROOT) + "/" + page;
        std::ifstream in(path);
        ASSERT_TRUE(in) << path;
        std::stringstream ss;
        ss << in.rdbuf();
        EXPECT_NE(ss.str().find("<!-- generated: "), std::string::npos) << page;
        EXPECT_EQ(regenerate_docs(ss.str()), ss.str())
            << page << " is stale: run scripts/gen-docs.sh";
    }
    const std::string table = metrics_doc_table();
    Report r;
    for (const auto& f : metric_families(r))
        EXPECT_NE(table.find("| `" + f.name + "` |"), std::string::npos) << f.name;
}

TEST(CtlCommands, ParsedFromTheOneList) {
    CtlRequest q;
    std::string err;
    ASSERT_TRUE(parse_ctl_request("flows --top 5 --json", q, err)) << err;
    EXPECT_EQ(q.cmd, CtlCommand::flows);
    EXPECT_EQ(q.top, 5u);
    EXPECT_TRUE(q.json);
    ASSERT_TRUE(parse_ctl_request("  stats  ", q, err)) << err;
    EXPECT_EQ(q.cmd, CtlCommand::stats);
    EXPECT_FALSE(q.json);
    EXPECT_FALSE(parse_ctl_request("", q, err));
    EXPECT_NE(err.find("empty request"), std::string::npos);
    EXPECT_FALSE(parse_ctl_request("bogus", q, err));
    EXPECT_NE(err.find("unknown command \"bogus\""), std::string::npos);
    EXPECT_NE(err.find(ctl_synopsis()), std::string::npos) << "the usage lists the commands";
    EXPECT_FALSE(parse_ctl_request("reload now", q, err));
    EXPECT_FALSE(parse_ctl_request("stats --top 3", q, err)) << "--top is flows' only";
    EXPECT_FALSE(parse_ctl_request("flows --top 0", q, err));
    EXPECT_FALSE(parse_ctl_request("flows --top 10001", q, err));
    ASSERT_TRUE(parse_ctl_request("log-level", q, err)) << err;
    EXPECT_EQ(q.cmd, CtlCommand::log_level);
    EXPECT_TRUE(q.log_type.empty());
    EXPECT_FALSE(q.all);
    ASSERT_TRUE(parse_ctl_request("log-level --all", q, err)) << err;
    EXPECT_TRUE(q.all);
    ASSERT_TRUE(parse_ctl_request("log-level dscpgw.neighbor debug", q, err)) << err;
    EXPECT_EQ(q.log_type, "dscpgw.neighbor");
    EXPECT_EQ(q.log_level, "debug");
    EXPECT_FALSE(parse_ctl_request("log-level dscpgw.neighbor", q, err));
    EXPECT_NE(err.find("log-level takes TYPE LEVEL"), std::string::npos) << err;
    EXPECT_FALSE(parse_ctl_request("log-level a b c", q, err));
    EXPECT_FALSE(parse_ctl_request("log-level a --json", q, err));
    for (const CtlCommandInfo& c : kCtlCommands) {
        EXPECT_NE(ctl_synopsis().find(std::string(c.name)), std::string::npos);
        EXPECT_NE(ctl_help("  ").find(std::string(c.help)), std::string::npos);
    }
}

TEST(Log, TypesLevelsAndLines) {
    log_init(RTE_LOG_INFO);
    EXPECT_EQ(log_level_parse("debug"), static_cast<uint32_t>(RTE_LOG_DEBUG));
    EXPECT_EQ(log_level_parse("warn"), static_cast<uint32_t>(RTE_LOG_WARNING));
    EXPECT_EQ(log_level_parse("4"), static_cast<uint32_t>(RTE_LOG_ERR));
    EXPECT_EQ(log_level_parse("loud"), 0u);
    EXPECT_EQ(log_level_parse("9"), 0u);
    EXPECT_STREQ(log_level_name(RTE_LOG_NOTICE), "notice");
    const std::string levels = log_levels(false);
    EXPECT_NE(levels.find("dscpgw.neighbor"), std::string::npos) << levels;
    EXPECT_EQ(levels.find("lib.eal"), std::string::npos) << "only the gateway's types";
    EXPECT_NE(log_levels(true).find("lib.eal"), std::string::npos);

    std::string msg;
    ASSERT_TRUE(log_set_level("dscpgw.neigh*", "debug", msg)) << msg;
    EXPECT_EQ(msg, "dscpgw.neigh*: debug (1 type)\n");
    EXPECT_FALSE(log_set_level("dscpgw.none", "debug", msg));
    EXPECT_NE(msg.find("no log type matches \"dscpgw.none\""), std::string::npos) << msg;
    EXPECT_FALSE(log_set_level("dscpgw.port", "loud", msg));
    EXPECT_NE(msg.find("unknown log level \"loud\""), std::string::npos) << msg;

    testing::internal::CaptureStderr();
    log_msg(Log::neighbor, RTE_LOG_DEBUG, "probe %d", 1);
    log_msg(Log::port, RTE_LOG_DEBUG, "not shown at info");
    log_msg(Log::config, RTE_LOG_WARNING, "w");
    log_msg(Log::reload, RTE_LOG_ERR, "e");
    EXPECT_EQ(testing::internal::GetCapturedStderr(),
              "dscpgw.neighbor: probe 1\ndscpgw.config: warning: w\ndscpgw.reload: error: e\n");
    ASSERT_TRUE(log_set_level("dscpgw.*", "info", msg)) << msg;
}

// The notifier's datagrams, as systemd reads them, on a socket bound at a path or in the abstract
// namespace; its watchdog interval only for the process WATCHDOG_PID names.
TEST(Systemd, NotifierSendsDatagramsAndReadsTheWatchdog) {
    for (const std::string& name :
         {std::string("/tmp/dscpgw-notify-test.sock"), std::string("@dscpgw-notify-test")}) {
        const int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
        ASSERT_GE(fd, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::memcpy(a.sun_path, name.data(), name.size());
        socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
        if (name[0] == '@') a.sun_path[0] = '\0';
        unlink(name.c_str());
        ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0) << name;
        setenv("NOTIFY_SOCKET", name.c_str(), 1);
        setenv("WATCHDOG_USEC", "2000000", 1);
        unsetenv("WATCHDOG_PID");
        const SystemdNotifier n;
        EXPECT_TRUE(n.enabled());
        EXPECT_EQ(n.watchdog_usec(), 2000000u);
        ASSERT_TRUE(n.send("READY=1\nSTATUS=up"));
        char buf[64] = {};
        EXPECT_EQ(recv(fd, buf, sizeof buf, MSG_DONTWAIT), 17);
        EXPECT_STREQ(buf, "READY=1\nSTATUS=up");
        close(fd);
        if (name[0] == '/') unlink(name.c_str());
    }
    setenv("WATCHDOG_PID", std::to_string(getpid() + 1).c_str(), 1);
    EXPECT_EQ(SystemdNotifier().watchdog_usec(), 0u) << "another process's watchdog";
    setenv("WATCHDOG_PID", std::to_string(getpid()).c_str(), 1);
    EXPECT_EQ(SystemdNotifier().watchdog_usec(), 2000000u);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    const SystemdNotifier off;
    EXPECT_FALSE(off.enabled());
    EXPECT_FALSE(off.send("READY=1"));
}

// Readiness waits for every worker to register and poll; the watchdog is fed only for a round in
// which every worker passed a quiescent state.
TEST(Systemd, WorkerWatchNeedsEveryWorker) {
    const size_t sz = rte_rcu_qsbr_get_memsize(2);
    auto* v = static_cast<rte_rcu_qsbr*>(rte_zmalloc("test_watch", sz, RTE_CACHE_LINE_SIZE));
    ASSERT_NE(v, nullptr);
    ASSERT_EQ(rte_rcu_qsbr_init(v, 2), 0);
    WorkerWatch w(v, 2);
    rte_rcu_qsbr_thread_register(v, 0);
    rte_rcu_qsbr_thread_online(v, 0);
    EXPECT_FALSE(w.ready()) << "worker 1 has not registered";
    rte_rcu_qsbr_quiescent(v, 0);
    EXPECT_FALSE(w.ready());
    rte_rcu_qsbr_thread_register(v, 1);
    rte_rcu_qsbr_thread_online(v, 1);
    EXPECT_FALSE(w.ready()) << "the first round starts";
    rte_rcu_qsbr_quiescent(v, 0);
    EXPECT_FALSE(w.ready()) << "worker 1 has not polled";
    rte_rcu_qsbr_quiescent(v, 1);
    EXPECT_TRUE(w.ready());
    EXPECT_FALSE(w.progressed()) << "nobody polled since";
    rte_rcu_qsbr_quiescent(v, 0);
    EXPECT_FALSE(w.progressed()) << "worker 1 stalled";
    EXPECT_FALSE(w.progressed());
    rte_rcu_qsbr_quiescent(v, 1);
    EXPECT_TRUE(w.progressed()) << "both polled in the round";
    rte_rcu_qsbr_quiescent(v, 1);
    EXPECT_FALSE(w.progressed()) << "a new round: worker 0 owes one";
    rte_rcu_qsbr_quiescent(v, 0);
    EXPECT_TRUE(w.progressed());
    rte_free(v);
}

// The trace's header decoder: every layer of a Geneve frame over IPv6 carrying VLAN-less IPv4
// RoCE, the outermost DSCP/ECN, and every prefix of it decoded without reading past what was
// kept (the ASan run checks the reads).
TEST(Trace, DecodesEveryLayerAndNeverReadsPastTheCapture) {
    using test::PacketBuilder;
    const test::Bytes inner = PacketBuilder()
                                  .eth()
                                  .ipv4("10.10.0.5", "10.20.0.9", 26 << 2 | 2)
                                  .udp(49152, 4791)
                                  .bth(0x81, 0x52)
                                  .payload(16)
                                  .build();
    const test::Bytes frame = PacketBuilder()
                                  .eth({2, 0, 0, 0, 0, 0xfe}, {2, 0, 0, 0, 0, 1}, 100)
                                  .ipv6("2001:db8::1", "2001:db8::2", 48 << 2 | 3)
                                  .udp(50000, 6081)
                                  .geneve(100)
                                  .raw(inner)
                                  .build();
    const FrameInfo fi = decode_frame(frame.data(), frame.size(), frame.size());
    EXPECT_EQ(fi.dscp, 48);
    EXPECT_EQ(fi.ecn, 3);
    EXPECT_EQ(fi.headers,
              "02:00:00:00:00:01 > 02:00:00:00:00:fe vlan 100 pcp 0 IPv6 2001:db8:0:0:0:0:0:1 > "
              "2001:db8:0:0:0:0:0:2 dscp 48 ecn ce UDP 50000 > 6081 Geneve vni 100 | "
              "02:00:00:00:10:02 > 02:00:00:00:10:01 IPv4 10.10.0.5 > 10.20.0.9 dscp 26 ecn ect0 "
              "UDP 49152 > 4791 BTH opcode 0x81 (CNP) qp 0x52 psn 1");
    for (size_t cap = 0; cap <= frame.size(); ++cap) {
        std::vector<uint8_t> prefix(frame.begin(), frame.begin() + static_cast<long>(cap));
        const FrameInfo p = decode_frame(prefix.data(), prefix.size(), frame.size());
        EXPECT_FALSE(p.headers.empty()) << cap;
        if (cap < frame.size()) {
            EXPECT_NE(p.headers.find("..."), std::string::npos) << cap;
        }
    }
    EXPECT_STREQ(ecn_name(2), "ect0");
    EXPECT_STREQ(ecn_name(-1), "-");
}

}  // namespace
}  // namespace dscpgw
