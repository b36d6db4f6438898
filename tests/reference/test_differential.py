"""Differential test: every script in steps.SCRIPTS is replayed against the
reference `codex exec-server` 0.169.0 and uexec; normalised observations must be
equal step by step, except for the whitelisted known differences."""
import pytest

import steps


@pytest.mark.parametrize("script", steps.SCRIPTS, ids=[s["name"] for s in steps.SCRIPTS])
def test_differential(servers, script):
    import diffharness
    srv, work = servers
    res = diffharness.run_both(srv, work, script)
    rows = diffharness.compare(script, res["ref"], res["uexec"])
    for label, status, detail in rows:
        if status == "KNOWN":
            print("known difference in %s / %s: %s" % (script["name"], label, detail))
    failed = [(label, detail) for label, status, detail in rows if status == "FAIL"]
    assert "uexec" not in res["_crashed"], "uexec crashed (see %s)" % srv["uexec"].log
    assert not failed, "\n".join("step %r differs: %s" % f for f in failed)
