#!/usr/bin/python3
"""dscpgw-hostmark against the real kernel: a veth pair between two network namespaces, the BPF
classifier attached to one end's tc egress, RoCE-shaped and other traffic sent through it (crafted
frames by scapy, and real kernel UDP sockets), captured at the other end by dumpcap and decoded by
scapy. Checks DSCP, ECN, the IPv4 header checksum, the UDP checksum, the RoCE ICRC, VLAN priority,
the counters (table and Prometheus text), re-attach in place, and that detach leaves the device
as it was.

The config checks need nothing; the live tests need root, `ip netns`, veth and BPF tc support, and
report SKIP otherwise. Usage: test_hostmark.py [DSCPGW_HOSTMARK_BINARY]. Prints PASS/FAIL/SKIP per
test and a summary line "hostmark: N passed, N failed, N skipped".
"""
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from scapy.all import IP, IPv6, UDP, TCP, Ether, Dot1Q, Raw, IPv6ExtHdrDestOpt, raw  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402
import pktlib  # noqa: E402
from netns import Results, Skip, Capture, sh, ns, mac_of, send_from, require_root_and_netns  # noqa: E402

HM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "hostmark", "dscpgw-hostmark")
# Built beside it by tests/meson.build: gives frames an offloaded VLAN tag (see the file).
VLAN_PUSH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(HM))), "tests", "vlan_push.bpf.o")
TAG = f"h{os.getpid() % 10000}"
NS_A, NS_B = f"{TAG}A", f"{TAG}B"
DEV_A, DEV_B = f"{TAG}a", f"{TAG}b"
TMP = tempfile.mkdtemp(prefix="dscpgw-hostmark-")
A4, B4 = "198.18.9.1", "198.18.9.2"
A6, B6 = "2001:db8:9::1", "2001:db8:9::2"

CONFIG_A = """
# The gateway's own class section; the other sections of a gateway config would be ignored.
[[classes]]
name = "roce-cnp"
match = { udp_dst_port = 4791, bth_opcode = 0x81 }
dscp = 48
pcp = 6
[[classes]]
name = "roce-data"
match = { udp_dst_port = 4791 }
dscp = 26
pcp = 3
[[classes]]
name = "bulk-af11"
match = { ip_proto = 6, dscp = [10, 12] }
dscp = 0
"""
# Same class names, other values: re-attach updates in place and keeps the counters.
CONFIG_B = CONFIG_A.replace("dscp = 26", "dscp = 46")
# Other class names: the counters restart.
CONFIG_C = """
[[classes]]
name = "cnp-only"
match = { udp_dst_port = 4791, bth_opcode = 0x81 }
dscp = 40
"""


def run(args, netns=None, user=None, wrapper=None):
    cmd = [HM] + args
    if wrapper:
        cmd = [wrapper] + cmd
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def hm(args):
    return run(args, NS_A)


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def eq(a, b, what=""):
    if a != b:
        raise AssertionError(f"{what}: expected {b!r}, got {a!r}")


def ok(cond, what):
    if not cond:
        raise AssertionError(what)


def prometheus(text):
    """{(name, frozenset(labels)): value}; asserts every line is valid exposition format."""
    out = {}
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\} (\d+)$')
    typed = set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            ok(kind in ("counter", "gauge"), f"type of {name}: {kind}")
            ok(kind != "counter" or name.endswith("_total"), f"counter {name} must end in _total")
            typed.add(name)
            continue
        m = sample.match(line)
        ok(m is not None, f"not an exposition line: {line!r}")
        ok(m.group(1) in typed, f"{m.group(1)} has no TYPE line before it")
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2)))
        out[(m.group(1), labels)] = int(m.group(3))
    return out


def counter(metrics, name, cls):
    return metrics[(name, frozenset({("device", DEV_A), ("class", cls)}))]


# --- Tests that need neither root nor a kernel --------------------------------------------------

