#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when docs/ARCHITECTURE.md's code map and the source tree disagree.

Every source file under base/, src/, proto/, uring/ and sandbox/ must be named in the
file table of the code map, and every file the table names must exist. Names
are written as in the table: `dir/name.c`, `dir/name.[ch]` (both), or
`dir/name.{h,cc}`; a later name in the same cell may drop the directory
(`src/fs/rpc-fs-tree.c`, `fs-tree.h`).

usage: codemap.py SOURCE_ROOT
"""
import os
import re
import sys

DIRS = ("base", "src", "proto", "uring", "sandbox")
EXTS = (".c", ".h", ".cc")


def tree_files(root):
    found = set()
    for top in DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith(EXTS):
                    found.add(os.path.relpath(os.path.join(dirpath, n), root))
    return found


def expand(name):
    m = re.fullmatch(r"(.*)\.\[ch\]", name)
    if m:
        return [m.group(1) + ".c", m.group(1) + ".h"]
    m = re.fullmatch(r"(.*)\.\{([a-z,]+)\}", name)
    if m:
        return [m.group(1) + "." + e for e in m.group(2).split(",")]
    return [name]


def doc_files(text):
    named = set()
    section = text.split("Every file, by folder", 1)
    if len(section) != 2:
        return None
    table = section[1].split("\n", 1)[1].lstrip("\n").split("\n\n", 1)[0]
    for line in table.splitlines():
        if not line.startswith("| `"):
            continue
        cell = line.split("|")[1]
        folder = None
        for name in re.findall(r"`([^`]+)`", cell):
            if "/" in name:
                folder = os.path.dirname(name)
            elif folder:
                name = folder + "/" + name
            named.update(expand(name))
    return named


def main(root):
    with open(os.path.join(root, "docs", "ARCHITECTURE.md")) as f:
        named = doc_files(f.read())
    print("1..2")
    if named is None:
        print("not ok 1 - docs/ARCHITECTURE.md has no 'Every file, by folder' table")
        print("not ok 2 - # SKIP no table")
        return 1
    tree = tree_files(root)
    missing = sorted(tree - named)
    stale = sorted(named - tree)
    status = 0
    if missing:
        print("not ok 1 - source files the code map does not name")
        for m in missing:
            print("# " + m)
        status = 1
    else:
        print("ok 1 - the code map names all %d source files" % len(tree))
    if stale:
        print("not ok 2 - the code map names files that do not exist")
        for m in stale:
            print("# " + m)
        status = 1
    else:
        print("ok 2 - every file the code map names exists")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
