"""The CPU a benchmark's figures come from, as the guest sees it (scripts/bench-forward.py and
scripts/bench-pktgen.py print it first): a virtual machine may land on another host between runs,
and its figures belong to the line printed with them."""
import os
import subprocess


# AMD's core by family (0x19 holds Zen 3 and Zen 4: Zen 4 in models 0x10-0x1f, 0x60-0x7f and
# 0xa0-0xaf).
def amd_core(fam, model):
    if fam == 0x19:
        return "Zen 4" if model >> 4 in (0x1, 0x6, 0x7, 0xa) else "Zen 3"
    return {0x17: "Zen 1/2", 0x1a: "Zen 5"}.get(fam, "")


def describe():
    """Model name, family and model (with AMD's core name where the family gives it), CPUs,
    /proc/cpuinfo's MHz (in a VM the TSC rate the kernel measured; on a host with frequency
    scaling the clock at that moment), L1d and L2 sizes."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                info.setdefault(k.strip(), v.strip())
    except OSError:
        return "CPU unknown"
    fam, model = int(info.get("cpu family", "0")), int(info.get("model", "0"))
    core = amd_core(fam, model) if info.get("vendor_id") == "AuthenticAMD" else ""
    caches = []
    for name, key in (("L1d", "LEVEL1_DCACHE_SIZE"), ("L2", "LEVEL2_CACHE_SIZE")):
        try:
            n = int(subprocess.run(["getconf", key], capture_output=True, text=True).stdout.strip() or 0)
        except (OSError, ValueError):
            n = 0
        if n:
            caches.append(f"{name} {n >> 10} KB")
    return (f"{info.get('model name', 'CPU')} (family {fam:#x} model {model:#x}{', ' + core if core else ''}), "
            f"{os.cpu_count()} CPUs, cpu MHz {float(info.get('cpu MHz', '0')):.0f}"
            + (", " + ", ".join(caches) if caches else ""))
