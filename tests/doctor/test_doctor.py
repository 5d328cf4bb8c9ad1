#!/usr/bin/python3
"""`dscpgw doctor` against fake hosts: a /proc and /sys built under a temporary root (--root) as a
healthy appliance and as the mistakes operators make first, and the path MTU probe through a real
narrow link between network namespaces.

Usage: test_doctor.py [DSCPGW_BINARY]. Prints PASS/FAIL/SKIP per test and a summary line.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from netns import Results, Skip, sh, ns, require_root_and_netns  # noqa: E402

DSCPGW = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "dscpgw")
TMP = tempfile.mkdtemp(prefix="dscpgw-doctor-")
R = Results("doctor")

CONFIG = """[eal]
args = ["-l", "{lcores}", "--file-prefix", "dscpgw"]

[[ports]]
name = "lan"
role = "inner"
device = "0000:3b:00.0"
mtu = {lan_mtu}

[[ports]]
name = "wan"
role = "outer"
device = "0000:3b:00.1"
ipv4 = "198.18.0.1"
mac = "02:00:00:00:00:01"
mtu = 9000

[[tunnels]]
name = "cloud"
type = "geneve"
vni = 100
remote = "{remote}"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.20.0.0/16"]
{tunnel_mtu}

[[classes]]
name = "roce-cnp"
match = {{ udp_dst_port = 4791, bth_opcode = 0x81 }}
dscp = 48

