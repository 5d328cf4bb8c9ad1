"""Network-namespace plumbing shared by the interop test and the live demo.

  netns idc                 root netns (dscpgw)                 netns cloud
  vi0 10.10.0.5/24 ===veth=== gi0 [lan, af_packet]
                              gc0 [wan, af_packet] ===veth=== vc0 198.18.0.2/24
                              VTEP 198.18.0.1                  vx0 vxlan id 100 remote 198.18.0.1,
                                                                   tos inherit, 10.20.0.9/24
"""
import logging
import os
import shutil
import signal
import subprocess
import time
import traceback

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import Ether, raw, rdpcap, wrpcap  # noqa: E402

PY = "/usr/bin/python3"


class Names:
    """Interface and namespace names; `tag` keeps concurrent runs apart (15-character limit)."""

    def __init__(self, tag):
        self.tag = tag
        self.ns_idc, self.ns_cloud = f"{tag}idc", f"{tag}cloud"
        self.gi, self.vi, self.gc, self.vc = f"{tag}gi", f"{tag}vi", f"{tag}gc", f"{tag}vc"


class Skip(Exception):
    pass


def sh(cmd, check=True, **kw):
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{cmd}: {p.stderr.strip()}")
    return p.stdout.strip()


def ns(name, cmd, **kw):
    return sh(f"ip netns exec {name} {cmd}", **kw)


def mac_of(dev, netns=None):
    out = ns(netns, f"cat /sys/class/net/{dev}/address") if netns else sh(f"cat /sys/class/net/{dev}/address")
    return out.strip()


class Results:
    """PASS/FAIL/SKIP lines per test and the suite's summary line, as scripts/test.sh reads them."""

    def __init__(self, suite):
        self.suite = suite
        self.passed = self.failed = self.skipped = 0

    def check(self, name, fn):
        try:
            fn()
            print(f"PASS {name}")
            self.passed += 1
        except Skip as e:
            print(f"SKIP {name}: {e}")
            self.skipped += 1
        except Exception as e:  # noqa: BLE001
            print(f"FAIL {name}: {e}")
            traceback.print_exc(limit=2)
            self.failed += 1

    def skip(self, names, why):
        for n in names:
            print(f"SKIP {n}: {why}")
        self.skipped += len(names)

    def fail(self, what, e):
        print(f"FAIL {what}: {e}")
        traceback.print_exc(limit=3)
        self.failed += 1

    def finish(self):
        print(f"{self.suite}: {self.passed} passed, {self.failed} failed, {self.skipped} skipped")
        return 1 if self.failed else 0


def require_root_and_netns(tag, tools):
    if os.geteuid() != 0:
        raise Skip("needs root")
    for tool in tools:
        if shutil.which(tool) is None:
            raise Skip(f"{tool} not installed")
    probe = f"{tag}probe"
    if subprocess.run(f"ip netns add {probe}", shell=True, capture_output=True).returncode != 0:
        raise Skip("cannot create network namespaces")
    sh(f"ip netns del {probe}")


def preconditions(n):
    require_root_and_netns(n.tag, ("ip", "ethtool", "dumpcap", "ping"))
    if subprocess.run(f"ip link add {n.tag}vt type vxlan id 1 dstport 4789 local 127.0.0.1", shell=True,
                      capture_output=True).returncode != 0:
        raise Skip("kernel has no VXLAN")
    sh(f"ip link del {n.tag}vt")


def topology(n, vc_mac=None):
    sh(f"ip netns add {n.ns_idc}")
    sh(f"ip netns add {n.ns_cloud}")
    sh(f"ip link add {n.gi} type veth peer name {n.vi}")
    sh(f"ip link add {n.gc} type veth peer name {n.vc}")
    sh(f"ip link set {n.vi} netns {n.ns_idc}")
    sh(f"ip link set {n.vc} netns {n.ns_cloud}")
    # af_packet sees frames as the kernel hands them over: no checksum or segmentation offload, so
    # every packet on the wire is complete (and the gateway's MTU checks see real sizes).
    for dev in (n.gi, n.gc):
        sh(f"ip link set {dev} up")
        sh(f"ethtool -K {dev} tx off rx off tso off gso off gro off", check=False)
        sh(f"sysctl -qw net.ipv6.conf.{dev}.disable_ipv6=1", check=False)
    # No IPv6 chatter (router solicitations, MLD) through the tunnel: the captures stay exact.
    for space in (n.ns_idc, n.ns_cloud):
        ns(space, "sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        ns(space, "sysctl -qw net.ipv6.conf.default.disable_ipv6=1")
    ns(n.ns_idc, "ip link set lo up")
    ns(n.ns_idc, f"ip link set {n.vi} up")
    ns(n.ns_idc, f"ethtool -K {n.vi} tx off tso off gso off", check=False)
    ns(n.ns_idc, f"ip addr add 10.10.0.5/24 dev {n.vi}")
    ns(n.ns_cloud, "ip link set lo up")
    if vc_mac:
        ns(n.ns_cloud, f"ip link set {n.vc} address {vc_mac}")
    ns(n.ns_cloud, f"ip link set {n.vc} up")
    ns(n.ns_cloud, f"ethtool -K {n.vc} tx off tso off gso off", check=False)
    ns(n.ns_cloud, f"ip addr add 198.18.0.2/24 dev {n.vc}")
    ns(n.ns_cloud, f"ip link add vx0 type vxlan id 100 remote 198.18.0.1 local 198.18.0.2 dstport 4789 "
                 f"tos inherit dev {n.vc}")
    ns(n.ns_cloud, "ip link set vx0 up")
    ns(n.ns_cloud, "ethtool -K vx0 tx off tso off gso off", check=False)
    ns(n.ns_cloud, "ip addr add 10.20.0.9/24 dev vx0")
    # The tunnel is transparent L2: each side reaches the other's prefix on-link, with the far
    # host's MAC (the gateway does not carry ARP through the tunnel).
    vx_mac = mac_of("vx0", n.ns_cloud)
    vi_mac = mac_of(n.vi, n.ns_idc)
    ns(n.ns_idc, f"ip route add 10.20.0.0/24 dev {n.vi}")
    ns(n.ns_idc, f"ip neigh add 10.20.0.9 lladdr {vx_mac} dev {n.vi}")
    ns(n.ns_cloud, "ip route add 10.10.0.0/24 dev vx0")
    ns(n.ns_cloud, f"ip neigh add 10.10.0.5 lladdr {vi_mac} dev vx0")
    return vx_mac, vi_mac


def teardown(n):
    for cmd in (f"ip netns del {n.ns_idc}", f"ip netns del {n.ns_cloud}", f"ip link del {n.gi}", f"ip link del {n.gc}"):
        subprocess.run(cmd, shell=True, capture_output=True)


class Capture:
    """dumpcap on an interface, optionally inside a namespace."""

    def __init__(self, tmp, name, dev, netns=None, filt=""):
        self.path = os.path.join(tmp, f"{name}.pcap")
        cmd = ["dumpcap", "-q", "-i", dev, "-w", self.path] + (["-f", filt] if filt else [])
        if netns:
            cmd = ["ip", "netns", "exec", netns] + cmd
        self.p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while not os.path.exists(self.path) and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)

    def stop(self):
        time.sleep(0.5)
        self.p.send_signal(signal.SIGINT)
        self.p.wait(timeout=10)
        return [Ether(raw(p)) for p in rdpcap(self.path)] if os.path.getsize(self.path) > 24 else []


