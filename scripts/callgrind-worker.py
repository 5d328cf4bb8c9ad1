#!/usr/bin/python3
"""Instructions per packet of the worker loop, counted by callgrind (repeatable on a noisy machine).

Runs `dscpgw run` under `valgrind --tool=callgrind --toggle-collect='dscpgw::worker_main*'` with
bench-forward.py's config: net_pcap `infinite_rx` replaying one RoCE frame into net_null, one
worker. Instructions are counted only inside the worker loop (PMD RX/TX included), divided by the
packets the worker received. Prints one line per case.

With --frames multi it replays bench-forward.py's 128-frame, 16-queue-pair capture instead of one
frame. With --lan routed the LAN port has addresses (10.0.0.1/8 and fd00::1/8, a routed LAN) and
every inner host a static [[neighbors]] entry, so that decap readdresses each frame to its host;
with --lan tagged it has VLAN 100 and a dscp_to_pcp map, so that decap pushes the tag (decap only:
the capture's inner frames are untagged). With --inner 6 the inner frames are IPv6 RoCE
(bench-forward.py's, fd10::/16 to fd20::/16; not with --lan tagged). With --keep DIR the callgrind files stay in DIR
(`callgrind_annotate DIR/encap.callgrind` breaks the figure down by function). With --asm it
also prints, per case, the gateway binary's instructions that ran at least once every two packets,
in address order, each with its count per packet (objdump's disassembly): where a change to the
packet path went, and which values the compiler keeps on the stack (the count of rbp/rsp-relative
operands is printed last). With --cache-sim callgrind also simulates the caches (the geometry the
CPU reports through CPUID, no hardware prefetcher) and it prints the first-level data misses a
packet, and with --asm as well the instructions that missed at least once every 20 packets, with
their functions (the PMDs' included, DPDK being linked in): where a case's memory traffic comes
from, not what it costs.

Usage: callgrind-worker.py [--dscpgw build/dscpgw] [--seconds N] [--size 74] [--flows N]
                           [--frames single|multi] [--inner 4|6] [--lan transparent|routed|tagged]
                           [--keep DIR] [--asm] [--cache-sim]
"""
import argparse
import glob
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
spec = importlib.util.spec_from_file_location("bench_forward", os.path.join(HERE, "bench-forward.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
from scapy.all import wrpcap  # noqa: E402


def instruction_costs(path, binary, events=(0,)):
    """{address: instructions} of `binary`'s own code in a callgrind file written with
    --dump-instr=yes (addresses absolute, +N/-N from the previous, or * for the same; names
    compressed as (id); a calls= line's next cost line is the call's, left out). `events`: which
    of the file's events to add up (0: instructions; trailing zero events are left out of a
    line)."""
    names, costs = {}, {}
    ob, last, call = None, 0, False
    with open(path) as f:
        for line in f:
            m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1) == "ob":
                    ob = names.get(m.group(2))
                continue
            if line.startswith("calls="):
                call = True
                continue
            m = re.match(r"^(0x[0-9a-f]+|[+-]\d+|\*)\s+\S+((?:\s+\d+)+)\s*$", line)
            if not m:
                continue
            a = m.group(1)
            last = int(a, 16) if a.startswith("0x") else last if a == "*" else last + int(a)
            if call:
                call = False
                continue
            if ob is not None and os.path.realpath(ob) == os.path.realpath(binary):
                v = m.group(2).split()
                costs[last] = costs.get(last, 0) + sum(int(v[e]) for e in events if e < len(v))
    return costs


def print_hot(path, binary, pkts, least=0.5):
    """The instructions of `binary` that ran at least `least` times a packet, disassembled."""
    costs = instruction_costs(path, binary)
    print(f"{os.path.basename(path)}: {binary}'s instructions run at least {least} times a packet")
    hot = sorted(a for a, c in costs.items() if c / pkts >= least)
    if not hot:
        print("  (no instruction of the binary ran that often)")
        return
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-C", f"--start-address={hot[0]}",
                          f"--stop-address={hot[-1] + 16}", binary], capture_output=True, text=True).stdout
    stack = 0
    for line in dis.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s*(.*)$", line)
        if m and costs.get(int(m.group(1), 16), 0) / pkts >= least:
            print(f"  {costs[int(m.group(1), 16)] / pkts:6.2f}  {m.group(1)}  {m.group(2)}")
            stack += bool(re.search(r"\(%r[bs]p", m.group(2)))
    print(f"  {sum(costs.values()) / pkts:.1f} instructions/pkt in the binary's own code; {stack} of the "
          "instructions listed take an rbp/rsp-relative operand")


