#!/usr/bin/python3
"""Forwarding throughput of `dscpgw run` against DPDK's own floor, on the same vdevs and core.

Source: net_pcap with infinite_rx=1 replaying a capture, sink: net_null with no-rx=1, one
forwarding lcore each. Captures (--frames): `single`, one RoCE data frame; `multi`, 128 frames of
16 queue pairs (16 source/destination pairs, UDP entropy ports and destination QPs), as a RoCE job
sends them. Sizes (--sizes) are inner Ethernet frames: 74, 1082, 2048, 4154 and 9000 bytes.

For every case (mark + encap inner->outer, decap outer->inner; Geneve and VXLAN over IPv4 and
IPv6) and every repeat it runs the floor, `dpdk-testpmd --forward-mode=io` on the same two vdevs,
then dscpgw, and takes the ratio within the repeat. Each run is measured over one span of
--seconds after 1.5 s of start-up: at both ends the ports' counters (DPDK telemetry,
/ethdev/stats, of a --file-prefix of the run's own) and then the forwarding threads' CPU time.
It prints medians and the spread of:
  - Mpps/core: packets sent over the span divided by the forwarding thread's CPU time over it
    (/proc/PID/task/TID/schedstat of the lcore thread `rte-worker-N`): the rate of one fully used
    core, which the time-slicing of a shared machine does not move;
  - wall-clock Mpps over the span, for reference;
  - busy TSC cycles per packet of both (dscpgw's worker, testpmd's --record-core-cycles: both count
    only polls that received packets).
Pages: 2 MB hugepages when the machine has 1 GB of them free (--pages auto), else 4 KB pages
(--no-huge); the header says which.

With --scaling it measures two workers against one on mark+encap Geneve/IPv4 (1082-byte frames
by default, 16 flows per source), three cases interleaved per repeat: one worker on one RX
queue; two workers on a source with two RX queues (net_pcap with two rx_pcap); two workers on two
sources of one RX queue each (two net_pcap ports, which the gateway gives a worker each, each
source's frames through a tunnel and net_null sink of its own, as testpmd's port pairs). The
second worker's lcore is on the main lcore's CPU (`--lcores 0@0,1@1,2@0`: on a 2-CPU machine the
control thread shares a core with a worker). It prints each worker's Mpps/core and the aggregate
wall-clock rate. In the same repeats it runs the floor the same way (testpmd io on one lcore; on
two with one queue each of one port; on two with a port pair each, the same lcore map and vdevs)
and prints its per-lcore rates, its own two-against-one ratio and dscpgw's ratio over it: what
these vdevs give DPDK itself on this machine is the ceiling a gateway's scaling is read against.
(Two queues of one net_pcap port share a cache line of the PMD's queue array, which costs both
sides, and two of one net_null port write neighbouring lines; docs/performance.md, "Multi-core
scaling".)

With --qos it measures instead what Border QoS costs on mark+encap Geneve/IPv4 (single frame):
no QoS, a policer every packet passes green, the wan port shaped with the three queues of
tests/golden/egress.toml at 400 Gbit/s (configured, idle: every frame leaves at once) and at
1 Gbit/s (overloaded: the queues at their limits, most frames dropped or marked). The runs are
interleaved per repeat; busy cycles are per received packet.

With --peer ovs every repeat of a case also runs Open vSwitch 3.1 with DPDK (Debian's
openvswitch-switch-dpdk; scripts/install-deps.sh --ovs) on the same vdevs and CPU: the same Geneve
or VXLAN push with tos=inherit after setting DSCP 26 (mark+encap), or pop (decap), through its
userspace datapath, one PMD thread (scripts/ovs_peer.py). It prints OVS's Mpps/core (packets its
sink port sent over the PMD thread's CPU time), dscpgw's ratio to it within the repeat, and OVS's
processing cycles per packet (pmd-stats-show). It needs root and hugepages; OVS runs frames up to
1518 bytes here (larger cases print -), and has no zero IPv6 UDP checksum case.

The IPv6 cases marked csum0 use zero UDP checksums (RFC 6935/6936): the tunnel sets
udp6_zero_checksum_tx (mark+encap), or the far end sends zeros and the tunnel sets
udp6_zero_checksum_rx (decap). The others sum the datagram in software: net_null and net_pcap
offer no checksum offload.

--inner 6 (or 4,6) runs the same cases with IPv6 RoCE inside (fd10::/16 to fd20::/16, the cases'
names end in in6): 78 bytes is the least such frame, so --sizes 74 gives 78; Open vSwitch is not
run for them.

--dscpgw BIN,BIN,... compares builds: every repeat runs the floor, then each binary (in the order
given on even repeats, reversed on odd ones, so that neither always runs first), each against the
same floor run. A case prints a row per binary, its name ending in @A, @B, ... (the header names
them), and then each binary's Mpps/core over the first's, taken within each repeat: the figure to
read when two builds differ by less than the machine's noise between runs.

Usage: bench-forward.py [--seconds N] [--sizes 74,1082,2048,4154,9000] [--frames single,multi]
                        [--inner 4|6|4,6] [--repeat N] [--quick] [--pages auto|huge|4k]
                        [--dscpgw BIN[,BIN...]] [--qos] [--scaling] [--peer none|ovs]
"""
import argparse
import logging
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
from scapy.all import UDP, wrpcap  # noqa: E402
import pktlib  # noqa: E402
sys.path.insert(0, HERE)
import dpdk_telemetry  # noqa: E402
import hostinfo  # noqa: E402
import ovs_peer  # noqa: E402