def config_checks():
    rc, out = run(["check", "--config", write("a.toml", CONFIG_A)])
    eq(rc, 0, "check of a valid config: " + out)
    ok("roce-cnp" in out and "udp/4791 bth=0x81 -> dscp 48, pcp 6" in out, out)
    ok("bulk-af11" in out and "proto=6 dscp=10,12 -> dscp 0" in out, out)
    # A gateway config is accepted as it is (its classes are used).
    rc, out = run(["check", "--config", os.path.join(ROOT, "config", "example.toml")])
    eq(rc, 0, "the shipped gateway config: " + out)
    bad = write("bad.toml", '[[classes]]\nname = "x"\nmatch = { udp_dst_port = 4791 }\ndscp = 99\npcp = 8\n')
    rc, out = run(["check", "--config", bad])
    eq(rc, 2, "invalid config exit code")
    ok(f"{bad}:4:" in out and "classes[0].dscp" in out, "dscp error with file:line: " + out)
    ok(f"{bad}:5:" in out and "classes[0].pcp" in out, "pcp error with file:line: " + out)
    pfx = write("pfx.toml", '[[classes]]\nname = "p"\nmatch = { dst = "10.0.0.0/8" }\ndscp = 26\n')
    rc, out = run(["check", "--config", pfx])
    eq(rc, 2, "prefix class exit code")
    ok('class "p": match.src/match.dst are not supported' in out, out)
    rc, out = run(["check", "--config", os.path.join(TMP, "missing.toml")])
    ok(rc == 2 and "cannot open" in out, out)
    rc, out = run(["check", "--config", write("syntax.toml", "[[classes]\n")])
    ok(rc == 2 and "TOML syntax error" in out, out)
    # A class an earlier one shadows is said, with both names and lines (the rules still load).
    shadowed = write("shadow.toml", '[[classes]]\nname = "data"\nmatch = { udp_dst_port = 4791 }\ndscp = 26\n'
                     '[[classes]]\nname = "cnp"\nmatch = { udp_dst_port = 4791, bth_opcode = 0x81 }\ndscp = 48\n')
    rc, out = run(["check", "--config", shadowed])
    ok(rc == 0 and f'{shadowed}:5:1: warning: classes[1]: class "cnp" can never match: class "data" '
       "(classes[0], line 1)" in out, "shadowed class: " + out)
    rc, out = run(["check", "--config", write("a.toml", CONFIG_A)])
    ok("warning" not in out, "no warning for a config in order: " + out)
    rc, out = run(["frobnicate"])
    ok(rc == 2 and "usage:" in out, out)
    rc, out = run(["attach", "--dev", "x"])
    ok(rc == 2 and "--config FILE is required" in out, "attach without --config: " + out)


def cli_conventions():
    rc, out = run(["--version"])
    ok(rc == 0 and re.match(r"dscpgw-hostmark \d+\.\d+\.\d+ \(libbpf \d+\.\d+\)\n$", out), out)
    for cmd, opts in (("attach", ["--dev", "--config"]), ("detach", ["--dev"]),
                      ("status", ["--dev", "--prometheus", "--textfile"]), ("check", ["--config"])):
        rc, out = run([cmd, "--help"])
        ok(rc == 0 and out.startswith(f"usage: dscpgw-hostmark {cmd}") and all(o in out for o in opts),
           f"{cmd} --help: " + out)
        rc, v = run([cmd, "--version"])
        ok(rc == 0 and v.startswith("dscpgw-hostmark "), f"{cmd} --version: " + v)
    rc, out = run(["--help"])
    ok(rc == 0 and all(c in out for c in ("attach", "detach", "status", "check", "exit codes")), out)
    # --opt=value as --opt value.
    rc, out = run(["check", "--config=" + write("a.toml", CONFIG_A)])
    eq(rc, 0, "check --config=FILE: " + out)
    rc, out = run(["check", "--config"])
    ok(rc == 2 and "--config needs a value" in out, out)
    rc, out = run(["check", "--frobnicate"])
    ok(rc == 2 and "unknown option --frobnicate" in out, out)
    rc, out = run(["status", "--prometheus=yes"])
    ok(rc == 2 and "--prometheus takes no value" in out, out)


def needs_root_and_device():
    if os.geteuid() != 0:
        rc, out = run(["status", "--dev", "lo"])
        ok(rc == 1 and "needs root" in out, out)
        return
    if shutil.which("setpriv") is None:
        raise Skip("setpriv not installed")
    rc, out = run(["attach", "--dev", "lo", "--config", write("a.toml", CONFIG_A)], user="65534")
    ok(rc == 1 and "needs root" in out, "as nobody: " + out)
    rc, out = run(["attach", "--dev", "nosuch0", "--config", write("a.toml", CONFIG_A)])
    ok(rc == 1 and "interface nosuch0 not found" in out, out)
    rc, out = run(["status", "--dev", "nosuch0"])
    ok(rc == 1 and "interface nosuch0 not found" in out, out)
    # A kernel without the bpf() system call (a seccomp filter makes it fail with ENOSYS).
    rc, out = run(["attach", "--dev", "lo", "--config", write("a.toml", CONFIG_A)],
                  wrapper=os.path.join(os.path.dirname(VLAN_PUSH), "hostmark_no_bpf"))
    if rc == 0:  # The filter did not hold: take off what was attached before failing.
        run(["detach", "--dev", "lo"])
    ok(rc == 1 and "the kernel has no BPF system call" in out, "without bpf(): " + out)
    ok("clsact" not in sh("tc qdisc show dev lo"), "nothing left on lo")
    # A device without an Ethernet header (tun, WireGuard) is refused, not misparsed.
    tun = f"{TAG}tun"
    if subprocess.run(["ip", "tuntap", "add", "dev", tun, "mode", "tun"], capture_output=True).returncode == 0:
        try:
            rc, out = run(["attach", "--dev", tun, "--config", write("a.toml", CONFIG_A)])
            ok(rc == 1 and "is not an Ethernet device" in out, "tun device: " + out)
        finally:
            subprocess.run(["ip", "link", "del", tun], capture_output=True)


