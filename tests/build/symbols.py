#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when the binary or a library exports a symbol without a module prefix.

uexec links libsodium, protobuf-c, libbpf, jansson, OpenSSL and toml++ (or will):
an exported name such as `decode` or `json_check` can clash with one of them,
silently, at link time. Every global symbol that the tree defines must start
with the prefix of a module listed below (ARCHITECTURE.md, "Naming"). Weak and
unique symbols (C++ template instances from toml++'s headers), the C runtime's
own symbols and reserved `__` names (sanitizer instrumentation) are not ours
and are skipped.

usage: symbols.py FILE...   (ELF executables or static archives)
"""
import re
import subprocess
import sys

PREFIXES = (
    # base, proto, uring, sandbox
    "buf_", "errmsg_", "log_", "strmap_", "base64_", "utf8_", "file_uri_", "http_", "ws_", "jrpc_",
    "jcheck_", "uring_", "sandbox_", "netguard_", "bpf_tracer_",
    # src/server, net, transport, rpc, exec, fs, env
    "server_", "worker_", "tls_", "netconn_", "conn_", "rpc_", "params_", "os_error_", "exec_", "session_",
    "proc_", "spawn_", "environ_", "snap_", "fs_", "env_", "toml_filter", "toml_module_", "netproxy_",
    # src/discovery (disc_*, discovery_*; the YAML readers skill_*)
    "disc", "skill_",
    # src/remote/codec/relay-frame.c, and the code protoc-c generates from src/remote/codec/relay.v1.proto
    # (its package codex.exec_server.relay.v1 becomes the prefix of every name).
    "relay_frame_", "codex__exec_server__relay__v1__",
    # src/remote/codec
    "mlkem768_", "noise_", "channel_", "relay_msg_", "relay_seq_", "relay_order_",
    "registry_",
    # src/remote
    "remote_",
    # src/upgrade
    "upgrade_",
)
# Defined by the C runtime and the linker in every executable.
RUNTIME = {"main", "_start", "_init", "_fini", "_edata", "_end", "__bss_start", "__data_start",
           "data_start", "__dso_handle", "_IO_stdin_used", "__TMC_END__"}
# Global, defined, strong (nm's letters): text, data, bss, read-only, small data, common.
STRONG = set("TDBRGSC")


def exported(path):
    out = subprocess.run(["nm", "-g", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in STRONG:
            yield parts[2]


def main(paths):
    bad = []
    checked = 0
    for path in paths:
        for sym in exported(path):
            checked += 1
            name = sym.split("@", 1)[0]
            # Reserved names (`__`) belong to the compiler and its sanitizer runtimes
            # (__odr_asan.*, __asan_*, __local_asan_preinit under -fsanitize=address).
            if name in RUNTIME or "@" in sym or name.startswith("__"):
                continue
            if not name.startswith(PREFIXES):
                bad.append(f"{path}: {name}")
    print(f"1..1")
    if checked == 0:
        print("not ok 1 - no exported symbol found (wrong input?)")
        return 1
    if bad:
        print("not ok 1 - symbols without a module prefix")
        for b in sorted(set(bad)):
            print(f"# {b}")
        return 1
    print(f"ok 1 - {checked} exported symbols in {len(paths)} files carry a module prefix")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
