#!/usr/bin/python3
"""Interop with real peers: `dscpgw run` between two network namespaces, the Linux kernel's VXLAN as
the far tunnel end.

  netns idc                 root netns (dscpgw)                 netns cloud
  vi0 10.10.0.5/24 ===veth=== gi0 [lan, af_packet]
                              gc0 [wan, af_packet] ===veth=== vc0 198.18.0.2/24
                              VTEP 198.18.0.1                  vx0 vxlan id 100 remote 198.18.0.1,
                                                                   tos inherit, 10.20.0.9/24

Captures (dumpcap) on vc0 and inside the namespaces are decoded by scapy and tshark, never by the
gateway. Needs root, `ip netns` and the vxlan and veth kernel modules; reports SKIP otherwise.
Usage: test_kernel_vxlan.py [DSCPGW_BINARY]. Prints PASS/FAIL/SKIP per test and a summary line.
"""
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
from scapy.all import IP, ICMP, Ether, raw  # noqa: E402
import pktlib  # noqa: E402
sys.path.insert(0, HERE)
from netns import Names, Results, Skip, Capture, sh, ns, mac_of, preconditions, topology, teardown, send_from  # noqa: E402

DSCPGW = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "dscpgw")
N = Names(f"d{os.getpid() % 10000}")
NS_IDC, NS_CLOUD = N.ns_idc, N.ns_cloud
GI, VI, GC, VC = N.gi, N.vi, N.gc, N.vc
TMP = tempfile.mkdtemp(prefix="dscpgw-interop-")
PY = "/usr/bin/python3"


CONFIG = """
[eal]
args = ["--no-huge", "-m", "512", "--no-shconf", "-l", "{lcores}"]
[gateway]
workers = 1
[[ports]]
name = "lan"
role = "inner"
device = "net_af_packet0,iface={gi}"
mtu = 1500
[[ports]]
name = "wan"
role = "outer"
device = "net_af_packet1,iface={gc}"
ipv4 = "198.18.0.1"
mac = "02:00:00:00:00:01"
mtu = 1500
[[tunnels]]
name = "cloud"
type = "vxlan"
vni = 100
remote = "198.18.0.2"
next_hop = "198.18.0.2"
routes = ["10.20.0.0/24"]
outer_dscp = "inherit"
ecn = "rfc6040"
inner_dscp_on_decap = "preserve"
[[tunnels]]
name = "geneve-only"
type = "geneve"
vni = 200
remote = "198.18.0.2"
next_hop_mac = "{vc_mac}"
routes = ["10.21.0.0/24"]
[[classes]]
name = "roce-cnp"
match = {{ udp_dst_port = 4791, bth_opcode = 0x81 }}
dscp = 48
[[classes]]
name = "roce-data"
match = {{ udp_dst_port = 4791 }}
dscp = 26
"""


def roce_from_idc(dst, tos, opcode=0x0A, psn=1, payload=64, vx_mac=None, vi_mac=None, sport=49152):
    p = pktlib.roce("10.10.0.5", dst, opcode=opcode, tos=tos, payload=payload, psn=psn, sport=sport)
    p[Ether].src, p[Ether].dst = vi_mac, vx_mac
    return Ether(raw(p))


def eq(a, b, what=""):
    if a != b:
        raise AssertionError(f"{what}: expected {b!r}, got {a!r}")