CONFIG_EQ = """
[[classes]]
name = "cnp"
match = { udp_dst_port = 4791, bth_opcode = 0x81 }
dscp = 48
pcp = 6
[[classes]]
name = "ef-kept"
match = { udp_dst_port = 4791, dscp = [46] }
dscp = "preserve"
[[classes]]
name = "data"
match = { udp_dst_port = 4791 }
dscp = 26
pcp = 3
[[classes]]
name = "tcp-af1x"
match = { ip_proto = 6, dscp = [10, 12, 14] }
dscp = 8
[[classes]]
name = "icmp"
match = { ip_proto = 1 }
dscp = 16
[[classes]]
name = "icmp6"
match = { ip_proto = 58 }
dscp = 16
[[classes]]
name = "dns"
match = { udp_dst_port = 53 }
dscp = 0
"""


def chain(ip6, n):
    for _ in range(n):
        ip6 = ip6 / IPv6ExtHdrDestOpt()
    return ip6


def corpus(path):
    """Frames across the cases the classifier distinguishes, then deterministic mutations of them."""
    import random
    from scapy.all import ICMP, ICMPv6EchoRequest, IPv6ExtHdrHopByHop, IPv6ExtHdrFragment, \
        IPv6ExtHdrRouting, wrpcap
    rng = random.Random(4791)
    l4s = [lambda: UDP(sport=1000, dport=4791) / Raw(bytes([op]) + bytes(11) + b"p" * 20)
           for op in (0x0A, 0x81, 0x04, 0x11)]
    l4s += [lambda: UDP(sport=1000, dport=4791) / Raw(b"\x81\x00"), lambda: UDP(sport=1, dport=53) / Raw(b"q"),
            lambda: TCP(sport=1, dport=80), lambda: TCP(sport=1, dport=4791) / Raw(b"\x81" * 12)]
    frames = []
    for v6 in (False, True):
        for tags in ((), (0x8100,), (0x88A8, 0x8100)):
            for tos in (0, 1, 2, 3, 26 << 2 | 1, 46 << 2, 46 << 2 | 3, 48 << 2 | 3, 10 << 2, 12 << 2 | 2):
                heads = [IPv6(src=A6, dst=B6, tc=tos)] if v6 else [IP(src=A4, dst=B4, tos=tos)]
                if v6:
                    heads += [IPv6(src=A6, dst=B6, tc=tos) / IPv6ExtHdrHopByHop(),
                              IPv6(src=A6, dst=B6, tc=tos) / IPv6ExtHdrDestOpt() / IPv6ExtHdrRouting(),
                              IPv6(src=A6, dst=B6, tc=tos) / IPv6ExtHdrFragment(m=1, offset=0),
                              IPv6(src=A6, dst=B6, tc=tos) / IPv6ExtHdrFragment(offset=10),
                              # The longest chain both parsers walk, and one too long for both.
                              IPv6(src=A6, dst=B6, tc=tos) / IPv6ExtHdrDestOpt(),
                              chain(IPv6(src=A6, dst=B6, tc=tos), 8), chain(IPv6(src=A6, dst=B6, tc=tos), 9)]
                else:
                    heads += [IP(src=A4, dst=B4, tos=tos, options=[b"\x01\x01\x01\x00"] * 3),
                              IP(src=A4, dst=B4, tos=tos, flags="MF"),
                              IP(src=A4, dst=B4, tos=tos, frag=20)]
                for head in heads:
                    for l4 in l4s + [lambda: ICMPv6EchoRequest() if v6 else ICMP()]:
                        eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                        for i, tpid in enumerate(tags):
                            eth = eth / Dot1Q(vlan=10 + i, prio=rng.randrange(8))
                            eth.getlayer(Dot1Q, nb=i + 1)  # noqa: B018
                        p = raw(eth / head.copy() / l4())
                        if tags == (0x88A8, 0x8100):
                            p = p[:12] + b"\x88\xa8" + p[14:]
                        frames.append(p)
    base = list(frames)
    for _ in range(1500):
        b = bytearray(rng.choice(base))
        for _ in range(rng.randrange(1, 4)):
            b[rng.randrange(12, min(len(b), 90))] = rng.randrange(256)
        if rng.random() < 0.3:
            b = b[:rng.randrange(14, len(b) + 1)]
        frames.append(bytes(b))
    wrpcap(path, [Ether(f) for f in frames])
    return len(frames)


