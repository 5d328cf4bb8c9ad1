#!/usr/bin/python3
"""The captures the Pktgen profiles send (`pktgen ... -s P:FILE.pcap`), written by scapy.

Usage: make-pcaps.py DIR [--lan-mac MAC] [--wan-mac MAC] [--wan-ip ADDR] [--remote ADDR]

One capture per profile of scripts/pktgen/ (the profile's header names it):
  roce-74, roce-1082, roce-4154  RoCEv2 RC SEND frames of that Ethernet size (14 + IPv4 20 + UDP 8
                                 + BTH 12 + payload + ICRC 4), 16 queue pairs x 8 PSNs = 128
                                 frames: 16 host pairs, UDP entropy ports and destination QPs, as a
                                 RoCE job spreads them over RSS. IPv4, ECT(0), DSCP 0 (the gateway
                                 marks them); for the gateway's inner (LAN) port.
  roce-mix                       roce-1082's 128 data frames, then one CNP (BTH opcode 0x81, 74
                                 bytes) per QP: 144 frames, one CNP per 8 data frames as looped.
  roce6-1082                     roce-1082 over IPv6 (fd00:10::/48 -> fd00:20::/48), ICRC valid.
  decap-vxlan-74, decap-vxlan-1082, decap-vxlan-4154, decap-geneve-74, decap-geneve-1082,
  decap-geneve-4154              the roce-74/1082/4154 frames, marked DSCP 26, as the far tunnel end
                                 sends them to the gateway's outer port (VNI 100, outer DSCP 26
                                 inherited, ECT(0), from REMOTE to WAN_IP); every 16th outer header
                                 CE, so RFC 6040 decapsulation shows in the inner header.
All frames are addressed to the gateway's port MACs, so no ARP is needed. Every ICRC is valid.
"""
import argparse
import logging
import os
import sys

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))
from scapy.all import Ether, wrpcap  # noqa: E402
from scapy.contrib.roce import CNP_OPCODE  # noqa: E402
import pktlib  # noqa: E402

QPS = 16


def data(size, q, psn, v6=False, dscp=0):
    """Data frame `psn` of queue pair q (of 16): RC SEND only, ECT(0)."""
    src, dst = (f"fd00:10::{5 + q // 4}", f"fd00:20::{9 + q % 4}") if v6 else \
        (f"10.10.0.{5 + q // 4}", f"10.20.0.{9 + q % 4}")
    l3 = 40 if v6 else 20
    return pktlib.roce(src, dst, opcode=0x04, tos=dscp << 2 | 0x02, sport=49152 + 97 * q, dqpn=0x100 + q, psn=psn,
                       payload=size - 14 - l3 - 8 - 12 - 4)


def cnp(q):
    """A CNP of queue pair q's receiver back to its sender's QP (74 bytes, ECT(0) as NICs send it)."""
    return pktlib.roce(f"10.10.0.{5 + q // 4}", f"10.20.0.{9 + q % 4}", opcode=CNP_OPCODE, tos=0x02,
                       sport=49152 + 97 * q, dqpn=0x200 + q)


def workload(size, v6=False, dscp=0):
    return [data(size, i % QPS, i // QPS, v6, dscp) for i in range(8 * QPS)]


def mix():
    out = []
    for psn in range(8):
        out += [data(1082, q, psn) for q in range(QPS)]
    return out + [cnp(q) for q in range(QPS)]


def outer(frames, kind, a):
    res = []
    for i, f in enumerate(frames):
        tos = 26 << 2 | (0x03 if i % 16 == 15 else 0x02)
        res.append(pktlib.encap(f, kind, a.remote, a.wan_ip, 100, tos=tos, sport=49152 + (i % QPS) * 131,
                                dst_mac=a.wan_mac))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--lan-mac", default=pktlib.LAN_MAC, help="the gateway's inner port MAC")
    ap.add_argument("--wan-mac", default="02:00:00:00:00:01", help="the gateway's outer port MAC")
    ap.add_argument("--wan-ip", default="198.18.0.1", help="the gateway's outer address")
    ap.add_argument("--remote", default="198.18.7.7", help="the far tunnel end")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)

    def lan(frames):
        for f in frames:
            f[Ether].dst = a.lan_mac
        return frames

    sets = {f"roce-{n}": lan(workload(n)) for n in (74, 1082, 4154)}
    sets["roce-mix"] = lan(mix())
    sets["roce6-1082"] = lan(workload(1082, v6=True))
    for kind in ("vxlan", "geneve"):
        for n in (74, 1082, 4154):
            sets[f"decap-{kind}-{n}"] = outer(workload(n, dscp=26), kind, a)
    for name, frames in sets.items():
        wrpcap(os.path.join(a.dir, f"{name}.pcap"), frames)
        print(f"{name}.pcap: {len(frames)} frames, {min(len(f) for f in frames)}..{max(len(f) for f in frames)} bytes")


if __name__ == "__main__":
    main()
