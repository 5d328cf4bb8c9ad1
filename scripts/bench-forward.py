#!/usr/bin/python3
"""Forwarding throughput of `dscpgw run` against DPDK's own floor, on the same vdevs and core.

Source: net_pcap with infinite_rx=1 replaying one frame (RoCE, 74/1082/4154 bytes of inner frame),
sink: net_null with no-rx=1. One forwarding lcore each. For every case it prints the Mpps of
  (a) dscpgw (mark + encap inner->outer, or decap outer->inner), and
  (b) dpdk-testpmd --forward-mode=io on the same two vdevs,
and the ratio a/b; then the busy TSC cycles per packet of each (dscpgw's worker, testpmd's
--record-core-cycles: both count only polls that received packets) and their ratio floor/dscpgw.

With --qos it measures instead what the egress scheduler (Border QoS II) costs on mark+encap
Geneve/IPv4: the wan port without a rate (no scheduler), shaped with the three queues of
tests/golden/egress.toml at 400 Gbit/s (configured, idle: every frame leaves at once), and at
1 Gbit/s (overloaded: the queues at their limits, most frames dropped or marked). The three runs
are interleaved per repeat; busy cycles are per received packet.

Usage: bench-forward.py [--seconds N] [--sizes 74,1082,4154] [--dscpgw build/dscpgw] [--quick] [--repeat N]
                        [--qos]
"""
import argparse
import logging
import os
import re
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
from scapy.all import wrpcap  # noqa: E402
import pktlib  # noqa: E402

EAL = ["--no-huge", "-m", "1024", "--no-shconf", "--no-pci", "-l", "0,1", "--log-level=lib.*:error"]

CONFIG = """
[eal]
args = ["--no-huge", "-m", "1024", "--no-shconf", "-l", "0,1"]
[gateway]
workers = 1
[[ports]]
name = "lan"
role = "inner"
device = "{lan}"
mtu = 4200
[[ports]]
name = "wan"
role = "outer"
device = "{wan}"
ipv4 = "198.18.0.1"
ipv6 = "2001:db8:18::1"
mac = "02:00:00:00:00:01"
mtu = 9000
[[tunnels]]
name = "t"
type = "{type}"
vni = 100
remote = "{remote}"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.20.0.0/16"]
[[classes]]
name = "roce-cnp"
match = {{ udp_dst_port = 4791, bth_opcode = 0x81 }}
dscp = 48
[[classes]]
name = "roce-data"
match = {{ udp_dst_port = 4791 }}
dscp = 26
"""

REMOTE = {4: "198.18.7.7", 6: "2001:db8:18::99"}

# The egress policy of --qos: tests/golden/egress.toml's queues, on the wan port at a rate.
with open(os.path.join(ROOT, "tests", "golden", "egress.toml")) as _f:
    _egress = _f.read()
QUEUES = _egress[_egress.index("[[queues]]"):]


def inner_frame(size):
    # Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + payload + ICRC 4.
    return pktlib.roce("10.10.0.5", "10.20.0.9", opcode=0x0A, tos=0x02, payload=size - 14 - 20 - 8 - 12 - 4)