EAL = ["-m", "1024", "--no-shconf", "--no-pci", "-l", "0,1", "--log-level=lib.*:error"]

CONFIG = """
[eal]
args = [{eal}]
[gateway]
workers = 1
[[ports]]
name = "lan"
role = "inner"
device = "{lan}"
mtu = 9000
[[ports]]
name = "wan"
role = "outer"
device = "{wan}"
ipv4 = "198.18.0.1"
ipv6 = "2001:db8:18::1"
mac = "02:00:00:00:00:01"
mtu = 9200
{wan_keys}
[[tunnels]]
name = "t"
type = "{type}"
vni = 100
remote = "{remote}"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.0.0.0/8", "fd00::/8"]
{tunnel_keys}
{first}
[[classes]]
name = "roce-cnp"
match = {{ udp_dst_port = 4791, bth_opcode = 0x81 }}
dscp = 48
[[classes]]
name = "roce-data"
match = {{ udp_dst_port = 4791 }}
dscp = 26
{data_keys}
"""

REMOTE = {4: "198.18.7.7", 6: "2001:db8:18::99"}
LOCAL = {4: "198.18.0.1", 6: "2001:db8:18::1"}

# The egress policy of --qos: tests/golden/egress.toml's queues, on the wan port at a rate.
with open(os.path.join(ROOT, "tests", "golden", "egress.toml")) as _f:
    _egress = _f.read()
QUEUES = _egress[_egress.index("[[queues]]"):]


def gw_config(eal, lan, wan, type, remote, wan_keys="", tunnel_keys="", first="", data_keys=""):
    """CONFIG for EAL arguments `eal` (a list, given a --file-prefix of its own), the two devices and
    the tunnel, with optional keys."""
    eal, _ = eal_prefix(eal)
    return CONFIG.format(eal=", ".join(f'"{x}"' for x in eal), lan=lan, wan=wan, type=type, remote=remote,
                         wan_keys=wan_keys, tunnel_keys=tunnel_keys, first=first, data_keys=data_keys)


def roce_frame(size, q=0, psn=1, fam=4):
    # Ethernet 14 + IPv4 20 (IPv6 40) + UDP 8 + BTH 12 + payload + ICRC 4; queue pair q of 16. An
    # IPv6 RoCE frame has 78 bytes at least: 74 gives that.
    if fam == 6:
        return pktlib.roce(f"fd10::{5 + q // 4}", f"fd20::{9 + q % 4}", opcode=0x0A, tos=0x02,
                           sport=49152 + 97 * q, dqpn=0x100 + q, psn=psn, payload=max(0, size - 78))
    return pktlib.roce(f"10.10.0.{5 + q // 4}", f"10.20.0.{9 + q % 4}", opcode=0x0A, tos=0x02,
                       sport=49152 + 97 * q, dqpn=0x100 + q, psn=psn, payload=size - 14 - 20 - 8 - 12 - 4)


