"""Packet builders and independent checks for the golden tests (scapy, not the code under test)."""
import struct
import zlib

from scapy.all import IP, IPv6, UDP, TCP, Ether, Dot1Q, Raw, raw, VXLAN
from scapy.contrib.roce import BTH, CNPPadding, CNP_OPCODE

LAN_MAC = "02:00:00:00:10:01"
HOST_MAC = "02:00:00:00:10:02"


def roce(src, dst, opcode=0x04, tos=0, sport=49152, payload=64, vlan=None, dqpn=0x12, psn=1):
    """A RoCEv2 packet with a valid ICRC (scapy computes it for IPv4; icrc6() for IPv6)."""
    l3 = IPv6(src=src, dst=dst, tc=tos) if ":" in src else IP(src=src, dst=dst, tos=tos, flags="DF")
    if opcode == CNP_OPCODE:
        bth = BTH(opcode=opcode, becn=1, dqpn=dqpn, psn=psn) / CNPPadding()
    else:
        bth = BTH(opcode=opcode, dqpn=dqpn, psn=psn) / Raw(bytes(range(256)) * (payload // 256) +
                                                           bytes(payload % 256))
    eth = Ether(src=HOST_MAC, dst=LAN_MAC)
    if vlan is not None:
        eth = eth / Dot1Q(vlan=vlan, prio=3)
    pkt = eth / l3 / UDP(sport=sport, dport=4791) / bth
    pkt = Ether(raw(pkt))
    if ":" in src:
        # scapy computes the ICRC for IPv4 only: set ours, then let scapy redo the UDP checksum.
        pkt[BTH].icrc = int.from_bytes(icrc6(pkt), "big")
        pkt[UDP].chksum = None
        pkt = Ether(raw(pkt))
    return pkt


def icrc6(pkt):
    """ICRC of an IPv6 RoCEv2 packet (IBTA A17.8.1), computed here independently of the gateway."""
    ip = pkt[IPv6]
    b = bytearray(raw(ip))
    b[0] = (b[0] & 0xF0) | 0x0F  # traffic class and flow label masked to ones
    b[1] = 0xFF
    b[2] = 0xFF
    b[3] = 0xFF
    b[7] = 0xFF  # hop limit
    b[40 + 6:40 + 8] = b"\xff\xff"  # UDP checksum
    b[40 + 8 + 4] = 0xFF  # BTH FECN/BECN/resv6
    crc = zlib.crc32(b"\xff" * 8 + bytes(b[:-4])) & 0xFFFFFFFF
    return struct.pack("<I", crc)


def icrc_ok(inner):
    """True when the ICRC carried by a RoCEv2 packet matches one recomputed over it."""
    carried = raw(inner)[-4:]
    if IPv6 in inner:
        return icrc6(inner) == carried
    p = inner.copy()
    p[BTH].icrc = None
    p = Ether(raw(p))
    return raw(p)[-4:] == carried


def ipv4_csum_ok(ip):
    c = ip.copy()
    c.chksum = None
    return IP(raw(c)).chksum == ip.chksum


def udp6_csum_ok(ip6):
    c = ip6.copy()
    c[UDP].chksum = None
    return IPv6(raw(c))[UDP].chksum == ip6[UDP].chksum


def other(src, dst, tos=0, proto="tcp"):
    l3 = IPv6(src=src, dst=dst, tc=tos) if ":" in src else IP(src=src, dst=dst, tos=tos)
    l4 = TCP(sport=5000, dport=80) if proto == "tcp" else UDP(sport=5000, dport=53)
    return Ether(raw(Ether(src=HOST_MAC, dst=LAN_MAC) / l3 / l4 / Raw(b"x" * 40)))


def encap(inner, kind, outer_src, outer_dst, vni, tos=0, sport=50000, options=b"", gflags=0,
          gproto=0x6558, vxlan_flags=0x08, dst_mac="02:00:00:00:00:01"):
    """An outer frame as a peer VTEP would send it."""
    l3 = IPv6(src=outer_src, dst=outer_dst, tc=tos) if ":" in outer_src else \
        IP(src=outer_src, dst=outer_dst, tos=tos, flags="DF")
    if kind == "vxlan":
        t = UDP(sport=sport, dport=4789) / VXLAN(flags=vxlan_flags, vni=vni)
    else:
        hdr = struct.pack("!BBH", len(options) // 4, gflags, gproto) + struct.pack("!I", vni << 8)
        t = UDP(sport=sport, dport=6081) / Raw(hdr + options)
    return Ether(raw(Ether(src="02:00:00:00:00:fe", dst=dst_mac) / l3 / t / Raw(raw(inner))))
