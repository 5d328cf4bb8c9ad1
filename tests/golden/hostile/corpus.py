#!/usr/bin/python3
"""A corpus of hostile frames, each with the verdict dscpgw must reach for it (as `dscpgw replay
--trace` prints it: drop=<reason>, reply=<kind>, encap, decap), against hostile.toml. The golden
suite replays it (test hostile_corpus_verdicts); run alone it writes lan.pcap, wan.pcap and
expected.txt into a directory, for replaying elsewhere:
    tests/golden/hostile/corpus.py OUTDIR"""
import logging
import os
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from scapy.all import ARP, ICMP, IP, TCP, UDP, Dot1Q, Ether, IPv6, Raw, raw, wrpcap  # noqa: E402
from scapy.layers.inet6 import (ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS, ICMPv6NDOptDstLLAddr,  # noqa: E402
                                ICMPv6NDOptSrcLLAddr, IPv6ExtHdrDestOpt)
from scapy.contrib.roce import BTH  # noqa: E402
import pktlib  # noqa: E402

GW_LAN, HOST = "02:00:00:00:10:01", "02:00:00:00:10:05"
VTEP, PEER = "02:00:00:00:00:01", "02:00:00:00:00:fe"
BCAST = "ff:ff:ff:ff:ff:ff"


def lan(pkt):
    return Ether(raw(pkt))


def gen(inner, tos=0, src="198.18.7.7", **kw):
    return pktlib.encap(inner, "geneve", src, "198.18.0.1", 100, tos=tos, **kw)


def inner_to_host(payload=64, tos=26 << 2, **kw):
    return pktlib.roce("10.20.0.9", "10.10.0.5", tos=tos, payload=payload, **kw)


def with_bytes(pkt, edits):
    b = bytearray(raw(pkt))
    for off, val in edits:
        b[off:off + len(val)] = val
    return Ether(bytes(b))


