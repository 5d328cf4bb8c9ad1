#!/usr/bin/python3
"""Seeds for fuzz_local: the gateway's own traffic, each prefixed with the selector byte the target
reads (bit 0: 0 = routed LAN port, 1 = underlay port; bit 1: a probe is outstanding; bit 2: entries
past their lock time; bits 3-7: the MTU of a too-big error)."""
import logging
import os
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
from scapy.all import ARP, ICMP, IP, UDP, Ether, IPv6, Raw, raw  # noqa: E402
from scapy.layers.inet6 import (ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr,  # noqa: E402
                                ICMPv6NDOptSrcLLAddr, ICMPv6PacketTooBig)

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
quoted4 = raw(IP(src="198.18.0.1", dst="198.18.7.7") / UDP(sport=50000, dport=6081) /
              Raw(bytes([0, 0, 0x65, 0x58, 0, 0, 100, 0]) + b"x" * 40))
quoted6 = raw(IPv6(src="2001:db8:18::1", dst="2001:db8:18::99") / UDP(sport=50000, dport=4789) /
              Raw(bytes([8, 0, 0, 0, 0, 0, 200, 0]) + b"x" * 40))
seeds = [
    (0, Ether(src="02:00:00:00:10:05") / ARP(hwsrc="02:00:00:00:10:05", psrc="10.0.0.5", pdst="10.0.0.1")),
    (3, Ether(src="02:aa:00:00:00:01") / ARP(op=2, hwsrc="02:aa:00:00:00:01", psrc="198.18.0.254",
                                             pdst="198.18.0.1")),
    (0, Ether(src="02:00:00:00:10:05") / IP(src="10.0.0.5", dst="10.0.0.1") / ICMP()),
    (1, Ether() / IPv6(src="2001:db8:18::99", dst="ff02::1:ff00:1", hlim=255) / ICMPv6ND_NS(tgt="2001:db8:18::1") /
     ICMPv6NDOptSrcLLAddr(lladdr="02:00:00:00:00:fe")),
    (7, Ether() / IPv6(src="fe80::1", dst="2001:db8:18::1", hlim=255) / ICMPv6ND_NA(tgt="fe80::1", S=1) /
     ICMPv6NDOptDstLLAddr(lladdr="02:bb:00:00:00:02")),
    (1, Ether() / IPv6(src="2001:db8:18::5", dst="2001:db8:18::1") / ICMPv6EchoRequest()),
    (1, Ether() / IP(src="198.18.9.1", dst="198.18.0.1") / ICMP(type=3, code=4, nexthopmtu=1400) / Raw(quoted4)),
    (1, Ether() / IPv6(src="2001:db8:9::1", dst="2001:db8:18::1") / ICMPv6PacketTooBig(mtu=1300) / Raw(quoted6)),
    (0, Ether() / IP(src="10.0.0.5", dst="172.16.0.1", flags="DF") / UDP(dport=4791) / Raw(b"x" * 2000)),
    (0, Ether() / IPv6(src="fd00::5", dst="fc00::1") / UDP(dport=4791) / Raw(b"x" * 2000)),
]
for i, (sel, p) in enumerate(seeds):
    with open(os.path.join(out, f"seed{i:02d}"), "wb") as f:
        f.write(bytes([sel]) + raw(p))
print(f"{len(seeds)} seeds in {out}")
