#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Adds uexec's seccomp delta (seccomp-io_uring.json) to a Docker seccomp profile.

usage: seccomp-merge.py BASE.json [DELTA.json] > uexec-seccomp.json

BASE is the default profile of your Docker version (moby's
profiles/seccomp/default.json for that release). The result is BASE with the
delta's rules appended, minus names BASE already allows unconditionally; every
other rule of BASE is kept as it is. Then:
  docker run --security-opt seccomp=uexec-seccomp.json ...
"""
import json
import os
import sys


def allowed(profile):
    names = set()
    for rule in profile.get("syscalls", []):
        if rule.get("action") == "SCMP_ACT_ALLOW" and not rule.get("args") \
                and not rule.get("includes") and not rule.get("excludes"):
            names.update(rule.get("names", []))
    return names


def merge(base, delta):
    out = dict(base)
    have = allowed(base)
    rules = list(base.get("syscalls", []))
    for rule in delta["syscalls"]:
        names = [n for n in rule["names"] if n not in have]
        if names:
            rules.append(dict(rule, names=names))
    out["syscalls"] = rules
    return out


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    delta_path = argv[2] if len(argv) == 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "seccomp-io_uring.json")
    with open(argv[1]) as f:
        base = json.load(f)
    with open(delta_path) as f:
        delta = json.load(f)
    if "defaultAction" not in base or not isinstance(base.get("syscalls"), list):
        sys.stderr.write("%s: not a Docker seccomp profile (defaultAction, syscalls)\n" % argv[1])
        return 1
    json.dump(merge(base, delta), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
