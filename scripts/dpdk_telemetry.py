"""Port counters of a running DPDK process over its telemetry socket (the benchmarks' common
reader: bench-forward.py's measured span, bench-pktgen.py's rates)."""
import json
import os
import socket


def runtime_dir(prefix):
    """Where the DPDK process run with --file-prefix PREFIX keeps its runtime files, by DPDK's own
    rule: /var/run/dpdk/PREFIX for root, else under $XDG_RUNTIME_DIR or /tmp."""
    base = "/var/run" if os.getuid() == 0 else os.environ.get("XDG_RUNTIME_DIR", "/tmp")
    return os.path.join(base, "dpdk", prefix)


def socket_path(prefix):
    """That process's telemetry socket."""
    return os.path.join(runtime_dir(prefix), "dpdk_telemetry.v2")


def port_stats(path, ports=None):
    """{port: /ethdev/stats} of `ports` (default: every port /ethdev/list names) over the telemetry
    socket at `path`. Raises OSError, ValueError or KeyError when the process does not answer."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(2)
    try:
        s.connect(path)
        s.recv(16384)
        if ports is None:
            s.send(b"/ethdev/list")
            ports = json.loads(s.recv(65536).decode())["/ethdev/list"]
        out = {}
        for port in ports:
            s.send(f"/ethdev/stats,{port}".encode())
            out[port] = json.loads(s.recv(65536).decode())["/ethdev/stats"]
        return out
    finally:
        s.close()