def send_from(tmp, netns, dev, pkts):
    path = os.path.join(tmp, f"send-{netns}.pcap")
    wrpcap(path, pkts)
    code = ("import logging; logging.getLogger('scapy.runtime').setLevel(logging.ERROR)\n"
            "from scapy.all import rdpcap, sendp\n"
            f"sendp(rdpcap('{path}'), iface='{dev}', verbose=False, inter=0.01)\n")
    ns(netns, f"{PY} -c \"{code}\"")


# The cloud host: a TCP sink on 5201 for argv[1] connections (default 1) and a probe receiver on UDP
# 4791 and 5001, each datagram carrying its send time (CLOCK_MONOTONIC, one clock for every
# namespace); prints what it saw as JSON when every sender has closed: the probes' one-way delays,
# and their send times in "cnp_at" / "data_at".
TCP_SINK = r"""
import json, select, socket, struct, sys, time
flows = int(sys.argv[1]) if len(sys.argv) > 1 else 1
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("10.20.0.9", 5201)); srv.listen(flows)
udp = []
for port in (4791, 5001):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("10.20.0.9", port)); udp.append(u)
conns, closed, total, delays, sent_at = [], 0, 0, {4791: [], 5001: []}, {4791: [], 5001: []}
deadline = time.monotonic() + 60
while closed < flows and time.monotonic() < deadline:
    r, _, _ = select.select([srv] + udp + conns, [], [], 1)
    for s in r:
        if s is srv:
            conns.append(srv.accept()[0])
        elif s in conns:
            d = s.recv(1 << 20)
            total += len(d)
            if not d:
                conns.remove(s); s.close(); closed += 1
        else:
            d = s.recv(2048)
            t = struct.unpack_from("!d", d, 12)[0]
            delays[s.getsockname()[1]].append(time.monotonic() - t)
            sent_at[s.getsockname()[1]].append(t)
print(json.dumps({"bytes": total, "cnp": delays[4791], "data": delays[5001],
                  "cnp_at": sent_at[4791], "data_at": sent_at[5001]}))
"""

# The idc host: argv[3] TCP flows (default 1) for argv[1] seconds (congestion control argv[2]), and
# probes every 20 ms: a CNP (BTH opcode 0x81, DSCP 48 after the gateway's class) and an ECT(0)
# datagram into the TCP flows' queue.
TCP_SOURCE = r"""
import json, socket, struct, sys, threading, time
secs = float(sys.argv[1]); cc = sys.argv[2]; flows = int(sys.argv[3]) if len(sys.argv) > 3 else 1
socks = []
for _ in range(flows):
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    s.connect(("10.20.0.9", 5201))
    socks.append(s)
stop = time.monotonic() + secs
def probes():
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); d.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 2)
    n = 0
    while time.monotonic() < stop - 0.5:
        bth = bytes([0x81, 0, 0xff, 0xff, 0, 0, 0, 0x12, 0, 0, 0, n & 0xff])
        c.sendto(bth + struct.pack("!d", time.monotonic()) + bytes(44), ("10.20.0.9", 4791))
        d.sendto(bytes(12) + struct.pack("!d", time.monotonic()) + bytes(44), ("10.20.0.9", 5001))
        n += 1
        time.sleep(0.02)
sent = [0] * flows
def flow(i):
    buf = bytes(1 << 16)
    while time.monotonic() < stop:
        sent[i] += socks[i].send(buf)
    socks[i].shutdown(socket.SHUT_WR)
    socks[i].recv(1)
threads = [threading.Thread(target=probes)] + [threading.Thread(target=flow, args=(i,)) for i in range(flows)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"sent": sum(sent), "cc": cc, "flows": flows}))
"""