def corpus():
    """(name, port, frame, expected verdict)."""
    c = []
    L = lambda name, pkt, want: c.append((name, "lan", lan(pkt), want))  # noqa: E731
    W = lambda name, pkt, want: c.append((name, "wan", Ether(raw(pkt)), want))  # noqa: E731

    # --- From the LAN ---
    L("jumbo frame on a 1500-byte port", pktlib.roce("10.10.0.5", "10.20.0.9", payload=4000), "drop=too_big")
    L("unclassified TCP marked 48: encapsulated, outer DSCP default 0",
      Ether(src=HOST, dst=GW_LAN) / IP(src="10.10.0.5", dst="10.30.0.9", tos=48 << 2) / TCP(), "encap")
    hidden = Ether(src=HOST, dst=GW_LAN) / IPv6(src="fd00:10::5", dst="fd00:20::9", tc=48 << 2)
    for _ in range(9):
        hidden = hidden / IPv6ExtHdrDestOpt()
    L("RoCE behind 9 IPv6 extension headers: unclassified, no route",
      hidden / UDP(dport=4791) / BTH(opcode=0x81) / Raw(b"\0" * 16), "drop=no_route")
    L("ARP for an address that is not the gateway's",
      Ether(src=HOST, dst=BCAST) / ARP(hwsrc=HOST, psrc="10.10.0.5", pdst="10.10.0.99"), "drop=not_ip")
    L("ARP claiming a broadcast sender MAC",
      Ether(src=HOST, dst=BCAST) / ARP(hwsrc=BCAST, psrc="10.10.0.6", pdst="10.10.0.1"), "drop=not_ip")
    L("ARP for the gateway from a broadcast Ethernet source",
      Ether(src=BCAST, dst=BCAST) / ARP(hwsrc=HOST, psrc="10.10.0.5", pdst="10.10.0.1"), "drop=not_ip")
    L("ARP for the gateway: answered", Ether(src=HOST, dst=BCAST) / ARP(hwsrc=HOST, psrc="10.10.0.5",
                                                                          pdst="10.10.0.1"), "reply=arp_reply")
    L("echo to the gateway from a multicast source",
      Ether(src=HOST, dst=GW_LAN) / IP(src="224.0.0.5", dst="10.10.0.1") / ICMP(), "drop=local_unhandled")
    L("echo to the gateway from the limited broadcast address",
      Ether(src=HOST, dst=GW_LAN) / IP(src="255.255.255.255", dst="10.10.0.1") / ICMP(), "drop=local_unhandled")
    L("echo to the gateway from its own address",
      Ether(src=HOST, dst=GW_LAN) / IP(src="10.10.0.1", dst="10.10.0.1") / ICMP(), "drop=local_unhandled")
    L("echo to the gateway from the LAN's directed broadcast",
      Ether(src=HOST, dst=GW_LAN) / IP(src="10.10.0.255", dst="10.10.0.1") / ICMP(), "drop=local_unhandled")
    L("echo to the gateway with a broadcast Ethernet source",
      Ether(src=BCAST, dst=GW_LAN) / IP(src="10.10.0.5", dst="10.10.0.1") / ICMP(), "drop=local_unhandled")
    L("echo with a wrong ICMP checksum",
      Ether(src=HOST, dst=GW_LAN) / IP(src="10.10.0.5", dst="10.10.0.1") / ICMP(chksum=0x1234), "drop=local_unhandled")
    L("echo of all zeros (its reply's checksum is 0xffff)",
      Ether(src=HOST, dst=GW_LAN) / IP(src="10.10.0.5", dst="10.10.0.1") / ICMP(id=0, seq=0), "reply=icmp_echo_reply")
    L("NS from a multicast source",
      Ether(src=HOST, dst="33:33:ff:00:00:01") / IPv6(src="ff02::1", dst="ff02::1:ff00:1", hlim=255) /
      ICMPv6ND_NS(tgt="fd00:10::1") / ICMPv6NDOptSrcLLAddr(lladdr=HOST), "drop=no_route")
    L("NS with hop limit 64", Ether(src=HOST, dst="33:33:ff:00:00:01") /
      IPv6(src="fd00:10::5", dst="ff02::1:ff00:1", hlim=64) / ICMPv6ND_NS(tgt="fd00:10::1") /
      ICMPv6NDOptSrcLLAddr(lladdr=HOST), "drop=no_route")
    L("DF packet too big for the 1500-byte tunnel path: ICMP back",
      pktlib.roce("10.10.0.5", "10.20.0.9", payload=1420), "drop=too_big pmtu")
    L("traffic to the gateway's address that is not ARP/ND/echo",
      Ether(src=HOST, dst=GW_LAN) / IP(src="10.10.0.5", dst="10.10.0.1") / UDP(dport=53), "drop=local_unhandled")

    # --- From the underlay ---
    W("gratuitous ARP from the next hop", Ether(src="02:66:00:00:00:01", dst=BCAST) /
      ARP(hwsrc="02:66:00:00:00:01", psrc="198.18.0.254", pdst="198.18.0.254"), "drop=not_tunnel")
    W("unsolicited ARP reply for the next hop", Ether(src="02:66:00:00:00:01", dst=VTEP) /
      ARP(op=2, hwsrc="02:66:00:00:00:01", psrc="198.18.0.254", pdst="198.18.0.1", hwdst=VTEP), "drop=not_tunnel")
    W("ARP reply claiming ff:ff:ff:ff:ff:ff", Ether(src=PEER, dst=VTEP) /
      ARP(op=2, hwsrc=BCAST, psrc="198.18.0.254", pdst="198.18.0.1", hwdst=VTEP), "drop=not_tunnel")
    W("ARP request aimed at another host", Ether(src=PEER, dst=BCAST) /
      ARP(hwsrc=PEER, psrc="198.18.0.254", pdst="198.18.0.77"), "drop=not_tunnel")
    W("ARP for the VTEP: answered", Ether(src=PEER, dst=BCAST) / ARP(hwsrc=PEER, psrc="198.18.0.254",
                                                                        pdst="198.18.0.1"), "reply=arp_reply")
    W("echo to the VTEP from 255.255.255.255",
      Ether(src=PEER, dst=VTEP) / IP(src="255.255.255.255", dst="198.18.0.1") / ICMP(), "drop=not_tunnel")
    W("echo to the VTEP from the VTEP", Ether(src=PEER, dst=VTEP) / IP(src="198.18.0.1", dst="198.18.0.1") / ICMP(),
      "drop=not_tunnel")
    W("echo to the VTEP from 127.0.0.1", Ether(src=PEER, dst=VTEP) / IP(src="127.0.0.1", dst="198.18.0.1") / ICMP(),
      "drop=not_tunnel")
    W("echo to 224.0.0.5", Ether(src=PEER, dst="01:00:5e:00:00:05") / IP(src="198.18.0.254", dst="224.0.0.5") /
      ICMP(), "drop=not_local")
    W("ICMPv6 echo to ff02::1", Ether(src=PEER, dst="33:33:00:00:00:01") /
      IPv6(src="2001:db8:18::99", dst="ff02::1") / ICMPv6EchoRequest(), "drop=not_local")
    W("unsolicited NA for a next hop", Ether(src=PEER, dst=VTEP) /
      IPv6(src="2001:db8:18::99", dst="2001:db8:18::1", hlim=255) / ICMPv6ND_NA(tgt="2001:db8:18::99", S=0) /
      ICMPv6NDOptDstLLAddr(lladdr="02:66:00:00:00:02"), "drop=not_local")
    W("inner PFC PAUSE", gen(Ether(dst="01:80:c2:00:00:01", src=HOST, type=0x8808) / Raw(b"\x01\x01" + b"\0" * 44)),
      "drop=inner_link_local")
    W("inner STP BPDU", gen(Ether(dst="01:80:c2:00:00:00", src=HOST, type=0x0026) / Raw(b"\0" * 46)),
      "drop=inner_link_local")
    W("inner 802.1Q tag", gen(pktlib.roce("10.20.0.9", "10.10.0.5", vlan=7)), "drop=inner_vlan")
    W("inner QinQ tags", gen(Ether(src=HOST, dst=GW_LAN) / Dot1Q(type=0x8100, vlan=3) / Dot1Q(vlan=7) /
                             IP(src="10.20.0.9", dst="10.10.0.5") / UDP(dport=4791) / Raw(b"\0" * 20)),
      "drop=inner_vlan")
    W("inner ARP reply on a routed LAN", gen(Ether(src=PEER, dst=BCAST) /
                                             ARP(op=2, hwsrc=PEER, psrc="10.10.0.1", pdst="10.10.0.5")),
      "drop=inner_not_ip")
    W("inner NA on a routed LAN", gen(Ether(src=PEER, dst="33:33:00:00:00:01") /
                                      IPv6(src="fe80::9", dst="ff02::1", hlim=255) / ICMPv6ND_NA(tgt="fd00:10::1") /
                                      ICMPv6NDOptDstLLAddr(lladdr=PEER)), "drop=inner_not_ip")
    W("inner IPX", gen(Ether(src=PEER, dst=GW_LAN, type=0x8137) / Raw(b"\0" * 46)), "drop=inner_not_ip")
    W("inner 84-byte packet with 8,000 trailing bytes: decapsulated, trimmed",
      gen(Raw(raw(inner_to_host(payload=40)) + b"\xee" * 8000)), "decap")
    W("inner packet larger than the LAN port's MTU", gen(inner_to_host(payload=1500)), "drop=too_big")
    W("outer frame larger than the underlay port's MTU", gen(inner_to_host(payload=8960)), "drop=too_big")
    W("bad outer IPv4 header checksum", with_bytes(gen(inner_to_host()), [(24, b"\x12\x34")]), "drop=bad_checksum")
    W("zero outer IPv6 UDP checksum", with_bytes(
        pktlib.encap(pktlib.roce("10.30.0.9", "10.10.0.5"), "vxlan", "2001:db8:18::99", "2001:db8:18::1", 200),
        [(14 + 40 + 6, b"\0\0")]), "drop=bad_checksum")
    W("wrong outer IPv6 UDP checksum", with_bytes(
        pktlib.encap(pktlib.roce("10.30.0.9", "10.10.0.5"), "vxlan", "2001:db8:18::99", "2001:db8:18::1", 200),
        [(14 + 40 + 6, b"\x12\x34")]), "drop=bad_checksum")
    # Geneve options claiming one word past the UDP payload, the rest (and a whole valid inner
    # frame) hidden in the Ethernet trailer.
    g = bytearray(raw(gen(Raw(b""), options=bytes([0, 1, 0, 1]))))
    g[42] = 2
    W("Geneve options one word past the UDP payload, a frame in the trailer",
      Ether(bytes(g) + b"\0" * 4 + raw(inner_to_host())), "drop=bad_tunnel_header")
    W("CE over a Not-ECT inner packet", gen(inner_to_host(tos=0), tos=3), "drop=ecn_ce_on_not_ect")
    W("a tunnel packet from an unknown remote", gen(inner_to_host(), src="198.18.7.99"), "drop=unknown_remote")
    ours = raw(IP(src="198.18.0.1", dst="198.18.7.7", flags="DF") / UDP(sport=50000, dport=6081) /
               Raw(bytes([0, 0, 0x65, 0x58, 0, 0, 100, 0]) + b"x" * 32))
    theirs = raw(IP(src="198.18.0.9", dst="198.18.7.7", flags="DF") / UDP(sport=50000, dport=6081) /
                 Raw(bytes([0, 0, 0x65, 0x58, 0, 0, 100, 0]) + b"x" * 32))
    W("Fragmentation Needed quoting one of our tunnel packets", Ether(src=PEER, dst=VTEP) /
      IP(src="198.18.9.1", dst="198.18.0.1") / ICMP(type=3, code=4, nexthopmtu=1400) / Raw(ours),
      "reply=path_mtu_update")
    W("Fragmentation Needed quoting someone else's packet", Ether(src=PEER, dst=VTEP) /
      IP(src="198.18.9.1", dst="198.18.0.1") / ICMP(type=3, code=4, nexthopmtu=600) / Raw(theirs), "drop=not_tunnel")
    W("a well-formed tunnel packet for the static LAN host", gen(inner_to_host()), "decap")
    return c


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = corpus()
    with open(os.path.join(out, "expected.txt"), "w") as f:
        for port in ("lan", "wan"):
            mine = [x for x in cases if x[1] == port]
            wrpcap(os.path.join(out, f"{port}.pcap"), [x[2] for x in mine], linktype=1)
            for i, (name, _, _, want) in enumerate(mine):
                f.write(f"{port} {i + 1} {want} # {name}\n")
    print(f"{len(cases)} frames in {out}")


if __name__ == "__main__":
    main()