def run_dscpgw(binary, cfg_text, tmp, seconds, rx_too=False):
    cfg = os.path.join(tmp, "bench.toml")
    cfg_text += f'\n[control]\nsocket = "{tmp}/bench.sock"\n'
    with open(cfg, "w") as f:
        f.write(cfg_text)
    p = subprocess.Popen([binary, "run", "--config", cfg], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    time.sleep(seconds + 1.5)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    m = re.search(r"forwarded: rx \d+ tx \d+ pkts in ([\d.]+) s: ([\d.]+) Mpps rx, ([\d.]+) Mpps tx", out)
    c = re.search(r"worker 0: rx \d+ pkts, busy ([\d.]+) cycles/pkt", out)
    drops = re.search(r"^\s+total\s+(\d+)", out, re.M)
    if not m or p.returncode != 0:
        raise RuntimeError("dscpgw run failed:\n" + out[-3000:])
    r = float(m.group(3)), float(c.group(1)) if c else float("nan"), int(drops.group(1)) if drops else 0
    return r + (float(m.group(2)),) if rx_too else r


def run_testpmd(src, seconds, tries=3):
    for attempt in range(tries):
        try:
            return run_testpmd_once(src, seconds)
        except RuntimeError:
            if attempt == tries - 1:
                raise
    return 0.0, 0.0


def run_testpmd_once(src, seconds):
    cmd = ["dpdk-testpmd"] + EAL + ["--vdev", src, "--vdev", "net_null9,no-rx=1", "--",
                                     "--forward-mode=io", "--nb-cores=1", "--stats-period=1",
                                     "--mbuf-size=9216", "--max-pkt-len=9000", "--total-num-mbufs=8192",
                                     "--record-core-cycles"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    time.sleep(seconds + 2.5)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    # Per-period stats: "Port statistics ==== port 1 ..." blocks with "Tx-pps:"; take port 1's.
    rates = []
    for block in re.split(r"#+ NIC statistics for port ", out):
        if block.startswith("1 "):
            m = re.search(r"Tx-pps:\s+(\d+)", block)
            if m and int(m.group(1)) > 0:
                rates.append(int(m.group(1)))
    # Busy TSC cycles per packet of the forwarding loop (cycles of polls that received something),
    # measured the way dscpgw's worker measures its own.
    c = re.search(r"CPU cycles/packet=([\d.]+)", out)
    if not rates or not c:
        raise RuntimeError("testpmd gave no rate:\n" + out[-3000:])
    return statistics.median(rates[1:] if len(rates) > 2 else rates) / 1e6, float(c.group(1))


def median_pair(runs):
    runs = list(runs)
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def row(name, size, mpps, floor, cyc, floor_cyc, drops):
    # Two ratios: of forwarding rates, and of busy cycles per packet (floor / dscpgw), the second
    # less exposed to the VM's steal time between the two runs.
    print(f"{name:<28}{size:>6}{mpps:>12.2f}{floor:>11.2f}{mpps / floor:>7.2f}{cyc:>15.1f}{floor_cyc:>14.1f}"
          f"{floor_cyc / cyc:>10.2f}" + (f"  ({drops} dropped)" if drops else ""))


def qos_cost(a, sizes, tmp):
    """The scheduler's cost: none, configured and idle, overloaded; interleaved per repeat."""
    modes = [("no scheduler", None), ("shaped, idle (400 Gbit/s)", "400Gbps"),
             ("shaped, overloaded (1 Gbit/s)", "1Gbps")]
    print(f"{'case':<32}{'frame':>6}{'Mpps rx':>9}{'Mpps tx':>9}{'cyc/pkt':>9}{'spread':>9}{'vs none':>9}")
    for size in sizes:
        inner_pcap = os.path.join(tmp, f"inner{size}.pcap")
        wrpcap(inner_pcap, [inner_frame(size)])
        src = f"net_pcap0,rx_pcap={inner_pcap},infinite_rx=1"
        base = CONFIG.format(lan=src, wan="net_null0,no-rx=1", type="geneve", remote=REMOTE[4])
        runs = {name: [] for name, _ in modes}
        for _ in range(a.repeat):
            for name, rate in modes:
                cfg = base if rate is None else (base.replace('mtu = 9000\n', f'mtu = 9000\nrate = "{rate}"\n')
                                                 + QUEUES)
                runs[name].append(run_dscpgw(a.dscpgw, cfg, tmp, a.seconds, rx_too=True))
        none = statistics.median(r[1] for r in runs[modes[0][0]])
        for name, _ in modes:
            rs = runs[name]
            cyc = statistics.median(r[1] for r in rs)
            spread = max(r[1] for r in rs) - min(r[1] for r in rs)
            print(f"{name:<32}{size:>6}{statistics.median(r[3] for r in rs):>9.2f}"
                  f"{statistics.median(r[0] for r in rs):>9.2f}{cyc:>9.1f}{spread:>9.1f}{cyc - none:>+9.1f}")
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--sizes", default="74,1082,4154")
    ap.add_argument("--dscpgw", default=os.path.join(ROOT, "build", "dscpgw"))
    ap.add_argument("--quick", action="store_true", help="Geneve over IPv4 only")
    ap.add_argument("--repeat", type=int, default=1, help="runs per figure; the median is printed")
    ap.add_argument("--qos", action="store_true", help="the egress scheduler's cost instead (see above)")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.qos:
        return qos_cost(a, sizes, tempfile.mkdtemp(prefix="dscpgw-bench-"))
    variants = [("geneve", 4)] if a.quick else [("geneve", 4), ("vxlan", 4), ("geneve", 6), ("vxlan", 6)]
    tmp = tempfile.mkdtemp(prefix="dscpgw-bench-")
    print(f"{'case':<28}{'frame':>6}{'dscpgw Mpps':>12}{'floor Mpps':>11}{'ratio':>7}"
          f"{'dscpgw cyc/pkt':>15}{'floor cyc/pkt':>14}{'cyc ratio':>10}")
    for size in sizes:
        inner = inner_frame(size)
        inner_pcap = os.path.join(tmp, f"inner{size}.pcap")
        wrpcap(inner_pcap, [inner])
        src = f"net_pcap0,rx_pcap={inner_pcap},infinite_rx=1"
        floor, floor_cyc = median_pair(run_testpmd(src, a.seconds) for _ in range(a.repeat))
        for typ, fam in variants:
            cfg = CONFIG.format(lan=src, wan="net_null0,no-rx=1", type=typ, remote=REMOTE[fam])
            runs = sorted((run_dscpgw(a.dscpgw, cfg, tmp, a.seconds) for _ in range(a.repeat)), key=lambda r: r[0])
            mpps, cyc, drops = runs[len(runs) // 2]
            name = f"mark+encap {typ}/IPv{fam}"
            row(name, size, mpps, floor, cyc, floor_cyc, drops)
        for typ, fam in variants:
            outer = pktlib.encap(inner_frame(size), typ, REMOTE[fam], "198.18.0.1" if fam == 4 else "2001:db8:18::1",
                                 100, tos=26 << 2 | 2)
            outer_pcap = os.path.join(tmp, f"outer{size}{typ}{fam}.pcap")
            wrpcap(outer_pcap, [outer])
            osrc = f"net_pcap1,rx_pcap={outer_pcap},infinite_rx=1"
            ofloor, ofloor_cyc = median_pair(run_testpmd(osrc, a.seconds) for _ in range(a.repeat))
            cfg = CONFIG.format(lan="net_null0,no-rx=1", wan=osrc, type=typ, remote=REMOTE[fam])
            runs = sorted((run_dscpgw(a.dscpgw, cfg, tmp, a.seconds) for _ in range(a.repeat)), key=lambda r: r[0])
            mpps, cyc, drops = runs[len(runs) // 2]
            name = f"decap {typ}/IPv{fam}"
            row(name, len(outer), mpps, ofloor, cyc, ofloor_cyc, drops)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
