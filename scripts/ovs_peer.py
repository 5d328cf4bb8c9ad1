"""Open vSwitch with DPDK as bench-forward.py's peer: the same tunnel work on the same vdevs.

One private instance per run (its own database, run directory and network namespace, so that
the system's Open vSwitch, if any, is left alone): a netdev bridge br-int with the inner port and
a Geneve or VXLAN port (key 100, tos=inherit), a netdev bridge br-phy with the outer port, the
underlay address on br-phy's internal port inside the namespace, a route and a neighbour entry for
the remote VTEP. Encap: br-int's flow sets DSCP 26 (mod_nw_tos, as the gateway's roce-data class
does) and outputs to the tunnel, which OVS's userspace datapath turns into tnl_push out of the
outer port. Decap: br-phy hands the outer frames to its LOCAL port, which OVS turns into
tnl_pop, and br-int outputs the inner frames to the inner port. One PMD thread on CPU 1
(pmd-cpu-mask 0x2), the main thread on CPU 0, as dscpgw's worker and testpmd's forwarding lcore.

OVS 3.1 always passes DPDK --in-memory, which --no-huge contradicts: it needs hugepages. Its
ports keep the default 1500-byte MTU: OVS asks the device for a larger one and net_pcap has no
MTU setting, so OVS carries frames up to 1518 bytes here (MAX_FRAME).
"""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

VSWITCHD = os.environ.get("OVS_VSWITCHD_DPDK", "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk")
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
NETNS = "dscpgw-ovsb"
REMOTE_MAC = "02:00:00:00:00:fe"  # bench-forward.py's next_hop_mac.
LOCAL_MAC = "02:00:00:00:00:01"   # Its wan port's MAC: the decap captures' destination.
MAX_FRAME = 1518


def missing():
    """Why the peer cannot run here, or None."""
    if os.geteuid() != 0:
        return "--peer ovs needs root (a network namespace for OVS's underlay address)"
    for p in (VSWITCHD, SCHEMA):
        if not os.path.exists(p):
            return f"--peer ovs needs {p}: scripts/install-deps.sh --ovs installs it (openvswitch-switch-dpdk)"
    return None


