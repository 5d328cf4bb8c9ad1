#!/usr/bin/python3
"""What an operator installs: the Debian package (dpkg-buildpackage from a copy of the tree, its
contents and conffile, the packaged binaries run from an unpacked root, lintian), the man pages
against the binaries' own --help, and the bash completion driven as bash-completion drives it.

Usage: test_package.py [BUILD_DIR]. Prints PASS/FAIL/SKIP per test and a summary line.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from netns import Results, Skip  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
DSCPGW = os.path.join(BUILD, "dscpgw")
HOSTMARK = os.path.join(BUILD, "hostmark", "dscpgw-hostmark")
TMP = tempfile.mkdtemp(prefix="dscpgw-package-")
R = Results("package")
PKG = {}  # What package_builds made: the .deb, the .changes, the unpacked root.


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)


def eq(a, b, what):
    if a != b:
        raise AssertionError(f"{what}: {a!r} != {b!r}")


def help_commands(binary, *pre):
    """The command names under "commands:" in BINARY [PRE] --help."""
    out = run([binary, *pre, "--help"]).stdout
    names, on = [], False
    for line in out.splitlines():
        if line == "commands:":
            on = True
        elif on and line.startswith("  ") and line[2:3].isalpha():
            names.append(line.split()[0])
        elif on and not line.startswith("  "):
            on = False
    assert names, out
    return names


def help_options(binary, cmd):
    out = run([binary, cmd, "--help"]).stdout
    opts = re.findall(r"^  (?:-h, )?(--[a-z-]+)", out, re.M)
    assert opts, out
    return opts


def log_types():
    with open(os.path.join(ROOT, "control", "log.h")) as f:
        return ["dscpgw." + n for n in re.findall(r"^\s+X\((\w+),", f.read(), re.M)]


def package_builds():
    if shutil.which("dpkg-buildpackage") is None or shutil.which("dh") is None:
        raise Skip("dpkg-buildpackage/debhelper not installed (scripts/install-deps.sh installs them)")
    src = os.path.join(TMP, "src")
    os.makedirs(src)
    # The tree as git has it (tracked and untracked, not ignored), as a fresh clone would.
    files = run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard"]).stdout.split("\n")
    for rel in filter(None, files):
        if os.path.isfile(os.path.join(ROOT, rel)):
            os.makedirs(os.path.dirname(os.path.join(src, rel)) or src, exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), os.path.join(src, rel))
    p = run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, timeout=1800)
    with open(os.path.join(TMP, "build.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    if p.returncode != 0:
        raise AssertionError(f"dpkg-buildpackage exited {p.returncode}:\n{(p.stdout + p.stderr)[-3000:]}")
    PKG["deb"] = os.path.join(TMP, "dscpgw_0.1.0_amd64.deb")
    PKG["changes"] = os.path.join(TMP, "dscpgw_0.1.0_amd64.changes")
    assert os.path.exists(PKG["deb"]), os.listdir(TMP)
    PKG["root"] = os.path.join(TMP, "root")
    eq(run(["dpkg-deb", "-x", PKG["deb"], PKG["root"]]).returncode, 0, "dpkg-deb -x")
    print(f"   {os.path.basename(PKG['deb'])}: {os.path.getsize(PKG['deb']) // 1024} KiB")


def need_package():
    if "deb" not in PKG:
        raise Skip("no package was built")


def package_contents():
    need_package()
    listing = run(["dpkg-deb", "-c", PKG["deb"]]).stdout
    paths = {line.split()[-1].lstrip(".") for line in listing.splitlines()}
    for want in ("/usr/bin/dscpgw", "/usr/bin/dscpgw-hostmark", "/etc/dscpgw/dscpgw.toml",
                 "/lib/systemd/system/dscpgw.service", "/lib/systemd/system/dscpgw-hostmark@.service",
                 "/usr/share/man/man8/dscpgw.8.gz", "/usr/share/man/man8/dscpgw-hostmark.8.gz",
                 "/usr/share/bash-completion/completions/dscpgw",
                 "/usr/share/bash-completion/completions/dscpgw-hostmark",
                 "/usr/share/doc/dscpgw/operations.md", "/usr/share/doc/dscpgw/grafana-dashboard.json",
                 "/usr/share/doc/dscpgw/alerts.yml", "/usr/share/doc/dscpgw/prometheus.yml",
                 "/usr/share/doc/dscpgw/copyright", "/usr/share/doc/dscpgw/examples/qos-plan.toml"):
        assert want in paths, f"{want} not in the package:\n{listing}"
    assert not any("/tests" in p or "bench" in p for p in paths), "no test or benchmark binaries"
    conffiles = run(["dpkg-deb", "-I", PKG["deb"], "conffiles"]).stdout.split()
    eq(conffiles, ["/etc/dscpgw/dscpgw.toml"], "conffiles")
    # The unit's Documentation= names a file the package holds, uncompressed.
    with open(os.path.join(PKG["root"], "lib/systemd/system/dscpgw.service")) as f:
        unit = f.read()
    for doc in re.findall(r"file://(\S+)", unit):
        assert doc in paths, f"Documentation= {doc} is not in the package"
    assert "ExecStart=/usr/bin/dscpgw run --config /etc/dscpgw/dscpgw.toml" in unit
    info = run(["dpkg-deb", "-I", PKG["deb"]]).stdout
    assert re.search(r"Depends: .*librte-eal23.*librte-mempool-ring23", info, re.S), info
    # Installed, not enabled or started: the gateway needs its ports configured first, and an
    # upgrade leaves the running gateway alone until the operator restarts it. An enabled unit
    # stays enabled across upgrades.
    postinst = run(["dpkg-deb", "-I", PKG["deb"], "postinst"]).stdout
    assert "deb-systemd-invoke" not in postinst, postinst
    assert "was-enabled 'dscpgw.service'" in postinst, postinst


def packaged_binaries_run():
    need_package()
    bin_dir = os.path.join(PKG["root"], "usr", "bin")
    conf = os.path.join(PKG["root"], "etc", "dscpgw", "dscpgw.toml")
    p = run([os.path.join(bin_dir, "dscpgw"), "--version"])
    eq(p.returncode, 0, "dscpgw --version")
    # The package takes DPDK's shared libraries, its drivers the plugins debian/control recommends.
    assert re.fullmatch(r"dscpgw 0\.1\.0 \(DPDK 22\.11\.\d+\)\n"
                        r"DPDK drivers: the shared plugins in /usr/lib/x86_64-linux-gnu/dpdk/pmds-23\.0\n",
                        p.stdout), p.stdout
    p = run([os.path.join(bin_dir, "dscpgw-hostmark"), "--version"])
    eq(p.returncode, 0, "dscpgw-hostmark --version")
    assert re.fullmatch(r"dscpgw-hostmark 0\.1\.0 \(libbpf \d+\.\d+\)\n", p.stdout), p.stdout
    p = run([os.path.join(bin_dir, "dscpgw"), "check", "--config", conf])
    eq(p.returncode, 0, f"dscpgw check on the packaged config: {p.stdout}{p.stderr}")
    assert "OK" in p.stdout, p.stdout
    p = run([os.path.join(bin_dir, "dscpgw-hostmark"), "check", "--config", conf])
    eq(p.returncode, 0, f"dscpgw-hostmark check on the packaged config: {p.stdout}{p.stderr}")
    # A broken copy of the packaged config: a clear error, exit 2.
    bad = os.path.join(TMP, "bad.toml")
    with open(conf) as f, open(bad, "w") as g:
        g.write(f.read().replace("vni = 100", "vni = 99999999"))
    p = run([os.path.join(bin_dir, "dscpgw"), "check", "--config", bad])
    eq(p.returncode, 2, "a bad config")
    assert "bad.toml:" in p.stderr and "vni" in p.stderr, p.stderr


def lintian_clean():
    need_package()
    if shutil.which("lintian") is None:
        raise Skip("lintian not installed")
    p = run(["lintian", "--pedantic", "-I", "--tag-display-limit", "0", PKG["changes"]], timeout=600)
    tags = [line for line in (p.stdout + p.stderr).splitlines() if re.match(r"^[EWIPXO]: ", line)]
    for t in tags:
        print(f"   lintian {t}")
    if not tags:
        print("   lintian --pedantic: no findings")
    errors = [t for t in tags if t.startswith("E: ")]
    assert not errors, "\n".join(errors)


def man_pages():
    """Every command and option the binaries accept is in their man page; man renders them
    without warnings."""
    if shutil.which("man") is None:
        raise Skip("man not installed")
    for binary, page in ((DSCPGW, "dscpgw.8"), (HOSTMARK, "dscpgw-hostmark.8")):
        path = os.path.join(ROOT, "docs", "man", page)
        p = run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", path],
                env={**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8"})
        eq((p.returncode, p.stderr), (0, ""), f"man --warnings {page}")
        text = run(["man", "-l", path], env={**os.environ, "MANWIDTH": "200", "LC_ALL": "C",
                                            "MAN_KEEP_FORMATTING": ""}).stdout
        text = re.sub(r".\x08", "", text)
        for cmd in help_commands(binary):
            assert re.search(rf"\b{re.escape(binary.rsplit('/', 1)[1])} {cmd}\b", text), f"{page}: {cmd}"
            for opt in help_options(binary, cmd):
                assert opt in text, f"{page}: {cmd} {opt}"
        if binary == DSCPGW:
            for sub in help_commands(DSCPGW, "ctl"):
                assert re.search(rf"^\s+{re.escape(sub)}\b", text, re.M), f"{page}: ctl {sub}"
            for t in log_types():
                assert t in text, f"{page}: log type {t}"


def bash_completion():
    """The completion, loaded after bash-completion's own functions, as an interactive shell
    would: commands, options and control commands from the binaries, the log types from the
    code."""
    bc = "/usr/share/bash-completion/bash_completion"
    if not os.path.exists(bc):
        raise Skip("bash-completion not installed")
    script = os.path.join(ROOT, "scripts", "completion", "dscpgw")

    def complete(*words):
        line = " ".join(words)
        sh = (f'source {bc}; source {script}; COMP_WORDS=({" ".join(repr(w) for w in words)}); '
              f'COMP_CWORD={len(words) - 1}; COMP_LINE={line!r}; COMP_POINT={len(line)}; _dscpgw; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
        env = {**os.environ, "PATH": f"{BUILD}:{BUILD}/hostmark:{os.environ['PATH']}"}
        p = run(["bash", "-c", sh], env=env)
        eq(p.returncode, 0, f"completion of {words}: {p.stderr}")
        return [w for w in p.stdout.splitlines() if w]

    eq(complete("dscpgw", ""), help_commands(DSCPGW) + ["--version", "--help"], "dscpgw commands")
    eq(complete("dscpgw", "re"), ["replay"], "a prefix")
    eq(complete("dscpgw", "replay", "--"), help_options(DSCPGW, "replay"), "replay's options")
    eq(complete("dscpgw", "ctl", "--socket", "/run/x.sock", ""), help_commands(DSCPGW, "ctl"),
       "ctl commands after --socket PATH")
    eq(complete("dscpgw", "ctl", "log-level", ""), ["--all"] + log_types() + ["dscpgw.*"], "log types")
    eq(complete("dscpgw", "ctl", "log-level", "dscpgw.port", "de"), ["debug"], "levels")
    eq(complete("dscpgw", "ctl", "flows", "--"), ["--top", "--json"], "flows' arguments")
    eq(complete("dscpgw", "ctl", "trace", "--c"), ["--count", "--class"], "trace's arguments")
    eq(complete("dscpgw-hostmark", ""), help_commands(HOSTMARK) + ["--version", "--help"], "hostmark commands")
    eq(complete("dscpgw-hostmark", "status", "--"), help_options(HOSTMARK, "status"), "status' options")


def main():
    R.check("package_builds", package_builds)
    R.check("package_contents_conffile_and_units", package_contents)
    R.check("packaged_binaries_version_and_check", packaged_binaries_run)
    R.check("lintian_no_errors", lintian_clean)
    R.check("man_pages_cover_every_command_and_option", man_pages)
    R.check("bash_completion_from_the_binaries", bash_completion)
    shutil.rmtree(TMP, ignore_errors=True)
    return R.finish()


if __name__ == "__main__":
    sys.exit(main())
