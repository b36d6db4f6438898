# SPDX-License-Identifier: MIT
"""Installing and running as a service (issue 16 item 6): `meson install` into a
DESTDIR puts uexec, uexec-init and the TOML, OpenSSL and BPF modules (where uexec looks for them), the man page and the
systemd unit in their places; the unit's `systemd-analyze security` exposure stays
within 4.5; the man page lists every option of --help; a refused io_uring_setup (as
under Docker's default seccomp profile) gives an actionable start-up error; the
Docker seccomp delta merges into a profile."""

import ctypes
import ctypes.util
import errno
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import HOST, REPO_ROOT, UEXEC_BIN, wait_until

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(UEXEC_BIN)))
DIST = os.path.join(REPO_ROOT, "dist")


def meson():
    m = shutil.which("meson")
    if not m:
        pytest.skip("meson is not installed")
    if not os.path.isdir(os.path.join(BUILD_DIR, "meson-private")):
        pytest.skip("UEXEC_BIN is not in a meson build directory (%s)" % BUILD_DIR)
    return m


def build_options():
    out = subprocess.run([meson(), "introspect", "--buildoptions", BUILD_DIR],
                         capture_output=True, check=True, timeout=60).stdout
    return {o["name"]: o["value"] for o in json.loads(out)}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("destdir"))
    opts = build_options()
    p = subprocess.run([meson(), "install", "-C", BUILD_DIR, "--no-rebuild", "--destdir", dest,
                        "--quiet"], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    prefix = opts["prefix"]

    def path(*parts):
        rel = os.path.join(*parts)
        if not os.path.isabs(rel):
            rel = os.path.join(prefix, rel)
        return dest + rel

    files = sorted(os.path.relpath(os.path.join(d, n), dest)
                   for d, _, names in os.walk(dest) for n in names)
    unitdir = opts.get("systemdsystemunitdir") or os.path.join(prefix, "lib/systemd/system")
    return {"dest": dest, "prefix": prefix, "files": files, "opts": opts, "path": path,
            "unit": dest + os.path.join(unitdir, "uexec.service")}


def help_options():
    out = subprocess.run([UEXEC_BIN, "--help"], capture_output=True, check=True,
                         timeout=60).stdout.decode()
    return set(re.findall(r"^\s+(?:-h, )?(--[a-z][a-z0-9-]+)", out, re.M))


def test_install_lists_the_expected_files(installed):
    o, path = installed["opts"], installed["path"]
    want = {path(o["bindir"], "uexec"), path(o["libexecdir"], "uexec-init"),
            path(o["libdir"], "uexec", "uexec-toml.so"),
            path(o["libdir"], "uexec", "uexec-openssl.so"),
            installed["unit"], path(o["datadir"], "uexec", "uexec.toml.example")}
    if shutil.which("help2man"):
        want.add(path(o["mandir"], "man1", "uexec.1"))
    if os.path.exists(os.path.join(BUILD_DIR, "src", "uexec-bpf.so")):  # a build with BPF
        want.add(path(o["libdir"], "uexec", "uexec-bpf.so"))
    have = {os.path.join(installed["dest"], f) for f in installed["files"]}
    assert want <= have, sorted(want - have)
    # nothing else: no test, bench or fuzz programs
    assert have == want, sorted(have - want)
    for exe in (path(o["bindir"], "uexec"), path(o["libexecdir"], "uexec-init")):
        assert os.access(exe, os.X_OK), exe
    p = subprocess.run([path(o["bindir"], "uexec"), "--version"], capture_output=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout.startswith(b"uexec ")


def test_uexec_looks_for_uexec_init_where_it_is_installed(installed):
    """--help names the compiled-in libexecdir; it is where meson installs uexec-init."""
    o = installed["opts"]
    libexec = os.path.join(installed["prefix"], o["libexecdir"])
    out = subprocess.run([installed["path"](o["bindir"], "uexec"), "--help"],
                         capture_output=True, timeout=60).stdout.decode()
    assert re.search(r"next to the uexec binary or in\s+%s;" % re.escape(libexec), out), out
    assert os.path.isfile(installed["path"](o["libexecdir"], "uexec-init"))


def _bindable_prefix(installed):
    """(unshare, build options, prefix) for a test that binds the DESTDIR at the prefix
    in a mount namespace of its own; skips where that cannot be done."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare:
        pytest.skip("needs root and unshare(1) to bind the DESTDIR at the prefix")
    o, prefix = installed["opts"], installed["prefix"]
    if not os.path.isdir(prefix):
        pytest.skip("the prefix %s does not exist on this host to be mounted over" % prefix)
    return unshare, o, prefix


def test_installed_uexec_finds_uexec_init(installed):
    """Run the installed tree as if installed (bind-mounted at its prefix in a mount
    namespace of its own): uexec opens libexecdir/uexec-init, no PID-namespace warning."""
    HOST.require("sandbox")
    unshare, o, prefix = _bindable_prefix(installed)
    script = 'mount --bind "$1" "$2" && exec "$2/%s/uexec" --listen stdio' % o["bindir"]
    p = subprocess.run([unshare, "-m", "--propagation", "private", "sh", "-c", script, "sh",
                        installed["dest"] + prefix, prefix],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    err = p.stderr.decode()
    assert p.returncode == 0, err
    assert "Sandbox ready" in err, err
    assert "uexec-init" not in err, err      # no "Cannot open .../uexec-init" warning
    assert "uexec-bpf.so" not in err, err    # the tracer's module found where it is installed


def test_installed_uexec_reads_its_config_through_the_installed_module(installed, tmp_path):
    """The installed tree bound at its prefix (as above): a uexec outside the build tree
    loads the TOML module from libdir/uexec for --config (here the shipped example with
    its listener moved to an ephemeral port) and for environmentConfig/read."""
    unshare, o, prefix = _bindable_prefix(installed)
    conf = tmp_path / "uexec.toml"
    with open(installed["path"](o["datadir"], "uexec", "uexec.toml.example")) as f:
        text = f.read()
    text = re.sub(r'(?m)^listen = .*$', 'listen = "stdio"', text)
    text = re.sub(r'(?m)^audit-log = .*$', 'audit-log = "%s"' % (tmp_path / "audit.jsonl"), text)
    conf.write_text(text)
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text('model = "installed"\n')
    req = {"jsonrpc": "2.0", "id": 2, "method": "environmentConfig/read",
           "params": {"cwd": "file://" + str(home), "configPaths": [["model"]],
                      "requirementsPaths": [["x"]]}}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientName": "t"}}
    lines = (json.dumps(init) + "\n" + json.dumps({"jsonrpc": "2.0", "method": "initialized"})
             + "\n" + json.dumps(req) + "\n").encode()
    script = 'mount --bind "$1" "$2" && exec "$2/%s/uexec" --config "$3"' % o["bindir"]
    env = dict(os.environ, CODEX_HOME=str(home))
    p = subprocess.run([unshare, "-m", "--propagation", "private", "sh", "-c", script, "sh",
                        installed["dest"] + prefix, prefix, str(conf)],
                       input=lines, capture_output=True, timeout=60, env=env)
    err = p.stderr.decode()
    assert p.returncode == 0, err
    assert "TOML module" not in err, err
    replies = {m.get("id"): m for m in map(json.loads, p.stdout.decode().splitlines())}
    layers = replies[2]["result"]["config"]["layers"]
    assert [x["toml"] for x in layers if x["source"].startswith("user")] == \
        ['model = "installed"\n'], replies[2]


def test_installed_uexec_loads_the_installed_openssl_module(installed, tmp_path):
    """The installed tree bound at its prefix (as above): a uexec outside the build tree
    loads the OpenSSL module from libdir/uexec for a wss:// listener (a certificate made
    by openssl(1)) and serves a TLS client."""
    unshare, o, prefix = _bindable_prefix(installed)
    if not shutil.which("openssl"):
        pytest.skip("needs openssl (the program) to make a test certificate")
    import ssl
    import wsclient
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    script = ('mount --bind "$1" "$2" && exec "$2/%s/uexec" --listen wss://127.0.0.1:0 '
              '--tls-cert "$3" --tls-key "$4"' % o["bindir"])
    p = subprocess.Popen([unshare, "-m", "--propagation", "private", "sh", "-c", script, "sh",
                          installed["dest"] + prefix, prefix, str(cert), str(key)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        url = p.stdout.readline().decode().strip()
        assert url.startswith("wss://127.0.0.1:"), (url, p.stderr.read1().decode())
        ctx = ssl.create_default_context(cafile=str(cert))
        c = wsclient.connect("ws://" + url[len("wss://"):], ssl_context=ctx)
        assert c.ws.sock.version() in ("TLSv1.2", "TLSv1.3")
        c.close()
    finally:
        p.terminate()
        _, err = p.communicate(timeout=60)
    assert "OpenSSL module" not in err.decode(), err.decode()


def test_man_page_lists_every_option_of_help(installed):
    if not shutil.which("help2man"):
        pytest.skip("help2man is not installed: no man page built (scripts/deps.sh)")
    o = installed["opts"]
    page = open(installed["path"](o["mandir"], "man1", "uexec.1"), encoding="utf-8").read()
    options = help_options()
    assert {"--listen", "--config", "--log-format", "--audit-log", "--drain-timeout-ms"} <= options
    # groff writes '-' as '\-'
    missing = [opt for opt in options if opt.replace("-", "\\-") not in page]
    assert not missing, missing
    assert ".SH FILES" in page and "uexec.toml" in page


def test_unit_file_contents(installed):
    unit = open(installed["unit"]).read()
    o = installed["opts"]
    bindir = os.path.join(installed["prefix"], o["bindir"])
    sysconf = os.path.join(installed["prefix"], o["sysconfdir"])
    assert "ExecStart=%s/uexec --config %s/uexec/uexec.toml" % (bindir, sysconf) in unit
    assert "KillMode=mixed" in unit            # SIGTERM to uexec only: the drain
    # systemctl reload: the configuration, then the upgrade in place (both, in that order)
    assert "ExecReload=/bin/kill -HUP $MAINPID\nExecReload=/bin/kill -USR2 $MAINPID\n" in unit
    assert not re.search(r"@[A-Z_]+@", unit), "unsubstituted configure variable"


def test_unit_reload_lines_reload_and_upgrade(installed, tmp_path):
    """`systemctl reload uexec` runs the unit's ExecReload= lines in order: run them as
    systemd does ($MAINPID the service's pid) against the installed uexec (its tree bound
    at the prefix, as above): the configuration is reloaded, then the binary at ExecStart's path takes over in the same pid
    (README "Upgrading in place") and serves on the same listener."""
    import shlex
    import wsclient
    unshare, o, prefix = _bindable_prefix(installed)
    unit = open(installed["unit"]).read()
    reloads = re.findall(r"(?m)^ExecReload=(.*)$", unit)
    assert len(reloads) == 2, reloads
    conf = tmp_path / "uexec.toml"
    conf.write_text('listen = "ws://127.0.0.1:0"\nlog-level = "info"\n')
    err_path = tmp_path / "stderr"
    script = 'mount --bind "$1" "$2" && exec "$2/%s/uexec" --config "$3"' % o["bindir"]
    with open(err_path, "wb") as err:
        # unshare without --fork execs sh, which execs uexec: p.pid is the service's pid
        p = subprocess.Popen([unshare, "-m", "--propagation", "private", "sh", "-c", script,
                              "sh", installed["dest"] + prefix, prefix, str(conf)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
    try:
        url = p.stdout.readline().decode().strip()
        assert url.startswith("ws://127.0.0.1:"), (url, err_path.read_text())
        for line in reloads:
            argv = [a.replace("$MAINPID", str(p.pid)) for a in shlex.split(line)]
            if not os.access(argv[0], os.X_OK):
                pytest.skip("%s (the unit's ExecReload program) is not on this host" % argv[0])
            subprocess.run(argv, check=True, timeout=60)
        wait_until(lambda: "Upgrade: took over from uexec" in err_path.read_text(),
                   what="the upgrade in the log")
        log = err_path.read_text()
        assert log.index("Configuration reloaded") < log.index("Upgrade: took over"), log
        assert p.poll() is None, log
        # the same pid, now the binary at ExecStart's path, on the same listener
        assert os.readlink("/proc/%d/exe" % p.pid) == os.path.join(prefix, o["bindir"], "uexec")
        c = wsclient.connect(url)  # initialize answered by the new binary
        c.close()
    finally:
        p.terminate()
        p.communicate(timeout=60)


def test_unit_security_exposure(installed):
    sa = shutil.which("systemd-analyze")
    if not sa:
        pytest.skip("systemd-analyze is not installed")
    p = subprocess.run([sa, "security", "--offline=true", "--no-pager", installed["unit"]],
                       capture_output=True, timeout=120)
    out = (p.stdout + p.stderr).decode()
    if "--offline" in out and "nrecognized" in out:
        pytest.skip("systemd-analyze too old for --offline")
    m = re.search(r"Overall exposure level for uexec\.service: (\d+\.\d+)", out)
    assert m, out[-3000:]
    score = float(m.group(1))
    print("systemd-analyze security exposure: %.1f" % score)
    assert score <= 4.5, out


def _seccomp_refusing(name, err):
    path = ctypes.util.find_library("seccomp")
    if not path:
        pytest.skip("libseccomp is not installed")
    lib = ctypes.CDLL(path, use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    nr = lib.seccomp_syscall_resolve_name(name.encode())

    def pre():
        ctx = lib.seccomp_init(0x7fff0000)                       # SCMP_ACT_ALLOW
        if lib.seccomp_rule_add(ctx, 0x00050000 | err, nr, 0) != 0 or lib.seccomp_load(ctx) != 0:
            os._exit(99)
    return pre


@pytest.mark.parametrize("err", [errno.EPERM, errno.ENOSYS])
def test_refused_io_uring_gives_an_actionable_error(err):
    p = subprocess.run([UEXEC_BIN, "--listen", "ws://127.0.0.1:0"], capture_output=True,
                       preexec_fn=_seccomp_refusing("io_uring_setup", err), timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 1, (p.returncode, p.stderr)
    msg = p.stderr.decode()
    assert "io_uring is refused on this host" in msg, msg
    assert "--security-opt seccomp=" in msg and "kernel.io_uring_disabled" in msg, msg
    assert os.strerror(err) in msg, msg
    assert p.stdout == b""


def test_seccomp_delta_merges_into_a_docker_profile(tmp_path):
    delta = json.load(open(os.path.join(DIST, "docker", "seccomp-io_uring.json")))
    names = {n for r in delta["syscalls"] for n in r["names"]}
    assert {"io_uring_setup", "io_uring_enter", "io_uring_register"} <= names
    # a profile shaped like Docker's default: errno by default, an allow list, a
    # conditional rule that must survive untouched
    base = {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
            "syscalls": [{"names": ["read", "write", "io_uring_enter"], "action": "SCMP_ACT_ALLOW"},
                         {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38,
                          "excludes": {"caps": ["CAP_SYS_ADMIN"]}}]}
    (tmp_path / "default.json").write_text(json.dumps(base))
    p = subprocess.run([sys.executable, os.path.join(DIST, "docker", "seccomp-merge.py"),
                        str(tmp_path / "default.json")], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    merged = json.loads(p.stdout)
    assert merged["defaultAction"] == "SCMP_ACT_ERRNO" and merged["syscalls"][:2] == base["syscalls"]
    added = [n for r in merged["syscalls"][2:] for n in r["names"]]
    assert sorted(added) == ["io_uring_register", "io_uring_setup"]   # enter was allowed already
    assert all(r["action"] == "SCMP_ACT_ALLOW" for r in merged["syscalls"][2:])
    bad = subprocess.run([sys.executable, os.path.join(DIST, "docker", "seccomp-merge.py"),
                          os.path.join(DIST, "docker", "seccomp-io_uring.json")],
                         capture_output=True, timeout=60)
    assert bad.returncode == 1 and b"not a Docker seccomp profile" in bad.stderr
