# SPDX-License-Identifier: MIT
"""Runs one integration test file as one meson test (tests/meson.build).

usage: run.py FILE [pytest arguments...]

Each file gets a scratch directory of its own (pytest's --basetemp), made here with
mkdtemp and removed afterwards, instead of pytest's shared /tmp/pytest-of-<user>: files
run in parallel, and pytest refuses to start at all when that shared directory exists
and belongs to another uid (a CI host where something else made it), which once failed
every test of the suite at set-up. A file whose tests are all deselected (the slow
soaks without -Dslow_tests) reports meson's skip status (77) instead of pytest's
"no tests collected" (5). UEXEC_KEEP_TEST_TMP=1 keeps the directory and prints its path.
"""

import os
import shutil
import subprocess
import sys
import tempfile


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    path, extra = sys.argv[1], sys.argv[2:]
    scratch = tempfile.mkdtemp(prefix="uexec-pytest-%s-" % os.path.basename(path)[:-3])
    keep = os.environ.get("UEXEC_KEEP_TEST_TMP") == "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE",
           "--basetemp", os.path.join(scratch, "t")] + extra + [path]
    try:
        rc = subprocess.call(cmd)
    finally:
        if keep:
            print("scratch directory kept: %s" % scratch, file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 77 if rc == 5 else rc


if __name__ == "__main__":
    sys.exit(main())