def _sh(*cmd, env=None):
    r = subprocess.run(list(cmd), capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def _pmd_cpu_ns(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                if not f.read().startswith("pmd"):
                    continue
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


class Ovs:
    """One running instance; use as a context manager."""

    def __init__(self, direction, typ, remote, local, inner_dev, outer_dev, socket_mem=1024):
        self.direction, self.typ, self.remote, self.local = direction, typ, remote, local
        self.inner_dev, self.outer_dev, self.socket_mem = inner_dev, outer_dev, socket_mem
        self.dir = tempfile.mkdtemp(prefix="dscpgw-ovs-")
        self.env = dict(os.environ, OVS_RUNDIR=self.dir, OVS_DBDIR=self.dir, OVS_LOGDIR=self.dir)
        self.db = f"unix:{self.dir}/db.sock"
        self.pids = []

    def vsctl(self, *args):
        return _sh("ovs-vsctl", f"--db={self.db}", "--timeout=30", *args, env=self.env)

    def appctl(self, *args):
        return _sh("ovs-appctl", "-t", self.ctl, *args, env=self.env)

    def ofctl(self, bridge, *args):
        return _sh("ovs-ofctl", *args[:1], f"unix:{self.dir}/{bridge}.mgmt", *args[1:], env=self.env)

    def __enter__(self):
        try:
            self._start()
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        d = self.dir
        subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)
        _sh("ip", "netns", "add", NETNS)
        _sh("ovsdb-tool", "create", f"{d}/conf.db", SCHEMA)
        _sh("ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock", f"--pidfile={d}/ovsdb.pid",
            "--detach", f"--log-file={d}/ovsdb.log", env=self.env)
        self.pids.append(f"{d}/ovsdb.pid")
        self.vsctl("--no-wait", "init")
        self.vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=true",
                   'other_config:dpdk-extra="--no-pci"', f"other_config:dpdk-socket-mem={self.socket_mem}",
                   "other_config:pmd-cpu-mask=0x2")
        _sh("ip", "netns", "exec", NETNS, VSWITCHD, self.db, f"--pidfile={d}/vswitchd.pid", "--detach",
            f"--log-file={d}/vswitchd.log", env=self.env)
        self.pids.append(f"{d}/vswitchd.pid")
        with open(f"{d}/vswitchd.pid") as f:
            self.pid = int(f.read())
        self.ctl = f"{d}/ovs-vswitchd-dpdk.{self.pid}.ctl"
        v6 = ":" in self.remote
        self.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev")
        self.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev",
                   f"other_config:hwaddr={LOCAL_MAC}")
        self.vsctl("add-port", "br-int", "inner", "--", "set", "Interface", "inner", "type=dpdk",
                   f'options:dpdk-devargs="{self.inner_dev}"',)
        self.vsctl("add-port", "br-phy", "outer", "--", "set", "Interface", "outer", "type=dpdk",
                   f'options:dpdk-devargs="{self.outer_dev}"',)
        self.vsctl("add-port", "br-int", "tun", "--", "set", "Interface", "tun", f"type={self.typ}",
                   f"options:remote_ip={self.remote}", f"options:local_ip={self.local}", "options:key=100",
                   "options:tos=inherit")
        _sh("ip", "netns", "exec", NETNS, "ip", "addr", "add", f"{self.local}/{64 if v6 else 16}", "dev", "br-phy")
        _sh("ip", "netns", "exec", NETNS, "ip", "link", "set", "br-phy", "up")
        self.appctl("ovs/route/add", f"{self.remote}/{128 if v6 else 32}", "br-phy")
        self.appctl("tnl/neigh/set", "br-phy", self.remote, REMOTE_MAC)
        self.ofctl("br-int", "del-flows")
        self.ofctl("br-phy", "del-flows")
        if self.direction == "encap":
            self.ofctl("br-int", "add-flow", "in_port=inner,ip,actions=mod_nw_tos:104,output:tun")
            self.ofctl("br-phy", "add-flow", "in_port=LOCAL,actions=output:outer")
        else:
            self.ofctl("br-phy", "add-flow", "in_port=outer,actions=LOCAL")
            self.ofctl("br-int", "add-flow", "in_port=tun,actions=output:inner")

    def tx_packets(self):
        """The sink port's packets sent, live from the device (OVSDB's statistics lag by 5 s)."""
        bridge, port = ("br-phy", "outer") if self.direction == "encap" else ("br-int", "inner")
        m = re.search(r"tx pkts=(\d+)", self.ofctl(bridge, "dump-ports", port))
        return int(m.group(1)) if m else 0

    def measure(self, seconds, warmup=1.5):
        """(packets sent, PMD CPU ns, wall seconds, busy cycles per packet) over `seconds`."""
        time.sleep(warmup)
        self.appctl("dpif-netdev/pmd-stats-clear")
        t0, p0, c0 = time.monotonic(), self.tx_packets(), _pmd_cpu_ns(self.pid)
        time.sleep(seconds)
        p1, c1, t1 = self.tx_packets(), _pmd_cpu_ns(self.pid), time.monotonic()
        stats = self.appctl("dpif-netdev/pmd-stats-show")
        m = re.search(r"avg processing cycles per packet: ([\d.]+)", stats)
        return p1 - p0, c1 - c0, t1 - t0, float(m.group(1)) if m else float("nan")

    def __exit__(self, *exc):
        for pidfile in reversed(self.pids):
            try:
                with open(pidfile) as f:
                    pid = int(f.read())
                os.kill(pid, signal.SIGTERM)
                for _ in range(100):
                    os.kill(pid, 0)
                    time.sleep(0.05)
                os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)
        return False