def print_misses(path, binary, pkts, events, least=0.05):
    """The instructions of `binary` that missed the simulated first-level data cache at least
    `least` times a packet, with their function and disassembly."""
    costs = instruction_costs(path, binary, [events.index("D1mr"), events.index("D1mw")])
    hot = sorted(((c / pkts, a) for a, c in costs.items() if c / pkts >= least), reverse=True)
    print(f"{os.path.basename(path)}: {binary}'s instructions that missed D1 at least {least} times a packet")
    for per, a in hot:
        fn = subprocess.run(["addr2line", "-f", "-C", "-e", binary, hex(a)], capture_output=True,
                            text=True).stdout.split("\n")[0]
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={a}",
                              f"--stop-address={a + 16}", binary], capture_output=True, text=True).stdout
        ins = re.search(rf"^\s*{a:x}:\s*(.*)$", dis, re.M)
        print(f"  {per:6.3f}  {a:x}  {ins.group(1) if ins else '?':<36} {fn[:90]}")


def measure(binary, cfg_text, tmp, seconds, name, asm=False, cache_sim=False):
    cfg = os.path.join(tmp, f"{name}.toml")
    with open(cfg, "w") as f:
        f.write(cfg_text + f'\n[control]\nsocket = "{tmp}/{name}.sock"\n')
    out_file = os.path.join(tmp, f"{name}.callgrind")
    # --fair-sched=yes: valgrind runs one thread at a time, and with its default lock the polling
    # worker can win it back every time, starving the thread that handles SIGINT (seen: a run
    # that never stopped). Fair scheduling does not change the worker's instruction count.
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--fair-sched=yes", f"--callgrind-out-file={out_file}",
                          "--toggle-collect=dscpgw::worker_main*"] + (["--dump-instr=yes"] if asm else [])
                         + (["--cache-sim=yes"] if cache_sim else [])
                         + [binary, "run", "--config", cfg],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(seconds)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=120)
    shutil.rmtree(bench.dpdk_telemetry.runtime_dir(bench.config_prefix(cfg_text)), ignore_errors=True)
    rx = re.search(r"worker 0: rx (\d+) pkts", out)
    if not rx or int(rx.group(1)) == 0:
        raise RuntimeError("dscpgw under callgrind forwarded nothing:\n" + out[-3000:])
    drops = re.search(r"drops:\s+total\s+(\d+)", out)
    if drops is None or int(drops.group(1)) != 0:
        raise RuntimeError("dscpgw under callgrind dropped packets (the figure would not be the "
                           "forwarding path's):\n" + out[-3000:])
    pkts = int(rx.group(1))
    events, totals, geometry = [], [], []
    for fn in glob.glob(out_file + "*"):
        with open(fn) as f:
            for line in f:
                if line.startswith("desc: D1") or line.startswith("desc: LL"):
                    geometry.append(line[6:].strip())
                if line.startswith("events:"):
                    events = line.split()[1:]
                if line.startswith("summary:") or line.startswith("totals:"):
                    v = [int(x) for x in line.split()[1:]]
                    if not totals or v[0] > totals[0]:
                        totals = v
    if asm:
        print_hot(out_file, binary, pkts)
        if cache_sim:
            print_misses(out_file, binary, pkts, events)
    if cache_sim:
        # Valgrind's model of the host's caches (the geometry CPUID gives; its last level is the
        # last the CPU reports), not the CPU's counters: where misses come from, not what they
        # cost, and no hardware prefetching.
        per = dict(zip(events, (t / pkts for t in totals)))
        print(f"{name}: simulated misses a packet ({'; '.join(sorted(set(geometry)))}): " + ", ".join(
            f"{e} {per[e]:.3f}" for e in ("I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw") if e in per))
    return totals[0] / pkts, pkts


