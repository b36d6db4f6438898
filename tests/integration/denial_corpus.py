# SPDX-License-Identifier: MIT
"""A labelled corpus of sandboxed commands for sandboxDenied (issue 14).

Each case runs as `/bin/bash -c SCRIPT` in a workspace-write sandbox (root
read, the workspace written, network restricted; `policy()` in
test_denial_evidence.py). Labels hold by construction:

  denied=True   the command fails because the sandbox refused something
                (whatever it prints, even nothing);
  denied=False  it fails (or succeeds) for a reason of its own, often
                printing the heuristic's words.

`klass` says which mechanism refuses, so a table can show what each evidence
source can see: "seccomp" and "landlock" leave audit records, "mount"
(EROFS/EXDEV from the read-only bind mounts) leaves none, "unix-connect"
(seccomp refuses every connect() with the network restricted; libc's nscd
probe makes such records in nearly every process, so they are listed but not
decisive), "none" is not a denial. The script runs from the workspace ($PWD); {ws} is its path and
{abstract} an abstract unix socket name the test listens on outside.
"""
from collections import namedtuple

Case = namedtuple("Case", "name script denied klass")

PY = "/usr/bin/python3 -c "


def _py(code):
    return PY + "'" + code + "'"


SOCK = "import socket; "
CASES = [
    # ---- writes outside the workspace: read-only mounts (EROFS, no LSM record) ----
    Case("touch-etc", "touch /etc/uexec-ev-x", True, "mount"),
    Case("touch-etc-quiet", "touch /etc/uexec-ev-x 2>/dev/null", True, "mount"),
    Case("redirect-usr", "echo hi > /usr/uexec-ev-x", True, "mount"),
    Case("redirect-usr-quiet", "echo hi 2>/dev/null > /usr/uexec-ev-x || exit 1", True, "mount"),
    Case("mkdir-opt", "mkdir /opt/uexec-ev-dir", True, "mount"),
    Case("rm-etc", "rm -f /etc/hostname", True, "mount"),
    Case("git-config", "mkdir -p .git 2>/dev/null; echo x >> .git/config", True, "mount"),
    Case("git-hook-quiet", "printf x > .git/hooks-uexec 2>/dev/null", True, "mount"),
    Case("mv-out", "echo a > a && mv a /var/uexec-ev-a", True, "mount"),
    Case("ln-out", "echo a > b && ln b /etc/uexec-ev-b", True, "mount"),
    Case("python-write-swallowed",
         _py("import sys\ntry:\n open(\"/etc/uexec-ev\",\"w\")\nexcept OSError:\n sys.exit(3)"),
         True, "mount"),
    Case("chmod-etc", "chmod 644 /etc/hostname", True, "mount"),
    # ---- network and socket families (seccomp, restricted network) ----
    Case("py-inet", _py(SOCK + "socket.socket()"), True, "seccomp"),
    Case("py-inet-quiet", _py(SOCK + "socket.socket()") + " 2>/dev/null", True, "seccomp"),
    Case("py-inet6", _py(SOCK + "socket.socket(socket.AF_INET6)"), True, "seccomp"),
    Case("py-udp", _py(SOCK + "socket.socket(type=socket.SOCK_DGRAM)"), True, "seccomp"),
    Case("py-netlink", _py(SOCK + "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)"),
         True, "seccomp"),
    Case("py-packet", _py(SOCK + "socket.socket(socket.AF_PACKET, socket.SOCK_RAW)"),
         True, "seccomp"),
    Case("py-vsock", _py(SOCK + "socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)"),
         True, "seccomp"),
    Case("bash-dev-tcp", "echo x > /dev/tcp/127.0.0.1/9", True, "seccomp"),
    Case("bash-dev-tcp-quiet", "exec 3<>/dev/tcp/127.0.0.1/9 2>/dev/null", True, "seccomp"),
    Case("py-unreachable-msg",
         _py("import socket,sys\ntry:\n socket.create_connection((\"10.0.0.1\",80),1)\n"
             "except OSError:\n print(\"Network is unreachable\"); sys.exit(7)"),
         True, "seccomp"),
    # ---- other always-denied calls (seccomp) ----
    Case("io-uring", _py("import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
                         "p=ctypes.create_string_buffer(120); "
                         "sys.exit(1 if l.syscall(425,4,p)<0 else 0)"), True, "seccomp"),
    Case("ptrace-attach", _py("import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
                              "sys.exit(1 if l.ptrace(16,1,0,0)<0 else 0)"), True, "seccomp"),
    Case("chmod-setuid", "echo a > s && chmod u+s s", True, "seccomp"),
    Case("chmod-setgid-quiet", "echo a > g && chmod g+s g 2>/dev/null", True, "seccomp"),
    Case("mount-tmpfs", _py("import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
                            "sys.exit(1 if l.mount(b\"x\",b\"/mnt\",b\"tmpfs\",0,None)<0 else 0)"),
         True, "seccomp"),
    Case("keyctl", _py("import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
                       "sys.exit(2 if l.syscall(250,0,0,0,0)<0 else 0)"), True, "seccomp"),
    Case("bpf-call", _py("import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
                         "sys.exit(4 if l.syscall(321,0,0,0)<0 else 0)"), True, "seccomp"),
    Case("setpriority-other", _py("import os; os.setpriority(os.PRIO_PROCESS, 1, 5)"),
         True, "seccomp"),
    # ---- Landlock (scoping) ----
    Case("kill-init", "kill -TERM 1", True, "landlock"),
    Case("kill-init-quiet", "kill -0 1 2>/dev/null", True, "landlock"),
    Case("abstract-connect", _py("import socket; s=socket.socket(socket.AF_UNIX); "
                                 "s.connect(\"\\0{abstract}\")"), True, "unix-connect"),
    # ---- denials inside a forked grandchild ----
    Case("grandchild-inet", "( sh -c \"" + PY + "'import socket; socket.socket()' 2>/dev/null\" & );"
         " sleep 0.3; exit 1", True, "seccomp"),
    Case("grandchild-write", "( sh -c 'touch /etc/uexec-ev-gc 2>/dev/null' & ); sleep 0.3; exit 1",
         True, "mount"),
    Case("grandchild-setuid", "sh -c 'sh -c \"echo a > t; chmod 4755 t\"'", True, "seccomp"),
    Case("daemonized-inet", "setsid sh -c \"" + PY + "'import socket; socket.socket()'"
         " 2>/dev/null\" & sleep 0.3; exit 1", True, "seccomp"),
    # ---- not denials, printing the heuristic's words ----
    Case("echo-permission-denied", "echo 'permission denied' >&2; exit 1", False, "none"),
    Case("echo-operation-not-permitted", "echo 'Operation not permitted'; exit 1", False, "none"),
    Case("echo-sandbox", "echo 'sandbox setup failed'; exit 3", False, "none"),
    Case("echo-seccomp-test", "echo 'FAILED test_seccomp_filter'; exit 1", False, "none"),
    Case("echo-landlock", "echo 'landlock: not supported here'; exit 4", False, "none"),
    Case("grep-sandbox-missing", "grep -r sandbox /nonexistent-uexec", False, "none"),
    Case("grep-log", "printf 'sandbox: permission denied\\n' > log; grep -c denied log; exit 1",
         False, "none"),
    Case("failed-to-write-text", "echo 'failed to write file: disk quota'; exit 1", False, "none"),
    Case("chmod000-read", "echo a > m && chmod 000 m && cat m", False, "none"),
    Case("sigsys-self", "kill -SYS $$", False, "none"),
    Case("sigsys-handled", _py("import os,signal,sys; signal.signal(signal.SIGSYS, "
                               "lambda *a: sys.exit(5)); os.kill(os.getpid(), signal.SIGSYS)"),
         False, "none"),
    # ---- plain failures and successes ----
    Case("false", "false", False, "none"),
    Case("exit-3", "exit 3", False, "none"),
    Case("ls-missing", "ls /nonexistent-uexec", False, "none"),
    Case("cat-missing", "cat missing-file", False, "none"),
    Case("python-error", _py("raise SystemExit(\"bad input\")"), False, "none"),
    Case("command-not-found", "no-such-command-uexec", False, "none"),
    Case("write-in-workspace-then-fail", "echo a > ok.txt && test -s ok.txt && exit 1", False, "none"),
    Case("mkdir-workspace-exists", "mkdir d1 && mkdir d1", False, "none"),
    Case("true", "true", False, "none"),
    Case("ls-root-dir", "ls / > /dev/null", False, "none"),
    Case("unix-socketpair", _py("import socket; socket.socketpair()"), False, "none"),
    Case("read-etc", "cat /etc/hostname > /dev/null; exit 2", False, "none"),
    # ---- a denial, then success: not a failed command ----
    Case("denied-but-exit-0", "touch /etc/uexec-ev-y 2>/dev/null; true", False, "none"),
    Case("inet-denied-but-exit-0", _py(SOCK + "socket.socket()") + " 2>/dev/null; exit 0", False,
         "none"),
]

assert len(CASES) >= 60, len(CASES)
assert len({c.name for c in CASES}) == len(CASES)