def equivalence():
    if os.geteuid() != 0:
        raise Skip("needs root to load BPF")
    tool = os.path.join(os.path.dirname(VLAN_PUSH), "hostmark_equivalence")
    pcap = os.path.join(TMP, "corpus.pcap")
    n = corpus(pcap)
    runs = [(write("eq.toml", CONFIG_EQ), pcap), (write("a.toml", CONFIG_A), pcap)]
    shared = os.path.join(ROOT, "..", "shared", "captures", "roce")
    if os.path.isdir(shared):
        runs += [(write("eq.toml", CONFIG_EQ), os.path.join(shared, f)) for f in sorted(os.listdir(shared))
                 if f.endswith(".pcap")]
    for cfg, cap in runs:
        p = subprocess.run([tool, cfg, cap], capture_output=True, text=True)
        if p.returncode == 77:
            raise Skip(p.stdout.strip())
        eq(p.returncode, 0, f"{os.path.basename(cfg)} on {os.path.basename(cap)}: {p.stdout}{p.stderr}")
        m = re.search(r"(\d+) frames: (\d+) classified, (\d+) rewritten, (\d+) malformed, 0 mismatches", p.stdout)
        ok(m is not None, p.stdout)
        print(f"   {os.path.basename(cfg)} on {os.path.basename(cap)}: {m.group(0)}")
        if cap == pcap:
            eq(int(m.group(1)), n, "frames compared")
            ok(int(m.group(2)) > n // 4 and int(m.group(3)) > n // 8, "the corpus exercises the classes")


# --- Live tests ---------------------------------------------------------------------------------

def topology():
    sh(f"ip netns add {NS_A}")
    sh(f"ip netns add {NS_B}")
    sh(f"ip link add {DEV_A} netns {NS_A} type veth peer name {DEV_B} netns {NS_B}")
    for space, dev, a4, a6 in ((NS_A, DEV_A, A4, A6), (NS_B, DEV_B, B4, B6)):
        ns(space, "sysctl -qw net.ipv6.conf.all.accept_ra=0")
        ns(space, "ip link set lo up")
        ns(space, f"ip link set {dev} up")
        # Checksums finished in software: the capture sees what a NIC would send.
        ns(space, f"ethtool -K {dev} tx off tso off gso off", check=False)
        ns(space, f"ip addr add {a4}/24 dev {dev}")
        ns(space, f"ip addr add {a6}/64 dev {dev} nodad")
    mac_b = mac_of(DEV_B, NS_B)
    # No ARP/ND on the wire: the captures hold only the test's packets and the counters are exact.
    ns(NS_A, f"ip neigh add {B4} lladdr {mac_b} dev {DEV_A} nud permanent")
    ns(NS_A, f"ip neigh add {B6} lladdr {mac_b} dev {DEV_A} nud permanent")
    return mac_of(DEV_A, NS_A), mac_b


def teardown():
    for cmd in (f"ip netns del {NS_A}", f"ip netns del {NS_B}"):
        subprocess.run(cmd, shell=True, capture_output=True)


def main():
    results = Results("hostmark")
    check = results.check

    check("config_errors_are_clear", config_checks)
    check("cli_version_help_and_option_forms", cli_conventions)
    check("needs_root_and_an_existing_device", needs_root_and_device)
    check("bpf_program_classifies_as_the_gateway", equivalence)

    live = ["marks_roce_by_class_keeps_ecn_checksums_icrc", "kernel_udp_sockets_ipv4_ipv6",
            "vlan_priority_in_frame_and_offloaded_tag", "reattach_updates_in_place_never_stacks",
            "counters_as_table_and_prometheus_text", "detach_removes_only_what_attach_added"]
    try:
        require_root_and_netns(TAG, ("ip", "tc", "ethtool", "dumpcap"))
    except Skip as e:
        results.skip(live, e)
        return finish(results)

    try:
        mac_a, mac_b = topology()
        cfg_a = write("a.toml", CONFIG_A)
        rc, out = hm(["attach", "--dev", DEV_A, "--config", cfg_a])
        # Only a kernel without BPF or clsact is a reason to skip; a refused program fails.
        if rc != 0 and ("no BPF system call" in out or "cannot add the clsact qdisc" in out):
            results.skip(live, f"kernel without BPF tc support: {out.strip()}")
            return finish(results)
        eq(rc, 0, "attach: " + out)
        ok("clsact qdisc added" in out, "attach created the clsact qdisc: " + out)
        sent = {"roce-cnp": 0, "roce-data": 0, "bulk-af11": 0}

        def frame(l3, l4, payload=b""):
            return Ether(raw(Ether(src=mac_a, dst=mac_b) / l3 / l4 / Raw(payload)))

        def roce(v6, opcode, tos, sport):
            p = pktlib.roce(A6 if v6 else A4, B6 if v6 else B4, opcode=opcode, tos=tos, sport=sport,
                            payload=48)
            p[Ether].src, p[Ether].dst = mac_a, mac_b
            return Ether(raw(p))

        def exchange(pkts, dev=DEV_B):
            cap = Capture(TMP, "cap", dev, NS_B)
            send_from(TMP, NS_A, DEV_A, pkts)
            return cap.stop()

        def by_sport(captured, sport):
            # From A only: B's ICMP errors quote our datagrams (scapy sees UDP in them too).
            got = [p for p in captured if p[Ether].src == mac_a and
                   (UDP in p and p[UDP].sport == sport or TCP in p and p[TCP].sport == sport)]
            eq(len(got), 1, f"frames with source port {sport}")
            return got[0]

        def marked(p, tos):
            """What the frame must look like after marking: TOS changed, IPv4 checksum redone."""
            q = p.copy()
            if IP in q:
                q[IP].tos = tos
                q[IP].chksum = None
            else:
                q[IPv6].tc = tos
            return raw(Ether(raw(q)))

        def marking():
            begin()
            cases = [  # (frame, class or None, expected TOS)
                (roce(False, 0x81, 0x01, 40001), "roce-cnp", 48 << 2 | 1),
                (roce(False, 0x0A, 0x02, 40002), "roce-data", 26 << 2 | 2),
                (roce(False, 0x0A, 46 << 2 | 3, 40003), "roce-data", 26 << 2 | 3),  # CE kept
                (roce(True, 0x0A, 0x03, 40004), "roce-data", 26 << 2 | 3),
                (roce(True, 0x81, 0x00, 40005), "roce-cnp", 48 << 2),
                (roce(True, 0x04, 48 << 2 | 2, 40006), "roce-data", 26 << 2 | 2),
                # IPv4 options and an IPv6 destination-options header before the UDP header.
                (frame(IP(src=A4, dst=B4, tos=0x02, options=[b"\x01\x01\x01\x00"]),
                       UDP(sport=40007, dport=4791), b"\x81" + bytes(31)), "roce-cnp", 48 << 2 | 2),
                (frame(IPv6(src=A6, dst=B6, tc=0x01) / IPv6ExtHdrDestOpt(),
                       UDP(sport=40008, dport=4791), b"\x0a" + bytes(31)), "roce-data", 26 << 2 | 1),
                # UDP/4791 too short for a BTH: not a CNP, still the RoCE port.
                (frame(IP(src=A4, dst=B4, tos=0), UDP(sport=40009, dport=4791), b"\x81\x00"),
                 "roce-data", 26 << 2),
                # A TCP class that matches on the packet's DSCP (10 or 12 → 0).
                (frame(IP(src=A4, dst=B4, tos=10 << 2 | 1), TCP(sport=40010, dport=80)), "bulk-af11", 1),
                # Untouched: other UDP, TCP with another DSCP, the RoCE port over TCP.
                (frame(IP(src=A4, dst=B4, tos=0x11), UDP(sport=40011, dport=53), b"x" * 20), None, 0x11),
                (frame(IP(src=A4, dst=B4, tos=14 << 2), TCP(sport=40012, dport=80)), None, 14 << 2),
                (frame(IPv6(src=A6, dst=B6, tc=0x05), TCP(sport=40013, dport=4791)), None, 0x05),
            ]
            # A non-first IPv4 fragment has no UDP header: no class can see its port.
            frag = Ether(raw(Ether(src=mac_a, dst=mac_b) /
                             IP(src=A4, dst=B4, tos=0x09, proto=17, frag=100, id=7) / Raw(bytes(40))))
            captured = exchange([c[0] for c in cases] + [frag])
            for p, cls, tos in cases:
                sport = p[UDP].sport if UDP in p else p[TCP].sport
                got = by_sport(captured, sport)
                eq(raw(got), marked(p, tos), f"frame from port {sport} ({cls})")
                if IP in got:
                    ok(pktlib.ipv4_csum_ok(got[IP]), f"IPv4 header checksum of port {sport}")
                if sport <= 40006:  # Built by pktlib.roce(), with a valid ICRC.
                    ok(pktlib.icrc_ok(got), f"RoCE ICRC still valid after marking, port {sport}")
                if cls:
                    sent[cls] += 1
            fr = [p for p in captured if IP in p and p[IP].id == 7 and p[IP].frag == 100]
            eq(len(fr), 1, "the fragment arrived")
            eq(fr[0][IP].tos, 0x09, "fragment TOS untouched")
            assert_counters()

        def class_packets():
            rc, out = hm(["status", "--dev", DEV_A, "--prometheus"])
            eq(rc, 0, "status --prometheus: " + out)
            m = prometheus(out)
            return {cls: counter(m, "dscpgw_hostmark_class_packets_total", cls) for cls in sent}

        base = {}

        def begin():
            # Each test checks the counters it moved, so that one failure does not cascade.
            base.update(class_packets())
            for k in sent:
                sent[k] = 0

        def assert_counters():
            now = class_packets()
            for cls, n in sent.items():
                eq(now[cls] - base[cls], n, f"{cls} packets counted")

        check(live[0], marking)

        def kernel_sockets():
            begin()
            cap = Capture(TMP, "cap-sock", DEV_B, NS_B, "udp port 4791")
            code = (
                "import socket\n"
                f"s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                "s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0x02)\n"
                f"s.bind(('{A4}', 41001))\n"
                f"s.sendto(bytes([0x81]) + bytes(47), ('{B4}', 4791))\n"
                f"s.sendto(bytes([0x0a]) + bytes(999), ('{B4}', 4791))\n"
                f"t = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n"
                "t.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, 0x01)\n"
                f"t.bind(('{A6}', 41002))\n"
                f"t.sendto(bytes([0x81]) + bytes(47), ('{B6}', 4791))\n"
                f"t.sendto(bytes([0x0a]) + bytes(999), ('{B6}', 4791))\n")
            ns(NS_A, f"{sys.executable} -c \"{code}\"")
            got = cap.stop()
            eq(len(got), 4, "kernel-sent RoCE datagrams captured")
            want = [(IP, 48 << 2 | 2), (IP, 26 << 2 | 2), (IPv6, 48 << 2 | 1), (IPv6, 26 << 2 | 1)]
            for p, (layer, tos) in zip(got, want):
                ok(layer in p, f"{layer.__name__} expected")
                eq(p[IP].tos if layer is IP else p[IPv6].tc, tos, "kernel-sent packet's TOS")
                if layer is IP:
                    ok(pktlib.ipv4_csum_ok(p[IP]), "IPv4 header checksum")
                    c = p[IP].copy()
                    c[UDP].chksum = None
                    eq(IP(raw(c))[UDP].chksum, p[UDP].chksum, "UDP checksum over IPv4")
                else:
                    ok(pktlib.udp6_csum_ok(p[IPv6]), "UDP checksum over IPv6")
            sent["roce-cnp"] += 2
            sent["roce-data"] += 2
            assert_counters()

        check(live[1], kernel_sockets)

        def vlan():
            begin()
            # A tag inside the frame (as a raw socket or a bridge hands it over) ...
            inline = [Ether(raw(Ether(src=mac_a, dst=mac_b) / Dot1Q(vlan=200, prio=0) /
                                IP(src=A4, dst=B4, tos=0) / UDP(sport=42001, dport=4791) /
                                Raw(b"\x81" + bytes(31)))),
                      Ether(raw(Ether(src=mac_a, dst=mac_b) / Dot1Q(vlan=200, prio=7) /
                                IP(src=A4, dst=B4, tos=0) / UDP(sport=42002, dport=53) / Raw(b"x")))]
            got = exchange(inline)
            cnp = by_sport(got, 42001)
            eq(cnp[Dot1Q].prio, 6, "in-frame tag: CNP priority")
            eq(cnp[Dot1Q].vlan, 200, "VLAN id kept")
            eq(cnp[IP].tos, 48 << 2, "tagged CNP DSCP")
            ok(pktlib.ipv4_csum_ok(cnp[IP]), "tagged IPv4 checksum")
            eq(by_sport(got, 42002)[Dot1Q].prio, 7, "no class: priority untouched")
            sent["roce-cnp"] += 1
            # ... and a tag beside the frame, in the skb's metadata, as a VLAN device with TX VLAN
            # offload hands it to its lower device. This kernel has no 8021q module: a tc filter
            # ahead of ours (lower priority number) pushes the tag the same way.
            ns(NS_A, f"tc filter add dev {DEV_A} egress prio 1 bpf da obj {VLAN_PUSH} sec tc")
            cap = Capture(TMP, "cap-vlan", DEV_B, NS_B)
            code = ("import socket\n"
                    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                    f"s.bind(('{A4}', 42003))\n"
                    f"s.sendto(bytes([0x0a]) + bytes(63), ('{B4}', 4791))\n")
            ns(NS_A, f"{sys.executable} -c \"{code}\"")
            ns(NS_A, f"tc filter del dev {DEV_A} egress prio 1")
            got = [p for p in cap.stop() if UDP in p and p[UDP].sport == 42003]
            eq(len(got), 1, "datagram through the VLAN device")
            ok(Dot1Q in got[0], "it carries its tag")
            eq(got[0][Dot1Q].vlan, 100, "VLAN id kept")
            eq(got[0][Dot1Q].prio, 3, "offloaded tag: data priority")
            eq(got[0][IP].tos, 26 << 2, "data DSCP")
            sent["roce-data"] += 1
            rc, out = hm(["status", "--dev", DEV_A, "--prometheus"])
            m = prometheus(out)
            eq(counter(m, "dscpgw_hostmark_class_pcp_rewrites_total", "roce-cnp"), 1, "CNP PCP rewrites")
            eq(counter(m, "dscpgw_hostmark_class_pcp_rewrites_total", "roce-data"), 1, "data PCP rewrites")
            assert_counters()

        check(live[2], vlan)

        def reattach():
            begin()
            try:
                rc, out = hm(["attach", "--dev", DEV_A, "--config", write("b.toml", CONFIG_B)])
                eq(rc, 0, "second attach: " + out)
                ok("updated in place" in out and "counters kept" in out, out)
                filters = ns(NS_A, f"tc filter show dev {DEV_A} egress")
                eq(len(re.findall(r"handle 0xd5c9", filters)), 1, "exactly one hostmark filter:\n" + filters)
                got = exchange([roce(False, 0x0A, 0, 43001), roce(False, 0x81, 0, 43002)])
                eq(by_sport(got, 43001)[IP].tos, 46 << 2, "new data DSCP applied without detach")
                eq(by_sport(got, 43002)[IP].tos, 48 << 2, "CNP DSCP")
                sent["roce-data"] += 1
                sent["roce-cnp"] += 1
                assert_counters()
                rc, out = hm(["status", "--dev", DEV_A])
                ok("rules generation 2" in out, out)
                rc, out = hm(["attach", "--dev", DEV_A, "--config", write("c.toml", CONFIG_C)])
                ok(rc == 0 and "counters reset" in out, out)
                got = exchange([roce(False, 0x0A, 0x02, 43003), roce(False, 0x81, 0, 43004)])
                eq(by_sport(got, 43003)[IP].tos, 0x02, "data class gone: untouched")
                eq(by_sport(got, 43004)[IP].tos, 40 << 2, "CNP now 40")
                m = prometheus(hm(["status", "--dev", DEV_A, "--prometheus"])[1])
                eq(counter(m, "dscpgw_hostmark_class_packets_total", "cnp-only"), 1, "fresh counter")
                ok(all(k[0] != "dscpgw_hostmark_class_packets_total" or ("class", "roce-data") not in k[1]
                       for k in m), "old classes no longer reported")
                # Concurrent attaches are serialised: none is lost, none stacks.
                gen = m[("dscpgw_hostmark_rules_generation", frozenset({("device", DEV_A)}))]
                cfgs = [write("b.toml", CONFIG_B), write("c.toml", CONFIG_C)]
                procs = [subprocess.Popen(["ip", "netns", "exec", NS_A, HM, "attach", "--dev", DEV_A,
                                           "--config", cfgs[i % 2]], stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True) for i in range(8)]
                for p in procs:
                    out, _ = p.communicate(timeout=60)
                    eq(p.returncode, 0, "concurrent attach: " + out)
                m = prometheus(hm(["status", "--dev", DEV_A, "--prometheus"])[1])
                eq(m[("dscpgw_hostmark_rules_generation", frozenset({("device", DEV_A)}))], gen + 8,
                   "rule generations after 8 concurrent attaches")
                filters = ns(NS_A, f"tc filter show dev {DEV_A} egress")
                eq(len(re.findall(r"handle 0xd5c9", filters)), 1, "one filter after concurrent attaches")
            finally:
                # Back to config A for the remaining tests, whatever happened above.
                eq(hm(["attach", "--dev", DEV_A, "--config", cfg_a])[0], 0, "attach A again")

        check(live[3], reattach)

        def counters_text():
            begin()
            exchange([roce(False, 0x81, 0, 44001), roce(True, 0x0A, 0, 44002),
                      frame(IP(src=A4, dst=B4), UDP(sport=44003, dport=53))])
            sent["roce-cnp"] += 1
            sent["roce-data"] += 1
            rc, table = hm(["status", "--dev", DEV_A])
            eq(rc, 0, "status")
            row = re.search(r"^\s+roce-cnp\s+.*?->.*?\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", table, re.M)
            ok(row is not None, "roce-cnp row in:\n" + table)
            eq(int(row.group(1)), base["roce-cnp"] + 1, "table: CNP packets")
            ok(int(row.group(3)) >= 1, "table: CNP DSCP rewrites")
            path = os.path.join(TMP, "hostmark.prom")
            rc, out = hm(["status", "--dev", DEV_A, "--textfile", path])
            eq(rc, 0, "status --textfile: " + out)
            with open(path) as f:
                m = prometheus(f.read())
            eq(m[("dscpgw_hostmark_attached", frozenset({("device", DEV_A)}))], 1, "attached gauge")
            eq(counter(m, "dscpgw_hostmark_class_packets_total", "roce-cnp"), base["roce-cnp"] + 1,
               "textfile CNP packets")
            assert_counters()
            ok(counter(m, "dscpgw_hostmark_class_bytes_total", "roce-cnp") >= 60, "CNP bytes")
            nc = m[("dscpgw_hostmark_unclassified_packets_total",
                    frozenset({("device", DEV_A), ("reason", "no_class")}))]
            ok(nc >= 1, "the DNS-port datagram counted as no class")
            ok(not [f for f in os.listdir(TMP) if ".tmp." in f], "no temporary file left behind")
            # Without --dev: every device of the namespace that has it (here the one).
            rc, table = hm(["status"])
            ok(rc == 0 and f"dscpgw-hostmark on {DEV_A}: attached" in table and "lo:" not in table, table)
            rc, out = hm(["status", "--prometheus"])
            m_all = prometheus(out)
            eq(counter(m_all, "dscpgw_hostmark_class_packets_total", "roce-cnp"), base["roce-cnp"] + 1,
               "all-device exposition")
            eq(sorted(k for k in m_all if k[0] == "dscpgw_hostmark_attached"),
               [("dscpgw_hostmark_attached", frozenset({("device", DEV_A)}))], "only attached devices")
            # Prometheus' own linter (scripts/install-deps.sh installs Debian's prometheus for it).
            ok(shutil.which("promtool") is not None, "promtool not installed")
            p = subprocess.run(["promtool", "check", "metrics"], input=open(path).read(),
                               capture_output=True, text=True)
            eq(p.returncode, 0, "promtool check metrics: " + p.stdout + p.stderr)

        check(live[4], counters_text)

        def detach():
            rc, out = hm(["detach", "--dev", DEV_A])
            ok(rc == 0 and "clsact qdisc removed" in out, out)
            ok("clsact" not in ns(NS_A, f"tc qdisc show dev {DEV_A}"), "clsact gone")
            got = exchange([roce(False, 0x81, 0x01, 45001)])
            eq(by_sport(got, 45001)[IP].tos, 0x01, "after detach the traffic is untouched")
            rc, out = hm(["status", "--dev", DEV_A])
            ok(rc == 3 and "not attached" in out, out)
            path = os.path.join(TMP, "detached.prom")
            rc, out = hm(["status", "--dev", DEV_A, "--textfile", path])
            eq(rc, 3, "status --textfile when detached")
            with open(path) as f:
                eq(prometheus(f.read()), {("dscpgw_hostmark_attached", frozenset({("device", DEV_A)})): 0},
                   "detached textfile")
            rc, out = hm(["detach", "--dev", DEV_A])
            ok(rc == 0 and "nothing to remove" in out, "second detach: " + out)
            rc, out = hm(["status"])
            ok(rc == 3 and "attached to no device" in out, "status of all devices, none attached: " + out)
            # Someone else's clsact and filter: attach uses them, detach leaves them. (Theirs
            # matches nothing, so classification goes on to ours: see docs/hostmark.md.)
            other = "prio 7 bpf bytecode '1,6 0 0 0,' classid 1:1"
            ns(NS_A, f"tc qdisc add dev {DEV_A} clsact")
            ns(NS_A, f"tc filter add dev {DEV_A} egress {other}")
            rc, out = hm(["attach", "--dev", DEV_A, "--config", cfg_a])
            ok(rc == 0 and "clsact qdisc added" not in out, out)
            got = exchange([roce(False, 0x81, 0, 45002)])
            eq(by_sport(got, 45002)[IP].tos, 48 << 2, "marks beside another filter")
            rc, out = hm(["detach", "--dev", DEV_A])
            ok(rc == 0 and "clsact" not in out, out)
            ok("clsact" in ns(NS_A, f"tc qdisc show dev {DEV_A}"), "their clsact kept")
            filters = ns(NS_A, f"tc filter show dev {DEV_A} egress")
            ok("bytecode" in filters and "0xd5c9" not in filters, "their filter kept, ours gone:\n" + filters)
            # Our clsact, but another filter arrived since: the qdisc stays for it.
            ns(NS_A, f"tc filter del dev {DEV_A} egress prio 7")
            ns(NS_A, f"tc qdisc del dev {DEV_A} clsact")
            rc, out = hm(["attach", "--dev", DEV_A, "--config", cfg_a])
            ok(rc == 0 and "clsact qdisc added" in out, out)
            ns(NS_A, f"tc filter add dev {DEV_A} ingress {other}")
            rc, out = hm(["detach", "--dev", DEV_A])
            ok(rc == 0 and "clsact qdisc kept (1 other filters use it)" in out, out)
            ok("bytecode" in ns(NS_A, f"tc filter show dev {DEV_A} ingress"), "their ingress filter kept")

        check(live[5], detach)
    except Exception as e:  # noqa: BLE001
        results.fail("hostmark setup", e)
    finally:
        teardown()
    return finish(results)


def finish(results):
    shutil.rmtree(TMP, ignore_errors=True)
    return results.finish()


if __name__ == "__main__":
    sys.exit(main())