def main():
    results = Results("interop")
    names = ["idc_to_cloud_marked_and_inherited", "cloud_to_idc_rfc6040", "kernel_pings_vtep",
             "pmtu_icmp_reaches_sender", "geneve_on_the_wire_per_tshark", "underlay_arp_cannot_redirect_tunnel",
             "gateway_stops_cleanly", "policer_cuts_a_live_stream_to_pir",
             "routed_lan_gateway_as_next_hop", "tap_offloads_outer_ipv6_udp_checksum"]
    try:
        preconditions(N)
    except Skip as e:
        results.skip(names, e)
        return results.finish()
    gw = None
    try:
        vx_mac, vi_mac = topology(N)
        vc_mac = mac_of(VC, NS_CLOUD)
        cfg = os.path.join(TMP, "interop.toml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(lcores="0,1" if (os.cpu_count() or 1) >= 2 else "0", gi=GI, gc=GC,
                                  vc_mac=vc_mac) + f'\n[control]\nsocket = "{TMP}/gw.sock"\n')
        gw_log = open(os.path.join(TMP, "dscpgw.log"), "w+")
        gw = subprocess.Popen([DSCPGW, "run", "--config", cfg], stdout=gw_log, stderr=subprocess.STDOUT)
        time.sleep(3)
        if gw.poll() is not None:
            gw_log.seek(0)
            raise RuntimeError("dscpgw run exited: " + gw_log.read())
        # The kernel resolves our VTEP by ARP before its first VXLAN packet.
        ns(NS_CLOUD, "ping -c 1 -W 2 198.18.0.1", check=False)

        check = results.check

        def idc_to_cloud():
            wire = Capture(TMP, "wire-out", VC, NS_CLOUD, "udp port 4789 and src host 198.18.0.1")
            inner = Capture(TMP, "cloud-inner", "vx0", NS_CLOUD, "udp port 4791")
            pkts = [roce_from_idc("10.20.0.9", tos=t, psn=i, vx_mac=vx_mac, vi_mac=vi_mac, sport=49152 + i)
                    for i, t in enumerate([0x00, 0x02, 0x01, 0x03, 46 << 2 | 2])]
            pkts.append(roce_from_idc("10.20.0.9", tos=0x02, opcode=0x81, vx_mac=vx_mac, vi_mac=vi_mac))
            send_from(TMP, NS_IDC, VI, pkts)
            w, i = wire.stop(), inner.stop()
            eq(len(w), 6, "VXLAN frames on the wire")
            eq(len(i), 6, "frames the kernel decapsulated")
            for n, (o, d, src) in enumerate(zip(w, i, pkts)):
                exp_dscp = 48 if n == 5 else 26
                eq(o[IP].tos >> 2, exp_dscp, f"outer DSCP of frame {n}")
                eq(o[IP].tos & 3, src[IP].tos & 3, f"outer ECN of frame {n} copies the inner")
                eq(d[IP].tos, exp_dscp << 2 | (src[IP].tos & 3), f"DSCP/ECN the kernel delivered, frame {n}")
                assert pktlib.ipv4_csum_ok(d[IP]), "inner checksum after the kernel"
                assert pktlib.icrc_ok(d), "ICRC intact end to end"

        def cloud_to_idc():
            wire = Capture(TMP, "wire-in", VC, NS_CLOUD, "udp port 4789 and src host 198.18.0.2")
            got = Capture(TMP, "idc-in", VI, NS_IDC, "udp port 4791")
            # The kernel's VXLAN with "tos inherit" copies inner DSCP and ECN to the outer header.
            pkts = []
            for n, tos in enumerate([26 << 2 | 2, 26 << 2 | 0, 48 << 2 | 1]):
                p = pktlib.roce("10.20.0.9", "10.10.0.5", tos=tos, psn=n, sport=50000 + n)
                p[Ether].src, p[Ether].dst = vx_mac, vi_mac
                pkts.append(Ether(raw(p)))
            send_from(TMP, NS_CLOUD, "vx0", pkts)
            w, g = wire.stop(), got.stop()
            eq(len(w), 3, "kernel VXLAN frames")
            eq(len(g), 3, "decapsulated frames in idc")
            for o, d, src in zip(w, g, pkts):
                eq(o[IP].tos, src[IP].tos, "kernel tos inherit (the premise)")
                eq(d[IP].tos, src[IP].tos, "DSCP preserved, ECN per RFC 6040 (outer = inner)")
                assert pktlib.icrc_ok(d), "ICRC"
            out = ns(NS_CLOUD, "ip -s link show vx0")
            assert out, "vx0 stats"

        def kernel_pings_vtep():
            out = ns(NS_CLOUD, "ping -c 3 -i 0.2 -W 2 198.18.0.1")
            assert re.search(r"3 packets transmitted, 3 received", out), out
            neigh = ns(NS_CLOUD, "ip neigh show 198.18.0.1")
            assert "02:00:00:00:00:01" in neigh, f"kernel learned the VTEP's MAC by ARP: {neigh}"
            eq(mac_of(GC), "02:00:00:00:00:01", "the configured MAC applied to the wan device")

        def pmtu():
            # The LAN (1500) is larger than what the tunnel carries (1500 - 50): the gateway
            # signals the difference like a router between links of different MTU.
            eq(sh(f"cat /sys/class/net/{GI}/mtu"), "1500", "lan MTU applied to the device")
            got = Capture(TMP, "idc-icmp", VI, NS_IDC, "icmp")
            # A UDP socket of the host's own stack sends a 1460-byte DF datagram: it fits vi0 (1500)
            # but is 1510 bytes once encapsulated, over the wan MTU of 1500. The socket stays open
            # so the kernel can match the ICMP to it and learn the path MTU.
            code = ("import socket, time\n"
                    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                    "s.setsockopt(socket.IPPROTO_IP, 10, 2)\n"  # IP_MTU_DISCOVER = IP_PMTUDISC_DO
                    "s.connect(('10.20.0.9', 4791))\n"
                    "s.send(bytes(1432))\n"
                    "time.sleep(1)\n"
                    "print(s.getsockopt(socket.IPPROTO_IP, 14))\n")  # IP_MTU
            sock_mtu = ns(NS_IDC, f"{PY} -c \"{code}\"")
            g = got.stop()
            icmps = [p for p in g if ICMP in p and p[ICMP].type == 3]
            eq(len(icmps), 1, "one Fragmentation Needed")
            e = icmps[0]
            eq((e[ICMP].code, e[ICMP].nexthopmtu, e[IP].dst), (4, 1450, "10.10.0.5"), "ICMP contents")
            eq(sock_mtu, "1450", "the sender's socket learned the path MTU")
            route = ns(NS_IDC, "ip route get 10.20.0.9")
            assert "mtu 1450" in route, f"the sender's kernel cached the PMTU: {route}"

        def geneve_tshark():
            wire = Capture(TMP, "wire-geneve", VC, NS_CLOUD, "udp port 6081")
            p = roce_from_idc("10.21.0.7", tos=0x02, vx_mac=vx_mac, vi_mac=vi_mac)
            send_from(TMP, NS_IDC, VI, [p])
            wire.stop()
            out = sh(f"tshark -r {wire.path} -T fields -E separator='|' -e frame.protocols -e geneve.vni "
                     f"-e geneve.proto_type -e ip.dsfield.dscp -e infiniband.bth.opcode")
            f = out.splitlines()
            eq(len(f), 1, "Geneve frames")
            cols = f[0].split("|")
            assert "geneve:eth:ethertype:ip:udp:infiniband" in cols[0], cols[0]
            eq(int(cols[1], 0), 200, "VNI per tshark")
            eq(cols[2], "0x6558", "protocol per tshark")
            eq(cols[3], "26,26", "outer and inner DSCP per tshark")

        check("idc_to_cloud_marked_and_inherited", idc_to_cloud)
        check("cloud_to_idc_rfc6040", cloud_to_idc)
        check("kernel_pings_vtep", kernel_pings_vtep)
        check("pmtu_icmp_reaches_sender", pmtu)
        check("geneve_on_the_wire_per_tshark", geneve_tshark)

        def underlay_arp():
            # The underlay is a network we do not control: whoever is on it claims the next hop's
            # address with every kind of ARP (gratuitous request and reply, an unsolicited reply to
            # the VTEP, a request aimed at another host, broadcast/multicast/zero MACs). None of it
            # may move the resolved next hop: tunnel traffic still reaches the kernel's vc0.
            from scapy.all import ARP
            evil = "02:66:66:66:66:66"
            bcast = "ff:ff:ff:ff:ff:ff"
            claims = [
                Ether(src=evil, dst=bcast) / ARP(op=1, hwsrc=evil, psrc="198.18.0.2", pdst="198.18.0.2"),
                Ether(src=evil, dst=bcast) / ARP(op=2, hwsrc=evil, psrc="198.18.0.2", hwdst=bcast, pdst="198.18.0.2"),
                Ether(src=evil, dst="02:00:00:00:00:01") / ARP(op=2, hwsrc=evil, psrc="198.18.0.2",
                                                                hwdst="02:00:00:00:00:01", pdst="198.18.0.1"),
                Ether(src=evil, dst=bcast) / ARP(op=1, hwsrc=evil, psrc="198.18.0.2", pdst="198.18.0.77"),
                Ether(src=evil, dst="02:00:00:00:00:01") / ARP(op=2, hwsrc=bcast, psrc="198.18.0.2",
                                                                hwdst="02:00:00:00:00:01", pdst="198.18.0.1"),
                Ether(src=evil, dst="02:00:00:00:00:01") / ARP(op=2, hwsrc="01:00:5e:00:00:01", psrc="198.18.0.2",
                                                                hwdst="02:00:00:00:00:01", pdst="198.18.0.1"),
                Ether(src=evil, dst="02:00:00:00:00:01") / ARP(op=2, hwsrc="00:00:00:00:00:00", psrc="198.18.0.2",
                                                                hwdst="02:00:00:00:00:01", pdst="198.18.0.1"),
            ]
            # Twice, 1.2 s apart: the second round comes after the lock time (1 s), when only an
            # answer to the gateway's own probe may change a resolved entry.
            for _ in range(2):
                send_from(TMP, NS_CLOUD, VC, [Ether(raw(c)) for c in claims])
                time.sleep(1.2)
            ctl = subprocess.run([DSCPGW, "ctl", "--socket", f"{TMP}/gw.sock", "neighbors", "--json"],
                                 capture_output=True, text=True, timeout=10)
            eq(ctl.returncode, 0, f"ctl neighbors: {ctl.stderr}")
            import json
            rows = [n for n in json.loads(ctl.stdout)["neighbors"] if n["address"] == "198.18.0.2"]
            eq(len(rows), 1, f"one entry for the next hop: {ctl.stdout}")
            eq(rows[0]["mac"], vc_mac, "the next hop keeps the MAC it resolved")
            wire = Capture(TMP, "wire-after-arp", VC, NS_CLOUD, "udp port 4789 and src host 198.18.0.1")
            inner = Capture(TMP, "inner-after-arp", "vx0", NS_CLOUD, "udp port 4791")
            send_from(TMP, NS_IDC, VI, [roce_from_idc("10.20.0.9", tos=2, psn=i, vx_mac=vx_mac, vi_mac=vi_mac)
                                        for i in range(3)])
            w, i = wire.stop(), inner.stop()
            eq([o[Ether].dst for o in w], [vc_mac] * 3, "tunnel frames still to the real next hop")
            eq(len(i), 3, "and the kernel decapsulated them")

        check("underlay_arp_cannot_redirect_tunnel", underlay_arp)

        def stops():
            gw.send_signal(signal.SIGTERM)
            gw.wait(timeout=20)
            gw_log.seek(0)
            log = gw_log.read()
            eq(gw.returncode, 0, "exit code")
            assert "mbufs in use after shutdown: 0" in log, log[-2000:]
            m = re.search(r"cloud\s+encap (\d+) pkts .* decap (\d+) pkts", log)
            assert m and int(m.group(1)) >= 6 and int(m.group(2)) >= 3, log[-2000:]
            assert re.search(rf"198\.18\.0\.2\s+port wan\s+{vc_mac}", log), "next hop resolved by ARP: " + log[-1500:]
            assert re.search(r"neighbor probes: sent [1-9]", log), log[-1500:]
            print(log[log.find("ports:"):].rstrip())

        check("gateway_stops_cleanly", stops)

        def policer_live():
            # A 40 Mbit/s UDP/4791 stream from the idc host's own stack through a policer of cir 10
            # and pir 20 Mbit/s: the cloud host receives the peak rate, green as AF31 (26) and
            # yellow as configured (28); the rest is red and dropped. Buckets of 25/50 kB absorb
            # the sender's scheduling pauses on a shared machine (0.7 % of the rate over 4 s).
            text = CONFIG.format(lcores="0,1" if (os.cpu_count() or 1) >= 2 else "0", gi=GI, gc=GC, vc_mac=vc_mac)
            text = text.replace('match = {{ udp_dst_port = 4791 }}\ndscp = 26'.format(),
                                'match = { udp_dst_port = 4791 }\ndscp = 26\npolicer = "cap"')
            assert 'policer = "cap"' in text, text
            text += ('\n[[policers]]\nname = "cap"\ncir = "10Mbps"\npir = "20Mbps"\ncbs = "25kB"\n'
                     'pbs = "50kB"\nyellow = 28\n' + f'\n[control]\nsocket = "{TMP}/pol.sock"\n')
            pcfg = os.path.join(TMP, "policer.toml")
            with open(pcfg, "w") as f:
                f.write(text)
            recv = ("import socket, time, json\n"
                    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                    "s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)\n"
                    "s.bind(('0.0.0.0', 4791))\n"
                    "s.settimeout(8)\n"
                    "got = []\n"
                    "while True:\n"
                    "    try:\n"
                    "        d, anc, _, _ = s.recvmsg(2048, 64)\n"
                    "    except socket.timeout:\n"
                    "        break\n"
                    "    tos = [c[2][0] for c in anc if c[1] == socket.IP_TOS]\n"
                    "    got.append((time.monotonic(), len(d) + 28, tos[0] if tos else -1))\n"
                    "    s.settimeout(1.5)\n"
                    "print(json.dumps(got))\n")
            send = ("import socket, time\n"
                    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                    "bth = bytes([4, 0, 255, 255, 0, 0, 0, 0x12, 0, 0, 0, 1])\n"
                    "payload = bth + bytes(1000 - len(bth))\n"
                    "gap = 1028 * 8 / 40e6\n"
                    "t0 = time.perf_counter()\n"
                    "n = int(4.0 / gap)\n"
                    "for i in range(n):\n"
                    "    while time.perf_counter() < t0 + i * gap:\n"
                    "        pass\n"
                    "    s.sendto(payload, ('10.20.0.9', 4791))\n"
                    "print(n, time.perf_counter() - t0)\n")
            for name, code in (("recv.py", recv), ("send.py", send)):
                with open(os.path.join(TMP, name), "w") as f:
                    f.write(code)
            plog = open(os.path.join(TMP, "dscpgw-policer.log"), "w+")
            g3 = subprocess.Popen([DSCPGW, "run", "--config", pcfg], stdout=plog, stderr=subprocess.STDOUT)
            try:
                time.sleep(3)
                ns(NS_CLOUD, "ping -c 1 -W 2 198.18.0.1", check=False)
                rx = subprocess.Popen(["ip", "netns", "exec", NS_CLOUD, PY, os.path.join(TMP, "recv.py")],
                                      stdout=subprocess.PIPE, text=True)
                time.sleep(0.5)
                sent, took = ns(NS_IDC, f"{PY} {os.path.join(TMP, 'send.py')}").split()
                import json
                got = json.loads(rx.communicate(timeout=30)[0])
                pj = json.loads(subprocess.run([DSCPGW, "ctl", "--socket", f"{TMP}/pol.sock", "policers", "--json"],
                                               capture_output=True, text=True, check=True).stdout)["policers"][0]
            except Exception as e:
                g3.send_signal(signal.SIGTERM)
                g3.wait(timeout=20)
                plog.seek(0)
                raise AssertionError(f"{e}\n--- dscpgw:\n{plog.read()[-2500:]}") from None
            g3.send_signal(signal.SIGTERM)
            g3.wait(timeout=20)
            eq(g3.returncode, 0, "exit code")
            offered = int(sent) * 1028 * 8 / float(took)
            assert len(got) > 100, f"only {len(got)} packets reached the cloud host"
            span = got[-1][0] - got[0][0]
            rate = sum(b for _, b, _ in got) * 8 / span
            dscps = {}
            for _, _, tos in got:
                dscps[tos >> 2] = dscps.get(tos >> 2, 0) + 1
            print(f"   offered {offered / 1e6:.1f} Mbit/s ({sent} packets in {float(took):.2f} s); "
                  f"the cloud host received {len(got)} packets, {rate / 1e6:.2f} Mbit/s over {span:.2f} s; "
                  f"DSCPs {dscps}; gateway: green {pj['green_packets']} yellow {pj['yellow_packets']} "
                  f"red {pj['red_packets']}")
            assert offered > 36e6, f"the sender managed only {offered / 1e6:.1f} Mbit/s"
            assert abs(rate - 20e6) <= 0.05 * 20e6, f"green + yellow at {rate / 1e6:.2f} Mbit/s, pir 20"
            eq(set(dscps), {26, 28}, "green AF31, yellow 28")
            assert 0.35 <= dscps[28] / len(got) <= 0.65, f"about half the carried packets yellow: {dscps}"
            eq(pj["green_packets"] + pj["yellow_packets"], len(got), "what the gateway passed arrived")
            assert pj["red_packets"] > 0.35 * int(sent), f"about half the stream red: {pj}"

        check("policer_cuts_a_live_stream_to_pir", policer_live)

        def routed():
            # Routed LAN mode: the idc host routes the cloud prefix via the gateway's LAN address;
            # the gateway answers its ARP, readdresses inner frames to vx0 on encap, and delivers
            # decapsulated ones to the host's MAC it learned, from its own.
            lan_mac = "02:00:00:00:10:01"
            text = CONFIG.format(lcores="0,1" if (os.cpu_count() or 1) >= 2 else "0", gi=GI, gc=GC, vc_mac=vc_mac)
            text = text.replace('iface={gi}"\nmtu = 1500'.format(gi=GI),
                                'iface={gi}"\nmtu = 1500\nipv4 = "10.10.0.1/24"\nmac = "{m}"'.format(gi=GI, m=lan_mac))
            assert "10.10.0.1/24" in text, text
            text = text.replace('next_hop = "198.18.0.2"', f'next_hop = "198.18.0.2"\ninner_mac = "{vx_mac}"')
            rcfg = os.path.join(TMP, "routed.toml")
            with open(rcfg, "w") as f:
                f.write(text + f'\n[control]\nsocket = "{TMP}/routed.sock"\n')
            ns(NS_IDC, f"ip neigh del 10.20.0.9 dev {VI}")
            ns(NS_IDC, f"ip route replace 10.20.0.0/24 via 10.10.0.1 dev {VI}")
            log2 = open(os.path.join(TMP, "dscpgw-routed.log"), "w+")
            g2 = subprocess.Popen([DSCPGW, "run", "--config", rcfg], stdout=log2, stderr=subprocess.STDOUT)
            try:
                time.sleep(3)
                inner = Capture(TMP, "routed-cloud", "vx0", NS_CLOUD, "udp port 4791")
                # The first exchange teaches the gateway the host (from its ARP); a reply that comes
                # back before the control thread has created the entry is dropped as no_neighbor,
                # as the gateway queues nothing.
                ns(NS_IDC, "ping -c 1 -W 1 10.20.0.9", check=False)
                time.sleep(0.3)
                out = ns(NS_IDC, "ping -c 3 -i 0.3 -W 2 10.20.0.9", check=False)
                assert re.search(r"3 packets transmitted, 3 received", out), f"ping through the routed gateway: {out}"
                neigh = ns(NS_IDC, "ip neigh show 10.10.0.1")
                assert lan_mac in neigh, f"the host resolved the gateway by ARP: {neigh}"
                code = ("import socket\n"
                        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                        "s.sendto(bytes(64), ('10.20.0.9', 4791))\n")
                ns(NS_IDC, f"{PY} -c \"{code}\"")
                got = inner.stop()
                eq(len(got), 1, "RoCE-port datagram from the host's own stack")
                eq(got[0][IP].tos >> 2, 26, "marked by class on its way through the routed gateway")
                eq(got[0].src, lan_mac, "inner source MAC: the gateway's LAN port")
            except AssertionError as e:
                g2.send_signal(signal.SIGTERM)
                g2.wait(timeout=20)
                log2.seek(0)
                raise AssertionError(f"{e}\n--- dscpgw:\n{log2.read()[-2500:]}") from None
            g2.send_signal(signal.SIGTERM)
            g2.wait(timeout=20)
            log2.seek(0)
            text = log2.read()
            eq(g2.returncode, 0, "exit code")
            assert re.search(r"10\.10\.0\.5\s+port lan\s+" + vi_mac, text), "LAN host adopted: " + text[-1500:]

        check("routed_lan_gateway_as_next_hop", routed)

        def tap_offload():
            # net_tap offers UDP checksum offload: the worker leaves the outer IPv6 UDP checksum to
            # the device (pseudo-header in place) and the kernel sees a valid one.
            lan_tap, wan_tap = f"{N.tag}tl", f"{N.tag}tw"
            tcfg = os.path.join(TMP, "tap.toml")
            with open(tcfg, "w") as f:
                f.write(f"""
[eal]
args = ["--no-huge", "-m", "512", "--no-shconf", "-l", "{'0,1' if (os.cpu_count() or 1) >= 2 else '0'}"]
[[ports]]
name = "lan"
role = "inner"
device = "net_tap1,iface={lan_tap}"
mtu = 1400
[[ports]]
name = "wan"
role = "outer"
device = "net_tap0,iface={wan_tap}"
ipv6 = "2001:db8:18::1"
mac = "02:00:00:00:00:01"
mtu = 1500
[[tunnels]]
name = "v6"
type = "vxlan"
vni = 200
remote = "2001:db8:18::99"
next_hop_mac = "02:00:00:00:00:fd"
routes = ["10.30.0.0/16"]
[[classes]]
name = "roce-data"
match = {{ udp_dst_port = 4791 }}
dscp = 26
[control]
socket = "{TMP}/tap.sock"
""")
            log3 = open(os.path.join(TMP, "dscpgw-tap.log"), "w+")
            g3 = subprocess.Popen([DSCPGW, "run", "--config", tcfg], stdout=log3, stderr=subprocess.STDOUT)
            try:
                deadline = time.time() + 10
                while time.time() < deadline and not (os.path.exists(f"/sys/class/net/{lan_tap}") and
                                                      os.path.exists(f"/sys/class/net/{wan_tap}")):
                    time.sleep(0.1)
                time.sleep(1)
                sh(f"ip link set {lan_tap} up")
                sh(f"ip link set {wan_tap} up")
                cap = Capture(TMP, "tap-wan", wan_tap, None, "udp port 4789")
                pkts = [pktlib.roce("10.10.0.5", "10.30.0.9", tos=2, payload=n, psn=i) for i, n in enumerate([16, 700, 1300])]
                from scapy.all import sendp
                sendp(pkts, iface=lan_tap, verbose=False)
                got = cap.stop()
                eq(len(got), 3, "encapsulated frames seen by the kernel")
                out = sh(f"tshark -r {cap.path} -o udp.check_checksum:TRUE -T fields -e udp.checksum.status")
                eq(out.split(), ["1,1"] * 3, "outer (offloaded) and inner UDP checksums good per tshark")
            finally:
                g3.send_signal(signal.SIGTERM)
                g3.wait(timeout=20)
                log3.seek(0)
                text = log3.read()
            eq(g3.returncode, 0, "exit code")
            assert "UDP checksum offload" in text, text[-1500:]

        check("tap_offloads_outer_ipv6_udp_checksum", tap_offload)
    except Exception as e:  # noqa: BLE001
        results.fail("interop setup", e)
    finally:
        if gw is not None and gw.poll() is None:
            gw.kill()
        teardown(N)
        shutil.rmtree(TMP, ignore_errors=True)
    return results.finish()


if __name__ == "__main__":
    sys.exit(main())
