#!/usr/bin/python3
"""Live demo: dscpgw between two network namespaces, the Linux kernel's VXLAN as the cloud's VTEP.

Creates the namespaces `dgwidc` and `dgwcloud` (see tests/interop/netns.py), starts `dscpgw run`
with config/live-demo.toml, sends a short mixed workload from the LAN side (RoCE data with several
DSCP/ECN values, a CNP, TCP), sends RoCE back from the cloud, pings the VTEP, then shows tshark's
decoding on both sides of the tunnel and the gateway's counters; then one congested second: a TCP
flow with ECN fills the 100 Mbit/s wan port while CNPs are sent every 20 ms, and the demo shows the
CE marks, the queue and the CNPs' delay. It removes everything it created.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from scapy.all import Ether, raw  # noqa: E402
import pktlib  # noqa: E402
from netns import (Names, Skip, Capture, TCP_SINK, TCP_SOURCE, sh, ns, preconditions, topology,  # noqa: E402
                   teardown, send_from)

N = Names("dgw")
CLOUD_MAC = "02:00:00:00:0c:01"


def show(title, path, fields):
    print(f"\n== {title}")
    cols = " ".join(f"-e {f}" for f in fields)
    # RoCE and TCP only: the receivers' kernels also answer with ICMP port unreachable (nothing
    # listens on UDP/4791 there) and TCP resets, which cross the tunnel too.
    out = sh(f"tshark -r {path} -Y '!icmp && (infiniband || tcp.flags.syn == 1)' -T fields -E separator='|' -E header=y {cols}",
             check=False)
    for line in out.splitlines():
        print("  " + "  ".join(c if c else "-" for c in line.split("|")))


def congested_second(binary, tmp, ctl):
    """One second of TCP (ECN) from the LAN filling the shaped wan port, CNP probes meanwhile."""
    print("\n== one congested second: TCP with ECN from 10.10.0.5 fills the 100 Mbit/s wan port; a CNP "
          "(UDP/4791, BTH 0x81) and a datagram of the TCP flow's queue every 20 ms")
    for space in (N.ns_idc, N.ns_cloud):
        ns(space, "sysctl -qw net.ipv4.tcp_ecn=1")
    ns(N.ns_idc, f"ip route change 10.20.0.0/24 dev {N.vi} mtu 1450")
    for name, code in (("sink.py", TCP_SINK), ("source.py", TCP_SOURCE)):
        with open(os.path.join(tmp, name), "w") as f:
            f.write(code)
    sink = subprocess.Popen(["ip", "netns", "exec", N.ns_cloud, sys.executable, os.path.join(tmp, "sink.py")],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    source = subprocess.Popen(["ip", "netns", "exec", N.ns_idc, sys.executable, os.path.join(tmp, "source.py"),
                               "1.5", "cubic"], stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)  # Mid-flow: what the queues hold.
    mid = subprocess.run(ctl + ["queues"], capture_output=True, text=True).stdout
    source.communicate(timeout=30)
    got = json.loads(sink.communicate(timeout=30)[0])
    for line in mid.rstrip().splitlines():
        print("  " + line)
    cnp, data = sorted(got["cnp"]), sorted(got["data"])
    if cnp and data:
        print(f"  TCP delivered {got['bytes'] * 8 / 1.5 / 1e6:.1f} Mbit/s of payload; one-way delay of "
              f"{len(cnp)} CNPs: median {cnp[len(cnp) // 2] * 1e3:.2f} ms, max {cnp[-1] * 1e3:.2f} ms; of "
              f"{len(data)} datagrams behind the TCP flow: median {data[len(data) // 2] * 1e3:.2f} ms")
    print("  (CE_MARKED: ECT packets marked instead of dropped; DROP_*: none while the flow backs off)")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "dscpgw")
    try:
        preconditions(N)
    except Skip as e:
        print(f"live demo not possible here ({e}); run as root on a kernel with veth and vxlan")
        return 2
    teardown(N)  # Leftovers of an interrupted run.
    tmp = tempfile.mkdtemp(prefix="dscpgw-demo-")
    gw = None
    try:
        vx_mac, vi_mac = topology(N, vc_mac=CLOUD_MAC)
        print("namespaces dgwidc (LAN 10.10.0.5) and dgwcloud (underlay 198.18.0.2, kernel VXLAN vx0 10.20.0.9)")
        log = open(os.path.join(tmp, "dscpgw.log"), "w+")
        gw = subprocess.Popen([binary, "run", "--config", os.path.join(ROOT, "config", "live-demo.toml")],
                              stdout=log, stderr=subprocess.STDOUT)
        time.sleep(3)
        if gw.poll() is not None:
            log.seek(0)
            print(log.read())
            return 1
        print("\n== the cloud's kernel pings the gateway's VTEP (ARP and ICMP answered by dscpgw)")
        print(ns(N.ns_cloud, "ping -c 2 -i 0.3 198.18.0.1", check=False))

        wire = Capture(tmp, "wire", N.vc, N.ns_cloud, "udp port 4789")
        cloud = Capture(tmp, "cloud", "vx0", N.ns_cloud, "ip")
        idc = Capture(tmp, "idc", N.vi, N.ns_idc, "ip")
        out = []
        for n, (op, tos) in enumerate([(0x0A, 0x00), (0x0A, 0x02), (0x04, 0x03), (0x81, 0x00), (0x0A, 46 << 2 | 2)]):
            p = pktlib.roce("10.10.0.5", "10.20.0.9", opcode=op, tos=tos, payload=256, psn=n, sport=49152 + n)
            p[Ether].src, p[Ether].dst = vi_mac, vx_mac
            out.append(Ether(raw(p)))
        t = pktlib.other("10.10.0.5", "10.20.0.9", tos=0)
        t[Ether].src, t[Ether].dst = vi_mac, vx_mac
        out.append(Ether(raw(t)))
        send_from(tmp, N.ns_idc, N.vi, out)
        back = []
        for n, tos in enumerate([26 << 2 | 2, 26 << 2 | 3]):
            p = pktlib.roce("10.20.0.9", "10.10.0.5", tos=tos, psn=n, sport=50000 + n)
            p[Ether].src, p[Ether].dst = vx_mac, vi_mac
            back.append(Ether(raw(p)))
        send_from(tmp, N.ns_cloud, "vx0", back)
        w, c, i = wire.stop(), cloud.stop(), idc.stop()
        fields = ["ip.src", "ip.dst", "ip.dsfield.dscp", "ip.dsfield.ecn", "vxlan.vni", "infiniband.bth.opcode",
                  "tcp.dstport"]
        show("on the underlay wire (vc0), outer,inner: the outer header inherits the marked DSCP and the ECN",
             wire.path, fields)
        show("delivered by the cloud kernel's VXLAN (vx0): RoCE data DSCP 26, the CNP 48, TCP untouched",
             cloud.path, fields[:4] + fields[5:])
        show("in the LAN (vi0): sent, and received back from the cloud with DSCP and ECN intact", idc.path,
             fields[:4] + fields[5:])
        print(f"\n(captured {len(w)} tunnel packets, {len(c)} in the cloud, {len(i)} in the LAN)")
        time.sleep(1.2)  # One flow-table sample.
        ctl = [binary, "ctl", "--config", os.path.join(ROOT, "config", "live-demo.toml")]
        for view in (["stats"], ["flows", "--top", "5"], ["reload"]):
            print(f"\n== dscpgw ctl {' '.join(view)} (the control socket, while it runs)")
            p = subprocess.run(ctl + view, capture_output=True, text=True)
            print((p.stdout + p.stderr).rstrip())
        congested_second(binary, tmp, ctl)
        print("\n== Prometheus exposition (http://127.0.0.1:9550/metrics), per class and tunnel")
        import urllib.request
        with urllib.request.urlopen("http://127.0.0.1:9550/metrics", timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(("dscpgw_class_packets_total", "dscpgw_tunnel_cnp_packets_total", "dscpgw_queue_",
                                    "dscpgw_tunnel_packets_total", "dscpgw_config_generation")):
                    print("  " + line)
    finally:
        if gw is not None and gw.poll() is None:
            gw.send_signal(signal.SIGINT)
            gw.wait(timeout=20)
            log.seek(0)
            text = log.read()
            print("\n== dscpgw counters")
            print(text[text.find("ports:"):].rstrip())
        teardown(N)
        sh(f"rm -rf {tmp}", check=False)
        print("\nnamespaces removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