[[classes]]
name = "roce-data"
match = {{ udp_dst_port = 4791 }}
dscp = 26
"""


def config(name, lcores="1,2-3", lan_mtu=4200, remote="198.18.7.7", tunnel_mtu=""):
    path = os.path.join(TMP, f"{name}.toml")
    with open(path, "w") as f:
        f.write(CONFIG.format(lcores=lcores, lan_mtu=lan_mtu, remote=remote, tunnel_mtu=tunnel_mtu))
    return path


def put(root, rel, text):
    path = os.path.join(root, rel.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def link(root, rel, target):
    path = os.path.join(root, rel.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def host(name, driver="vfio-pci", hugepages=1024, free=1000, mounted=True, iommu=True, isolated="2-5",
         nic_node="0", tcp_ecn="1", roce_np="1", roce_rp="1", devices=("0000:3b:00.0", "0000:3b:00.1")):
    """A fake host root: what dscpgw doctor reads of /proc and /sys."""
    root = os.path.join(TMP, name)
    put(root, "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", str(hugepages))
    put(root, "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", str(free))
    mounts = "proc /proc proc rw 0 0\n"
    if mounted:
        mounts += "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n"
    put(root, "/proc/mounts", mounts)
    put(root, "/proc/sys/net/ipv4/tcp_ecn", tcp_ecn)
    put(root, "/sys/devices/system/cpu/isolated", isolated)
    put(root, "/sys/devices/system/node/node0/cpulist", "0-7")
    put(root, "/sys/devices/system/node/node1/cpulist", "8-15")
    if iommu:
        os.makedirs(os.path.join(root, "sys/kernel/iommu_groups/17"), exist_ok=True)
    else:
        os.makedirs(os.path.join(root, "sys/kernel/iommu_groups"), exist_ok=True)
    for d in devices:
        put(root, f"/sys/bus/pci/devices/{d}/numa_node", nic_node)
        if driver:
            link(root, f"/sys/bus/pci/devices/{d}/driver", f"../../../bus/pci/drivers/{driver}")
    # A RoCE NIC of the host (the GPU side's, as mlx5 exposes DCQCN per priority).
    for side, v in (("roce_np", roce_np), ("roce_rp", roce_rp)):
        for prio in range(8):
            put(root, f"/sys/class/net/ens1f0np0/ecn/{side}/enable/{prio}", v if prio in (3, 6) else "0")
    return root


def doctor(root, *args, json_out=True):
    cmd = [DSCPGW, "doctor", "--root", root, *args] + (["--json"] if json_out else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return p, (json.loads(p.stdout) if json_out and p.stdout.startswith("{") else None)


def by_name(j):
    return {c["check"]: c for c in j["checks"]}


def eq(a, b, what):
    if a != b:
        raise AssertionError(f"{what}: {a!r} != {b!r}")


def healthy_host_passes():
    p, j = doctor(host("good"), "--config", config("good"))
    c = by_name(j)
    eq(p.returncode, 0, f"exit code: {p.stdout}{p.stderr}")
    for name in ("hugepages", "port lan", "port wan", "lcores", "mtu cloud", "ecn sysctl", "roce ecn ens1f0np0"):
        eq(c[name]["status"], "PASS", f"{name}: {c[name]}")
    assert "1024 x 2 MB (1000 free), mounted at /dev/hugepages" in c["hugepages"]["detail"], c["hugepages"]
    assert "bound to vfio-pci, IOMMU on" in c["port wan"]["detail"], c["port wan"]
    assert "workers on 2,3, isolated, on the NICs' NUMA node" in c["lcores"]["detail"], c["lcores"]
    # The classes' DSCP 48 and 26 ride priorities 6 and 3 (DSCP / 8): both have DCQCN on.
    assert "priority 3,6" in c["roce ecn ens1f0np0"]["detail"], c["roce ecn ens1f0np0"]
    eq(j["summary"]["fail"], 0, "no FAIL")
    # The text form: one line each, a summary.
    p, _ = doctor(host("good2"), "--config", config("good"), json_out=False)
    lines = p.stdout.splitlines()
    assert lines[0].startswith("PASS hugepages: "), p.stdout
    assert lines[-1].endswith(" fail, 0 skip") or " 0 fail" in lines[-1], p.stdout


def mistakes_fail_with_the_fix():
    root = host("bad", driver="ixgbe", hugepages=0, free=0, isolated="", tcp_ecn="2", roce_np="0")
    p, j = doctor(root, "--config", config("bad"))
    eq(p.returncode, 1, "a FAIL exits 1")
    c = by_name(j)
    eq((c["hugepages"]["status"], c["hugepages"]["detail"]), ("FAIL", "no hugepages reserved"), "hugepages")
    assert "dpdk-hugepages.py --setup" in c["hugepages"]["fix"], c["hugepages"]
    eq(c["port lan"]["status"], "FAIL", "kernel driver")
    assert "bound to the kernel's ixgbe" in c["port lan"]["detail"], c["port lan"]
    eq(c["port lan"]["fix"], "modprobe vfio-pci && dpdk-devbind.py -b vfio-pci 0000:3b:00.0", "the fix")
    eq(c["lcores"]["status"], "WARN", "not isolated")
    assert c["lcores"]["fix"].startswith("isolcpus=2,3 nohz_full=2,3"), c["lcores"]
    eq(c["ecn sysctl"]["status"], "WARN", "tcp_ecn 2")
    eq(c["roce ecn ens1f0np0"]["status"], "FAIL", "DCQCN off")
    assert "roce_np priority 3" in c["roce ecn ens1f0np0"]["detail"], c["roce ecn ens1f0np0"]
    assert "echo 1 > /sys/class/net/ens1f0np0/ecn/roce_np/enable/3" in c["roce ecn ens1f0np0"]["fix"]
    # Text: the fix under the line.
    p, _ = doctor(root, "--config", config("bad"), json_out=False)
    assert "FAIL port lan: 0000:3b:00.0, NUMA node 0: bound to the kernel's ixgbe\n" \
           "     fix: modprobe vfio-pci && dpdk-devbind.py -b vfio-pci 0000:3b:00.0" in p.stdout, p.stdout


def partial_setups_warn():
    # Hugepages reserved but not mounted; too few for the pools.
    p, j = doctor(host("unmounted", mounted=False), "--config", config("a"))
    eq(by_name(j)["hugepages"]["status"], "FAIL", "not mounted")
    assert "no hugetlbfs is mounted" in by_name(j)["hugepages"]["detail"]
    p, j = doctor(host("few", hugepages=64, free=64), "--config", config("a"))
    h = by_name(j)["hugepages"]
    eq(h["status"], "FAIL", "64 x 2 MB is too little")
    assert "128 MB free, the gateway needs about" in h["detail"], h
    # uio, vfio without an IOMMU, a device that is not there.
    eq(by_name(doctor(host("uio", driver="uio_pci_generic"), "--config", config("a"))[1])["port lan"]["status"],
       "WARN", "uio")
    c = by_name(doctor(host("noiommu", iommu=False), "--config", config("a"))[1])["port lan"]
    eq(c["status"], "WARN", "vfio without an IOMMU")
    assert "intel_iommu=on" in c["fix"], c
    c = by_name(doctor(host("nodev", devices=("0000:3b:00.0",)), "--config", config("a"))[1])["port wan"]
    eq((c["status"], c["detail"]), ("FAIL", "0000:3b:00.1: no such PCI device"), "missing device")
    # Workers on the other NUMA node than the NICs.
    c = by_name(doctor(host("numa", nic_node="1", isolated="0-15"), "--config", config("a"))[1])["lcores"]
    eq(c["status"], "WARN", "cross-NUMA workers")
    assert "on another NUMA node than the NICs" in c["detail"], c
    # An inner MTU whose frames do not fit the outer MTU with Geneve's overhead.
    c = by_name(doctor(host("mtu"), "--config", config("mtu", lan_mtu=9000))[1])["mtu cloud"]
    eq(c["status"], "WARN", "inner 9000 in outer 9000")
    assert "raise the underlay MTU to 9050" in c["fix"], c


def no_config_and_bad_config():
    root = host("plain")
    p, j = doctor(root)
    names = [c["check"] for c in j["checks"]]
    assert "hugepages" in names and "ecn sysctl" in names, names
    if not os.path.exists("/etc/dscpgw/dscpgw.toml"):
        # Without a config and none installed: the host checks only, and a line saying so.
        eq(by_name(j)["config"]["status"], "SKIP", "no config")
        assert "port lan" not in names, names
    bad = os.path.join(TMP, "broken.toml")
    with open(bad, "w") as f:
        f.write("[[ports]]\nname = 1\n")
    p, _ = doctor(root, "--config", bad)
    eq(p.returncode, 2, "a config that does not load")
    assert "broken.toml:2:" in p.stderr, p.stderr
    p = subprocess.run([DSCPGW, "doctor", "--bogus"], capture_output=True, text=True)
    eq(p.returncode, 2, "unknown option")
    p = subprocess.run([DSCPGW, "doctor", "--help"], capture_output=True, text=True)
    assert "--probe" in p.stdout and "--root DIR" in p.stdout, p.stdout


def path_mtu_probe_in_namespaces():
    """The probe pings the remote VTEP with DF set at the tunnel's MTU from where doctor runs: a
    namespace whose link to the peer carries 1400 bytes."""
    require_root_and_netns("dgwdr", ("ip", "ping"))
    a, b = "dgwdra", "dgwdrb"
    sh(f"ip netns add {a}")
    sh(f"ip netns add {b}")
    try:
        sh(f"ip link add dgwdr0 netns {a} type veth peer name dgwdr1 netns {b}")
        ns(a, "ip addr add 198.18.50.1/24 dev dgwdr0")
        ns(b, "ip addr add 198.18.50.2/24 dev dgwdr1")
        for n, dev in ((a, "dgwdr0"), (b, "dgwdr1")):
            ns(n, f"ip link set {dev} mtu 1400 up")
            ns(n, "ip link set lo up")
        root = host("probe")
        p = subprocess.run(["ip", "netns", "exec", a, DSCPGW, "doctor", "--root", root, "--probe", "--json",
                            "--config", config("probe", lan_mtu=1300, remote="198.18.50.2")],
                           capture_output=True, text=True, timeout=60)
        c = by_name(json.loads(p.stdout))["mtu cloud"]
        eq(c["status"], "FAIL", f"9000-byte packets over a 1400 link: {c}")
        assert "does not carry 9000-byte packets" in c["detail"] and "1400" in c["detail"], c
        p = subprocess.run(["ip", "netns", "exec", a, DSCPGW, "doctor", "--root", root, "--probe", "--json",
                            "--config", config("probe2", lan_mtu=1300, remote="198.18.50.2",
                                               tunnel_mtu="mtu = 1400")],
                           capture_output=True, text=True, timeout=60)
        c = by_name(json.loads(p.stdout))["mtu cloud"]
        eq(c["status"], "PASS", f"1400 over 1400: {c}")
        assert "198.18.50.2 answers 1400-byte packets with DF set" in c["detail"], c
        # A remote nobody answers for: SKIP, not a false FAIL.
        p = subprocess.run(["ip", "netns", "exec", a, DSCPGW, "doctor", "--root", root, "--probe", "--json",
                            "--config", config("probe3", lan_mtu=1300, remote="198.18.51.9",
                                               tunnel_mtu="mtu = 1400")],
                           capture_output=True, text=True, timeout=60)
        eq(by_name(json.loads(p.stdout))["mtu cloud"]["status"], "SKIP", "no answer")
    finally:
        sh(f"ip netns del {a}", check=False)
        sh(f"ip netns del {b}", check=False)


def main():
    R.check("healthy_host_passes", healthy_host_passes)
    R.check("mistakes_fail_with_the_fix", mistakes_fail_with_the_fix)
    R.check("partial_setups_warn_or_fail", partial_setups_warn)
    R.check("no_config_and_bad_config", no_config_and_bad_config)
    R.check("path_mtu_probe_in_namespaces", path_mtu_probe_in_namespaces)
    shutil.rmtree(TMP, ignore_errors=True)
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