def frames(size, kind, fam=4):
    """The inner frames of a capture: `fam` their IP version."""
    if kind == "single":
        return [roce_frame(size, fam=fam)]
    return [roce_frame(size, i % 16, i // 16, fam) for i in range(128)]


class Run:
    def __init__(self, pkts, cpu_ns, wall_mpps, cycles, drops=0, rx_pkts=None):
        self.core_mpps = pkts * 1e3 / cpu_ns if cpu_ns else float("nan")
        self.rx_core_mpps = (rx_pkts if rx_pkts is not None else pkts) * 1e3 / cpu_ns if cpu_ns else float("nan")
        self.wall_mpps, self.cycles, self.drops = wall_mpps, cycles, drops


def lcore_cpu_ns(pid, each=None):
    """CPU time of the process's forwarding lcore threads (DPDK names them rte-worker-N); `each`
    gets them by lcore number, and under the key "other" the sum of every other thread's (the
    main lcore's control loop, the EAL's interrupt and telemetry threads)."""
    total = other = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                ns = int(f.read().split()[0])
            if not comm.startswith("rte-worker"):
                other += ns
                continue
            total += ns
            if each is not None:
                each[int(comm.rsplit("-", 1)[1])] = ns
        except OSError:
            pass
    if each is not None:
        each["other"] = other
    return total


class Window:
    """Packets and forwarding-thread CPU time over the same span of a running DPDK process.

    Both ends of the span read the ports' counters (DPDK telemetry) and then the lcore threads'
    CPU time, one right after the other, so start-up, warm-up and shutdown fall outside it and the
    packets and the CPU time cover the same forwarding. (Taking a total at exit against CPU time
    sampled before the stop counts what forwards after the sample: testpmd, stopped by a signal,
    forwards up to a second more, because its main loop looks at the flag once a second.)"""

    def __init__(self, p, prefix, seconds, settle=1.5, tx_ports=()):
        sock = dpdk_telemetry.socket_path(prefix)
        deadline = time.monotonic() + settle
        while not os.path.exists(sock) and time.monotonic() < deadline + 10 and p.poll() is None:
            time.sleep(0.05)
        time.sleep(max(0.0, deadline - time.monotonic()))
        c0, each0 = self._sample(p, sock)
        t0 = time.monotonic()
        time.sleep(seconds)
        c1, each1 = self._sample(p, sock)
        self.wall = time.monotonic() - t0
        tx = [sum(c1[k]["q_opackets"][q] - c0[k]["q_opackets"][q] for k in c1) for q in range(16)]
        if tx_ports:  # Forwarding lcore k (in order) sends on port tx_ports[k], every queue of it.
            tx = [c1[k]["opackets"] - c0[k]["opackets"] for k in tx_ports]
        self.tx = sum(c1[k]["opackets"] - c0[k]["opackets"] for k in c1)
        self.rx = sum(c1[k]["ipackets"] - c0[k]["ipackets"] for k in c1)
        self.cpu = sum(each1[k] - each0[k] for k in each1 if isinstance(k, int))
        lcores = sorted(k for k in each1 if isinstance(k, int))
        # Forwarding lcore k (in order) sends on TX queue k (testpmd's streams, dscpgw's workers).
        self.per_lcore = [tx[i] * 1e3 / (each1[k] - each0[k]) if each1[k] > each0[k] else float("nan")
                          for i, k in enumerate(lcores)]
        self.other_cpu = (each1["other"] - each0["other"]) / (self.wall * 1e9)

    @staticmethod
    def _sample(p, sock):
        if p.poll() is not None:
            raise RuntimeError(f"exited early ({p.returncode})")
        try:
            counters = dpdk_telemetry.port_stats(sock)
        except (OSError, ValueError, KeyError) as e:
            raise RuntimeError(f"no port counters over telemetry ({sock}): {e}") from e
        each = {}
        lcore_cpu_ns(p.pid, each)
        return counters, each


def measure_and_stop(p, prefix, seconds, tx_ports=()):
    """A Window of `seconds` over the running process `p`, then SIGINT and its output."""
    try:
        w = Window(p, prefix, seconds, tx_ports=tx_ports)
    except RuntimeError as e:
        p.kill()
        out, _ = p.communicate(timeout=60)
        raise RuntimeError(f"{e}:\n{out[-3000:]}") from e
    else:
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
    finally:
        shutil.rmtree(dpdk_telemetry.runtime_dir(prefix), ignore_errors=True)
    return w, out


_prefixes = iter(range(1 << 30))


def eal_prefix(eal):
    """EAL arguments with a --file-prefix of their own: each run's telemetry socket apart."""
    prefix = f"dscpgw-bench-{os.getpid()}-{next(_prefixes)}"
    return eal + ["--file-prefix", prefix], prefix


def config_prefix(cfg_text):
    """The --file-prefix gw_config() gave a config's EAL arguments."""
    return re.search(r'"--file-prefix", "([^"]+)"', cfg_text).group(1)


def run_dscpgw(binary, cfg_text, tmp, seconds):
    cfg = os.path.join(tmp, "bench.toml")
    cfg_text += f'\n[control]\nsocket = "{tmp}/bench.sock"\n'
    with open(cfg, "w") as f:
        f.write(cfg_text)
    p = subprocess.Popen([binary, "run", "--config", cfg], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    w, out = measure_and_stop(p, config_prefix(cfg_text), seconds)
    c = re.search(r"worker 0: rx \d+ pkts, busy ([\d.]+) cycles/pkt", out)
    drops = re.search(r"^\s+total\s+(\d+)", out, re.M)
    if p.returncode != 0 or not c:
        raise RuntimeError("dscpgw run failed:\n" + out[-3000:])
    r = Run(w.tx, w.cpu, w.tx / w.wall / 1e6, float(c.group(1)), int(drops.group(1)) if drops else 0, w.rx)
    r.rx_mpps = w.rx / w.wall / 1e6
    r.per_worker = w.per_lcore
    # The CPU the rest of the process took over the span (control loop, EAL threads), as a share
    # of one CPU.
    r.other_cpu = w.other_cpu
    return r


def run_testpmd(eal, src, seconds, tries=3, cores=1, more=()):
    for attempt in range(tries):
        try:
            return run_testpmd_once(eal, src, seconds, cores, more)
        except RuntimeError:
            if attempt == tries - 1:
                raise
    return None


def run_testpmd_once(eal, src, seconds, cores=1, more=()):
    """testpmd io forwarding from `src` into net_null on `cores` forwarding lcores, each with its
    own RX and TX queue (testpmd gives lcore k the streams of queue k); or, with `more` vdevs
    (a sink and a second source), one lcore per source port, each with one queue (testpmd pairs
    ports 0-1 and 2-3 and gives each lcore a pair)."""
    queues = [f"--rxq={cores}", f"--txq={cores}"] if cores > 1 and not more else []
    eal, prefix = eal_prefix(eal)
    vdevs = [src, *more, "net_null9,no-rx=1"]
    cmd = ["dpdk-testpmd"] + eal + [x for v in vdevs for x in ("--vdev", v)] + ["--",
                                     "--forward-mode=io", f"--nb-cores={cores}", "--stats-period=1",
                                     "--mbuf-size=9472", "--max-pkt-len=9400",
                                     f"--total-num-mbufs={8192 * cores}", "--record-core-cycles"] + queues
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    # With `more`: ports 0-1 and 2-3 paired, lcore k sends on port 2k + 1 (a net_null).
    w, out = measure_and_stop(p, prefix, seconds, tx_ports=(1, 3) if more else ())
    # Busy TSC cycles per packet of the forwarding loop (cycles of polls that received something),
    # measured the way dscpgw's worker measures its own.
    c = re.search(r"CPU cycles/packet=([\d.]+)", out)
    if not w.tx or not c:
        raise RuntimeError("testpmd forwarded nothing:\n" + out[-3000:])
    r = Run(w.tx, w.cpu, w.tx / w.wall / 1e6, float(c.group(1)))
    r.per_worker = w.per_lcore
    return r


def run_ovs(peer, cfg, seconds):
    """Open vSwitch doing the case's push or pop on the same vdevs (scripts/ovs_peer.py)."""
    direction, typ, fam = peer
    with ovs_peer.Ovs(direction, typ, REMOTE[fam], LOCAL[fam], cfg["lan"], cfg["wan"]) as o:
        pkts, cpu, wall, cycles = o.measure(seconds)
    if pkts <= 0:
        raise RuntimeError(f"Open vSwitch sent nothing ({direction} {typ}/IPv{fam})")
    return Run(pkts, cpu, pkts / wall / 1e6, cycles)


def pages(mode):
    """EAL arguments and their description: hugepages when 1 GB of them is free (or asked for)."""
    free = 0
    try:
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        free = int(info["HugePages_Free"].split()[0]) * int(info["Hugepagesize"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        pass
    if mode == "huge" or (mode == "auto" and free >= 1 << 30):
        return [], f"hugepages ({free >> 20} MB free)"
    return ["--no-huge"], "4 KB pages (--no-huge)"


def spread(xs):
    return f"{statistics.median(xs):.2f} [{min(xs):.2f}..{max(xs):.2f}]"


def qos_cost(a, sizes, tmp, eal):
    """Border QoS's cost: none, policer, shaped idle, shaped overloaded; interleaved per repeat."""
    policer = '[[policers]]\nname = "all"\ncir = "1Tbps"\npir = "1Tbps"\n'
    modes = [("no QoS", "", "", ""),
             ("policer (every packet green)", "", policer, 'policer = "all"'),
             ("shaped, idle (400 Gbit/s)", 'rate = "400Gbps"', QUEUES, ""),
             ("shaped, overloaded (1 Gbit/s)", 'rate = "1Gbps"', QUEUES, "")]
    print(f"{'case':<32}{'frame':>6}{'Mpps rx':>9}{'Mpps tx':>9}{'rx/core':>9}{'cyc/pkt':>9}{'spread':>9}{'vs none':>9}")
    for size in sizes:
        inner_pcap = os.path.join(tmp, f"inner{size}.pcap")
        wrpcap(inner_pcap, frames(size, "single"))
        src = f"net_pcap0,rx_pcap={inner_pcap},infinite_rx=1"
        runs = {m[0]: [] for m in modes}
        for _ in range(a.repeat):
            for name, wan_keys, first, data_keys in modes:
                cfg = gw_config(eal, src, "net_null0,no-rx=1", "geneve", REMOTE[4], wan_keys=wan_keys,
                                first=first, data_keys=data_keys)
                runs[name].append(run_dscpgw(a.dscpgw, cfg, tmp, a.seconds))
        none = statistics.median(r.cycles for r in runs[modes[0][0]])
        for name, *_ in modes:
            rs = runs[name]
            cyc = statistics.median(r.cycles for r in rs)
            print(f"{name:<32}{size:>6}{statistics.median(r.rx_mpps for r in rs):>9.2f}"
                  f"{statistics.median(r.wall_mpps for r in rs):>9.2f}"
                  f"{statistics.median(r.rx_core_mpps for r in rs):>9.2f}"
                  f"{cyc:>9.1f}{max(r.cycles for r in rs) - min(r.cycles for r in rs):>9.1f}{cyc - none:>+9.1f}")
        sys.stdout.flush()


# The two-worker arrangements of --scaling (scaling_run() sets each up).
SCALING_ARRANGEMENTS = ("one port, 2 RX queues", "2 ports, 1 RX queue each")
# A port block for the two-port arrangement: the second source (lan2) and its own sink (wan2,
# which its frames to 10.20.1.9 reach through TUNNEL2).
PORT = """[[ports]]
name = "{name}"
role = "{role}"
device = "{dev}"
{keys}
"""
TUNNEL2 = """[[tunnels]]
name = "t2"
type = "geneve"
vni = 101
remote = "198.18.7.8"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.20.1.0/24"]
port = "wan2"
inner_port = "lan2"
"""


def scaling_run(a, eal, paths, w, arrangement, tmp):
    """One floor run and one dscpgw run with `w` workers: one worker on one queue, or two in
    `arrangement` (SCALING_ARRANGEMENTS)."""
    if w == 1 or arrangement == SCALING_ARRANGEMENTS[0]:
        src = "net_pcap0," + ",".join(f"rx_pcap={x}" for x in paths[:w]) + ",infinite_rx=1"
        floor = run_testpmd(eal, src, a.seconds, cores=w)
        cfg = gw_config(eal, src, "net_null0,no-rx=1", "geneve", REMOTE[4])
    else:
        # Each source a port of its own: testpmd pairs port 0 with 1 and 2 with 3, an lcore each
        # pair; dscpgw gives each single-queue port a worker of its own (place_rx_queues()).
        srcs = [f"net_pcap{i},rx_pcap={x},infinite_rx=1" for i, x in enumerate(paths)]
        floor = run_testpmd(eal, srcs[0], a.seconds, cores=2, more=["net_null8,no-rx=1", srcs[1]])
        # dscpgw wants a TX queue per worker on every port; these send nothing. Each source's
        # frames leave by a sink of their own, as testpmd's pairs do: two workers sending on
        # queues 0 and 1 of one net_null port write neighbouring lines of its queue array (40-byte
        # queue structures, packed), which costs the second worker 10-15 % at 1 KB on the Zen 5
        # host (docs/performance.md, Multi-core scaling).
        srcs = [x + ",tx_pcap=/dev/null,tx_pcap=/dev/null" for x in srcs]
        cfg = gw_config(eal, srcs[0], "net_null0,no-rx=1", "geneve", REMOTE[4],
                        wan_keys=PORT.format(name="lan2", role="inner", dev=srcs[1], keys="mtu = 9000")
                        + PORT.format(name="wan2", role="outer", dev="net_null9,no-rx=1",
                                      keys='ipv4 = "198.18.0.2"\nmac = "02:00:00:00:00:02"\nmtu = 9200'),
                        tunnel_keys='inner_port = "lan"\nport = "wan"', first=TUNNEL2)
    return floor, run_dscpgw(a.dscpgw, cfg.replace("workers = 1", f"workers = {w}"), tmp, a.seconds)


def scaling(a, sizes, tmp, page_args):
    """Two workers against one, and the floor the same way, in each of SCALING_ARRANGEMENTS;
    interleaved per repeat (floor and dscpgw at one, then each arrangement at two)."""
    print(f"{'workers':<28}{'frame':>6}{'aggregate Mpps':>24}{'per worker Mpps/core':>22}{'vs one worker':>20}"
          f"{'floor Mpps':>24}{'floor per lcore':>18}{'floor vs one core':>20}{'dscpgw/floor scaling':>22}")
    cases = [(1, "one port, 1 RX queue")] + [(2, x) for x in SCALING_ARRANGEMENTS]
    for size in sizes:
        paths = []
        for qi in range(2):
            path = os.path.join(tmp, f"q{qi}-{size}.pcap")
            wrpcap(path, [pktlib.roce(f"10.10.{qi}.5", f"10.20.{qi}.9", opcode=0x0A, tos=0x02, sport=49152 + 16 * qi + i,
                                      payload=size - 14 - 20 - 8 - 12 - 4) for i in range(16)])
            paths.append(path)
        runs = {c: [] for c in cases}
        floors = {c: [] for c in cases}
        for _ in range(a.repeat):
            for c in cases:
                w, arrangement = c
                lcores = "0@0,1@1" if w == 1 else "0@0,1@1,2@0"
                eal = page_args + ["-m", "1024", "--no-shconf", "--no-pci", "--lcores", lcores,
                                   "--log-level=lib.*:error"]
                f, r = scaling_run(a, eal, paths, w, arrangement, tmp)
                floors[c].append(f)
                runs[c].append(r)
        one = statistics.median(r.wall_mpps for r in runs[cases[0]])
        for c in cases:
            w, arrangement = c
            rs, fs = runs[c], floors[c]
            per = [statistics.median(r.per_worker[k] for r in rs) for k in range(w)]
            fper = [statistics.median(f.per_worker[k] for f in fs) for k in range(w)]
            ratios = [r.wall_mpps / o.wall_mpps for r, o in zip(rs, runs[cases[0]])]
            fratios = [f.wall_mpps / o.wall_mpps for f, o in zip(fs, floors[cases[0]])]
            rel = [x / y for x, y in zip(ratios, fratios)]
            print(f"{f'{w} ({arrangement})':<28}{size:>6}{spread([r.wall_mpps for r in rs]):>24}"
                  f"{' / '.join(f'{x:.2f}' for x in per):>22}{spread(ratios) if w == 2 else '1':>20}"
                  f"{spread([f.wall_mpps for f in fs]):>24}{' / '.join(f'{x:.2f}' for x in fper):>18}"
                  f"{spread(fratios) if w == 2 else '1':>20}{spread(rel) if w == 2 else '1':>22}")
        other = statistics.median(r.other_cpu for c in cases[1:] for r in runs[c])
        print(f"# one worker: {one:.2f} Mpps (median); Mpps are wall-clock, over the measured span; per worker"
              f" and per lcore: packets a CPU-second of that thread (the second on the main lcore's CPU);"
              f" dscpgw's threads besides the workers (control loop, EAL) used {100 * other:.1f} % of a CPU"
              f" with two workers, over the span")
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--sizes", default="74,1082,2048,4154,9000")
    ap.add_argument("--frames", default="single,multi")
    ap.add_argument("--dscpgw", default=os.path.join(ROOT, "build", "dscpgw"),
                    help="the binary, or several comma-separated to compare builds (see above)")
    ap.add_argument("--quick", action="store_true", help="Geneve over IPv4 only")
    ap.add_argument("--variants", default="", help="only the cases whose name contains one of these (comma-separated)")
    ap.add_argument("--inner", default="4", help="inner IP versions: 4, 6 or 4,6 (IPv6 cases end in in6)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved floor/dscpgw pairs per case")
    ap.add_argument("--pages", choices=["auto", "huge", "4k"], default="auto")
    ap.add_argument("--qos", action="store_true", help="Border QoS's cost instead (see above)")
    ap.add_argument("--scaling", action="store_true", help="two workers against one (see above)")
    ap.add_argument("--peer", choices=["none", "ovs"], default="none",
                    help="also Open vSwitch with DPDK doing the same push/pop (see above)")
    a = ap.parse_args()
    binaries = a.dscpgw.split(",")
    if len(binaries) > 1 and (a.qos or a.scaling):
        ap.error("--qos and --scaling take one --dscpgw binary")
    for b in binaries:
        if not os.access(b, os.X_OK):
            ap.error(f"--dscpgw: {b} is not an executable file")
    sizes = [int(s) for s in a.sizes.split(",")]
    page_args, page_desc = pages(a.pages)
    eal = page_args + EAL
    if a.peer == "ovs":
        why = ovs_peer.missing() or ("--peer ovs needs hugepages (OVS 3.1 runs DPDK --in-memory, which --no-huge "
                                     "contradicts): echo 1280 > /proc/sys/vm/nr_hugepages" if page_args else None)
        if why:
            sys.exit(why)
    tmp = tempfile.mkdtemp(prefix="dscpgw-bench-")
    print(f"# {hostinfo.describe()}")
    print(f"# {page_desc}; one forwarding lcore each; {a.repeat} interleaved repeats of {a.seconds:g} s; "
          "Mpps/core = packets sent / the lcore thread's CPU time; ratio = dscpgw / floor within a repeat, "
          "median [min..max]")
    if a.qos:
        return qos_cost(a, sizes, tmp, eal)
    if a.scaling:
        return scaling(a, sizes if a.sizes != ap.get_default("sizes") else [1082], tmp, page_args)
    # (type, outer family, zero IPv6 UDP checksums: udp6_zero_checksum_tx)
    variants = [("geneve", 4, False)] if a.quick else [("geneve", 4, False), ("vxlan", 4, False),
                                                       ("geneve", 6, False), ("vxlan", 6, False),
                                                       ("geneve", 6, True)]
    ovs = a.peer == "ovs"
    labels = [f" @{chr(ord('A') + i)}" for i in range(len(binaries))] if len(binaries) > 1 else [""]
    if len(binaries) > 1:
        print("# dscpgw " + ", ".join(f"{l.strip(' @')} = {b}" for l, b in zip(labels, binaries)))
    print(f"{'case':<28}{'frame':>6}{'capture':>8}{'dscpgw Mpps':>12}{'dscpgw Mpps/core':>24}"
          f"{'floor Mpps/core':>24}{'ratio':>22}{'dscpgw cyc':>11}{'floor cyc':>10}"
          + (f"{'ovs Mpps/core':>24}{'dscpgw/ovs':>22}{'ovs cyc':>9}" if ovs else ""))
    for size, kind, fin in [(n, k, int(f)) for n in sizes for k in a.frames.split(",") for f in a.inner.split(",")]:
        inner = frames(size, kind, fin)
        in6 = " in6" if fin == 6 else ""
        inner_pcap = os.path.join(tmp, f"inner{size}{kind}{fin}.pcap")
        wrpcap(inner_pcap, inner)
        cases = []
        for typ, fam, zero in variants:
            src = f"net_pcap0,rx_pcap={inner_pcap},infinite_rx=1"
            cfg = dict(lan=src, wan="net_null0,no-rx=1", type=typ, remote=REMOTE[fam],
                       tunnel_keys="udp6_zero_checksum_tx = true" if zero else "")
            peer = None if zero or in6 or size > ovs_peer.MAX_FRAME else ("encap", typ, fam)
            cases.append((f"mark+encap {typ}/IPv{fam}" + (" csum0" if zero else "") + in6, len(inner[0]), src, cfg,
                          peer))
        for typ, fam, zero in variants:
            outer = [pktlib.encap(p, typ, REMOTE[fam], LOCAL[fam], 100, tos=26 << 2 | 2, sport=49152 + 53 * (i % 16))
                     for i, p in enumerate(inner)]
            if zero:  # As a far end with udp6zerocsumtx sends them (RFC 6935).
                for o in outer:
                    o[UDP].chksum = 0
            outer_pcap = os.path.join(tmp, f"outer{size}{kind}{fin}{typ}{fam}{'z' if zero else ''}.pcap")
            wrpcap(outer_pcap, outer)
            src = f"net_pcap1,rx_pcap={outer_pcap},infinite_rx=1"
            cfg = dict(lan="net_null0,no-rx=1", wan=src, type=typ, remote=REMOTE[fam],
                       tunnel_keys="udp6_zero_checksum_rx = true" if zero else "")
            peer = ("decap", typ, fam) if not zero and not in6 and len(outer[0]) <= ovs_peer.MAX_FRAME else None
            cases.append((f"decap {typ}/IPv{fam}" + (" csum0" if zero else "") + in6, len(outer[0]), src, cfg,
                          peer))
        if a.variants:
            cases = [c for c in cases if any(v in c[0] for v in a.variants.split(","))]
        for name, frame, src, cfg, peer in cases:
            # Per repeat: the floor, each binary's run (by its index), OVS's run or None.
            reps = []
            for r in range(a.repeat):
                floor = run_testpmd(eal, src, a.seconds)
                order = range(len(binaries)) if r % 2 == 0 else reversed(range(len(binaries)))
                gw = {i: run_dscpgw(binaries[i], gw_config(eal, **cfg), tmp, a.seconds) for i in order}
                reps.append((floor, gw, run_ovs(peer, cfg, a.seconds) if ovs and peer else None))
            floors = [f for f, _, _ in reps]
            for i, label in enumerate(labels):
                pairs = [(f, gw[i]) for f, gw, _ in reps]
                peers = [(o, gw[i]) for _, gw, o in reps if o is not None]
                gws = [g for _, g in pairs]
                drops = max(g.drops for g in gws)
                print(f"{name + label:<28}{frame:>6}{kind:>8}{statistics.median(g.wall_mpps for g in gws):>12.2f}"
                      f"{spread([g.core_mpps for g in gws]):>24}{spread([f.core_mpps for f in floors]):>24}"
                      f"{spread([g.core_mpps / f.core_mpps for f, g in pairs]):>22}"
                      f"{statistics.median(g.cycles for g in gws):>11.1f}{statistics.median(f.cycles for f in floors):>10.1f}"
                      + (f"{spread([o.core_mpps for o, _ in peers]):>24}"
                         f"{spread([g.core_mpps / o.core_mpps for o, g in peers]):>22}"
                         f"{statistics.median(o.cycles for o, _ in peers):>9.1f}" if peers else
                         f"{'-':>24}{'-':>22}{'-':>9}" if ovs else "")
                      + (f"  ({drops} dropped)" if drops else ""))
            for i, label in list(enumerate(labels))[1:]:
                print(f"  {label.strip(' @')} / {labels[0].strip(' @')} Mpps/core within a repeat: "
                      f"{spread([gw[i].core_mpps / gw[0].core_mpps for _, gw, _ in reps])}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
