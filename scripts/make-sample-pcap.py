#!/usr/bin/python3
"""Writes config/samples/roce-mix.pcap: the shipped sample workload for `dscpgw replay`.

Mixed inner traffic as a GPU host sends it towards the cloud: RoCEv2 data (IPv4 and IPv6, with ECT(0)
as DCQCN sets it), a CNP, a VLAN-tagged RoCE frame, ordinary TCP, and one packet with no route.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "golden"))
from scapy.all import wrpcap  # noqa: E402
import pktlib  # noqa: E402

pkts = [
    pktlib.roce("10.10.0.5", "10.20.0.9", opcode=0x0A, tos=0x02, payload=1024),  # RDMA WRITE ONLY
    pktlib.roce("10.10.0.5", "10.20.0.9", opcode=0x04, tos=0x02, payload=256, sport=49200),  # SEND ONLY
    pktlib.roce("10.10.0.5", "10.20.0.9", opcode=0x81, tos=0x00, dqpn=0x34),  # CNP back to a cloud sender
    pktlib.roce("10.10.0.6", "10.20.1.1", opcode=0x0A, tos=0x03 << 0, payload=512, vlan=10),  # CE, VLAN
    pktlib.roce("fd00:10::5", "fd00:20::9", opcode=0x0A, tos=0x02, payload=1024),
    pktlib.roce("10.10.0.7", "10.30.0.1", opcode=0x11, tos=0x00, payload=4),  # over the VXLAN/IPv6 tunnel
    pktlib.other("10.10.0.5", "10.20.0.9", tos=0x00),
    pktlib.other("10.10.0.5", "192.0.2.200", tos=0x00),  # no route
]
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "config",
                                                          "samples", "roce-mix.pcap")
wrpcap(out, pkts)
print(f"wrote {len(pkts)} frames to {out}")