def with_lan(cfg, lan):
    """The config with its LAN port routed (an address on the inner destinations' network, IPv4's
    and IPv6's) or tagged (VLAN 100, the PCP from the DSCP)."""
    keys = {"transparent": "",
            "routed": 'ipv4 = "10.0.0.1/8"\nipv6 = "fd00::1/8"\nmac = "02:00:00:00:10:01"\n',
            "tagged": 'vlan = 100\ndscp_to_pcp = { 26 = 3, 48 = 6, default = 0 }\n'}[lan]
    i = cfg.index('name = "lan"\n') + len('name = "lan"\n')
    return cfg[:i] + keys + cfg[i:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dscpgw", default=os.path.join(ROOT, "build", "dscpgw"))
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--size", type=int, default=74)
    ap.add_argument("--flows", type=int, default=None, help="[metrics] flows (default: the gateway's)")
    ap.add_argument("--frames", choices=["single", "multi"], default="single")
    ap.add_argument("--inner", type=int, choices=[4, 6], default=4, help="the inner frames' IP version")
    ap.add_argument("--lan", choices=["transparent", "routed", "tagged"], default="transparent")
    ap.add_argument("--keep", default=None, help="a directory for the callgrind files")
    ap.add_argument("--asm", action="store_true", help="also the hot instructions, disassembled")
    ap.add_argument("--cache-sim", action="store_true",
                    help="also valgrind's simulated cache misses a packet (its cache model, not the CPU's)")
    a = ap.parse_args()
    if a.inner == 6 and a.lan == "tagged":
        ap.error("--inner 6 runs on a transparent or routed LAN")
    tmp = a.keep or tempfile.mkdtemp(prefix="dscpgw-callgrind-")
    os.makedirs(tmp, exist_ok=True)
    extra = f"\n[metrics]\nflows = {a.flows}\n" if a.flows is not None else ""
    inners = bench.frames(a.size, a.frames, a.inner)
    in6 = " inner IPv6" if a.inner == 6 else ""
    if a.lan == "routed":
        ip = "IPv6" if a.inner == 6 else "IP"
        hosts = sorted({x[ip].dst for x in inners} | {x[ip].src for x in inners})
        extra += "".join(f'\n[[neighbors]]\nport = "lan"\nip = "{h}"\nmac = "02:00:00:00:10:{i + 16:02x}"\n'
                         for i, h in enumerate(hosts))
    eal = ["--no-huge"] + bench.EAL
    inner_pcap = os.path.join(tmp, "inner.pcap")
    wrpcap(inner_pcap, inners)
    cfg = bench.gw_config(eal, f"net_pcap0,rx_pcap={inner_pcap},infinite_rx=1", "net_null0,no-rx=1",
                          "geneve", bench.REMOTE[4]) + extra
    lan = "" if a.lan == "transparent" else f", {a.lan} LAN"
    if a.lan != "tagged":
        ipp, n = measure(a.dscpgw, with_lan(cfg, a.lan), tmp, a.seconds, "encap", a.asm, a.cache_sim)
        print(f"mark+encap geneve/IPv4 {len(inners[0])} B {a.frames}{in6}{lan}: {ipp:.1f} instructions/pkt ({n} pkts)")
    outers = [bench.pktlib.encap(x, "geneve", bench.REMOTE[4], "198.18.0.1", 100, tos=26 << 2 | 2,
                                 sport=49152 + 53 * (i % 16))
              for i, x in enumerate(inners)]
    outer_pcap = os.path.join(tmp, "outer.pcap")
    wrpcap(outer_pcap, outers)
    cfg = bench.gw_config(eal, "net_null0,no-rx=1", f"net_pcap1,rx_pcap={outer_pcap},infinite_rx=1",
                          "geneve", bench.REMOTE[4]) + extra
    ipp, n = measure(a.dscpgw, with_lan(cfg, a.lan), tmp, a.seconds, "decap", a.asm, a.cache_sim)
    print(f"decap geneve/IPv4 {len(outers[0])} B {a.frames}{in6}{lan}: {ipp:.1f} instructions/pkt ({n} pkts)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
