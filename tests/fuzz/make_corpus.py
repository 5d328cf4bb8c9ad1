#!/usr/bin/python3
"""Seeds for the packet fuzzer: frames from the golden builders and the shared captures, each
prefixed with the two selector bytes the target reads (first: bit 0: 0 = inner port, 1 = outer port;
bits 1-6: headroom / 2; bit 7: routed LAN; second: bits 0-3 the device's checksum verdict, RxCksum
bits, 0 here: checked in software; bit 4: the tagged LAN with Border QoS classes instead)."""
import glob
import logging
import os
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
from scapy.all import raw, rdpcap  # noqa: E402
import pktlib  # noqa: E402

out = sys.argv[1]
captures = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "..", "..", "shared", "captures")
os.makedirs(out, exist_ok=True)
seeds = []
inner = [pktlib.roce("10.1.0.5", "10.2.0.9", tos=2), pktlib.roce("10.1.0.5", "10.2.0.9", opcode=0x81),
         pktlib.roce("fd00::5", "fd00::9", tos=1), pktlib.roce("10.1.0.6", "192.168.1.1", vlan=10),
         pktlib.other("10.1.0.5", "172.16.0.1", proto="tcp")]
for p in inner:
    seeds.append(bytes([0xFE]) + raw(p))
for p in inner[:3]:
    seeds.append(bytes([0xFF]) + raw(pktlib.encap(p, "geneve", "198.18.7.7", "198.18.0.1", 100, tos=3)))
    seeds.append(bytes([0xFF]) + raw(pktlib.encap(p, "vxlan", "2001:db8:18::99", "2001:db8:18::1", 200)))
    seeds.append(bytes([0xFF]) + raw(pktlib.encap(p, "vxlan", "198.18.7.8", "198.18.0.1", 300)))
    seeds.append(bytes([0xFF]) + raw(pktlib.encap(p, "geneve", "198.18.7.7", "198.18.0.1", 100,
                                                    options=bytes([0, 1, 2, 1, 0, 0, 0, 0]))))
# The gateway's own addresses: ARP, ND, echo; and a DF packet too big for its tunnel.
from scapy.all import ARP, ICMP, IP, IPv6, Ether  # noqa: E402
from scapy.layers.inet6 import ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, ICMPv6EchoRequest  # noqa: E402
local = [Ether() / ARP(psrc="198.18.7.7", pdst="198.18.0.1"),
         Ether() / IP(src="198.18.7.7", dst="198.18.0.1") / ICMP(),
         Ether() / IPv6(src="2001:db8:18::99", dst="ff02::1:ff00:1", hlim=255) / ICMPv6ND_NS(tgt="2001:db8:18::1") /
         ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:fe"),
         Ether() / IPv6(src="2001:db8:18::99", dst="2001:db8:18::1") / ICMPv6EchoRequest()]
for p in local:
    seeds.append(bytes([0xFF]) + raw(p))
seeds.append(bytes([0xFE]) + raw(Ether() / ARP(psrc="10.0.0.5", pdst="10.0.0.1")))
seeds.append(bytes([0xFE]) + raw(pktlib.roce("10.1.0.5", "172.16.0.1", payload=9000)))
seeds.append(bytes([0xFE]) + raw(pktlib.roce("fd00::5", "fc00::9", payload=9100)))
for f in sorted(glob.glob(os.path.join(captures, "*", "*.pcap"))):
    for i, p in enumerate(rdpcap(f)[:20]):
        seeds.append(bytes([0xFE | (i & 1)]) + raw(p))
# Every seed also against the routed-LAN snapshot (bit 7 set; 0x7E/0x7F: transparent, headroom 126).
seeds = [bytes([s[0] & 0x7F]) + s[1:] for s in seeds] + [bytes([s[0] | 0x80]) + s[1:] for s in seeds]
# Tagged frames for the Border QoS snapshot (VLAN 100, PCPs 3 and 5, DSCP 10), both directions.
from scapy.all import Dot1Q  # noqa: E402
qos = []
for prio, tos in ((3, 0), (5, 0), (0, 10 << 2), (1, 0)):
    for p in (pktlib.roce("10.1.0.5", "10.2.0.9", tos=tos, payload=600), pktlib.other("10.1.0.5", "10.2.0.9", tos=tos)):
        qos.append(bytes([0x7E]) + raw(Ether(src=p.src, dst=p.dst) / Dot1Q(vlan=100, prio=prio) / p[1]))
qos.append(bytes([0x7F]) + raw(pktlib.encap(inner[0], "geneve", "198.18.7.7", "198.18.0.1", 100, tos=26 << 2)))
for i, s in enumerate(seeds):
    with open(os.path.join(out, f"seed{i:04d}"), "wb") as fh:
        fh.write(s[:1] + bytes([0]) + s[1:])
for i, s in enumerate(qos):
    with open(os.path.join(out, f"qos{i:02d}"), "wb") as fh:
        fh.write(s[:1] + bytes([0x10]) + s[1:])
# The first 40 seeds (the packet path's usual frames, both directions, ECT and Not-ECT) again with
# the shaped-ports snapshot (bit 5): through the egress queues and their CE marking.
egress = [s for s in seeds if not s[0] & 0x80][:40]
for i, s in enumerate(egress):
    with open(os.path.join(out, f"egress{i:02d}"), "wb") as fh:
        fh.write(s[:1] + bytes([0x20]) + s[1:])
print(f"{len(seeds) + len(qos) + len(egress)} seeds in {out}")
