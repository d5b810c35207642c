"""The same-host judge end to end on the CPU, with a tiny YOLO in a git repository: each gate run is a
fresh pytest process, as in CI (the baseline each test records first is recorded in this process).

- a slowdown committed in the head: the screen suspects it, base and head measured on this machine
  confirm it, the run exits 1 naming the layer;
- a ``-p`` plugin that slows a layer on both sides: it reaches every child process (the plugin writes
  a line per process it is loaded in), and base and head agree;
- no git repository: no base to measure, inconclusive with the reason and the fix.

CPU op times on the 2-core CI machine are noisy, so thresholds are wide (100 %, 300 µs) and the
slowdowns large (Upsample's forward 30 times).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("ultralytics")

PYPROJECT = """
[tool.kernelgate]
layer_threshold = "100%"
kernel_threshold = "100%"
total_threshold = "100%"
floor_us = 300.0
kernel_floor_us = 300.0
confirm_min_rounds = 2
confirm_max_rounds = 2
"""

SUITE = """
def test_yolo(kernelgate):
    kernelgate.yolo(model="yolov8n", precision="fp32", batch=1, imgsz=64)
"""

# Upsample 30 times slower (its forward repeated), for every process that loads it
SLOW_UPSAMPLE = """
import os, sys
import torch

_forward = torch.nn.Upsample.forward


def _slow(self, x):
    for _ in range(30):
        _forward(self, x)
    return _forward(self, x)


torch.nn.Upsample.forward = _slow
child = any(a.startswith("--kernelgate-confirm-out") for a in sys.argv)
with open(os.environ.get("KG_LOADED", os.devnull), "a") as f:
    f.write(("child" if child else "parent") + "\\n")
"""


# a conftest.py that sets a variable at import (as ``import ultralytics`` sets OMP_NUM_THREADS): each
# process says what it found first. The judge's processes must start from the environment pytest was
# started with, not from what the parent's code set since (plugin/startenv.py)
ENV_SETTER = """
import os, sys

if "KG_LOADED" in os.environ:
    child = any(a.startswith("--kernelgate-confirm-out") for a in sys.argv)
    with open(os.environ["KG_LOADED"], "a") as f:
        found = os.environ.get("KG_SET_AT_IMPORT", "unset")
        f.write(("child" if child else "parent") + "-found:" + found + "\\n")
    os.environ["KG_SET_AT_IMPORT"] = "set"
"""


def git(path: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=path, check=True, capture_output=True,
    )  # fmt: skip


def commit(path: Path, message: str) -> None:
    git(path, "add", "-A")
    git(path, "commit", "-qm", message)


ARGS = ("-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-min-rounds=3")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*ARGS, *args)


def record(pytester: pytest.Pytester, *args: str) -> None:
    """The baseline, recorded in this process (what the tests are about runs after it): a process
    less for each test."""
    pytester.runpytest_inprocess(*ARGS, "--kernelgate-save", *args).assert_outcomes(passed=1)


@pytest.mark.slow
def test_a_committed_slowdown_is_confirmed_on_this_machine(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_suite=SUITE)
    pytester.path.joinpath(".gitignore").write_text(".kernelgate/\n")
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "base")
    record(pytester)
    commit(pytester.path, "baseline")
    git(pytester.path, "checkout", "-q", "-b", "pr")
    pytester.makeconftest(SLOW_UPSAMPLE)  # the change under review: committed in the head only
    commit(pytester.path, "slower upsample")

    result = run(pytester)
    assert result.ret == 1
    out = result.stdout.str()
    assert "same-host judge: base" in out and "(merge base of HEAD and main)" in out
    # the round line says what keeps a suspect open
    result.stdout.fnmatch_lines(["*same-host round 1: *still open: * (1 of at least 2 process(es) a side)"])
    # where a round's time went: both start-ups at once, then base, then head (head first in round 2)
    result.stdout.fnmatch_lines(["*same-host round 1: * s (start-up * s, base * s, head * s)*"])
    result.stdout.fnmatch_lines(["*same-host round 2: * s (start-up * s, head * s, base * s)*"])
    logs = pytester.path / ".kernelgate" / "judge-logs"
    assert {"round1-base.log", "round1-head.log", "round2-base.log", "round2-head.log"} <= {
        p.name for p in logs.iterdir()
    }
    assert "passed" in (logs / "round1-head.log").read_text()  # the child's own pytest output
    result.stdout.fnmatch_lines(
        ["*what the judge decided from: *samehost.json (each process's figures), *samehost-records.json.xz "
         "(every record), *judge-logs/ (each process's output)"]
    )  # fmt: skip
    result.stdout.fnmatch_lines(["*REGRESSION (same-host A/B): base -> head on this runner: *model.1*"])
    result.stdout.fnmatch_lines(["*REGRESSED model.1? Upsample:*confirmed on this runner: base * -> head *"])
    # each process's figure, round by round, in the line and in samehost.json
    each = "(each process, round by round: base * | head * µs)"
    result.stdout.fnmatch_lines([f"*REGRESSED model.1? Upsample:*{each}*"])
    assert "INCONCLUSIVE" not in out
    # two processes a side, fewer than the process test needs: the run says what that gives up
    assert "confirm_max_rounds = 2: the same-host judge measures at most 2 process(es) a side" in out
    kept = json.loads((pytester.path / ".kernelgate" / "samehost.json").read_text())
    (suspect,) = kept["suspects"]
    assert len(suspect["base"]) == len(suspect["head"]) >= 2  # confirm_min_rounds = 2 here
    assert [p["first"] for p in suspect["base"]][:2] == [True, False]  # base, head, then head, base
    assert all(p["wall_us"] > 0 and p["total_us"] > 0 and "model.1" in p["host_us"] for p in suspect["head"])
    # the records keep the screen's own measurement beside the stored baseline: a screen rule can be
    # replayed from them
    from kernelgate.measure.results import Measurement
    from kernelgate.plugin.evidence import read_records

    (records,) = read_records(pytester.path / ".kernelgate" / "samehost-records.json.xz")
    screened = Measurement.from_json(records["suspect"]["measured"])
    assert screened.benchmark == Measurement.from_json(records["suspect"]["baseline"]).benchmark
    assert screened.layer("model.1") is not None and screened.wall.n > 0


@pytest.mark.slow
def test_a_plugin_on_both_sides_reaches_every_child(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # three processes a side, as the judge's default: the process medians must bear a move out. With
    # two a side the pooled iterations decide alone, and beside the suite's other worker and a busy
    # loop this A/A failed once: host model.22 +180.0 % base -> head (2026-11-26)
    pytester.makepyprojecttoml(PYPROJECT.replace("_rounds = 2", "_rounds = 3"))
    pytester.makepyfile(test_suite=SUITE, slowplugin=SLOW_UPSAMPLE)
    pytester.makeconftest(ENV_SETTER)  # on both sides
    pytester.path.joinpath(".gitignore").write_text(".kernelgate/\n")
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "base")
    record(pytester)
    commit(pytester.path, "baseline")
    loaded = tmp_path / "loaded.txt"  # every process that loads the plugin, base and head, writes here
    monkeypatch.setenv("KG_LOADED", str(loaded))

    result = run(pytester, "-p", "slowplugin")
    lines = loaded.read_text().split()
    assert lines.count("parent") == 1
    assert lines.count("child") == 6  # 3 rounds x (base, head): the plugin was in every child
    # what the parent's conftest.py set at import reached no child: each found the environment pytest
    # started with, and set the variable again itself (base and head alike)
    assert lines.count("parent-found:unset") == 1
    assert lines.count("child-found:unset") == 6, lines
    result.stdout.fnmatch_lines(
        ["*same-host judge: this run's code changed the environment after pytest started: *"
         "KG_SET_AT_IMPORT=set (started unset)*"]
    )  # fmt: skip
    # base and head agree: not from this change. (On a GPU a device-side layer this far off the
    # baseline makes it inconclusive, tests/test_samehost.py; on a CPU every op is host work.) On a
    # loaded CPU the processes of the same code may still be too far apart to say so (host model.22
    # +167.6 % after 3 a side, the suite's other worker and a busy loop, 2026-11-26): inconclusive,
    # which fails the run; never a regression
    out = result.stdout.str()
    assert "REGRESSION" not in out and "regression:" not in out, out[-3000:]
    assert "confirm_max_rounds" not in out  # three a side: the process test decides with the pooled one
    if result.ret == 0:
        result.stdout.fnmatch_lines(["*yolov8n-fp32-bs1-64: pass: base and head agree on this runner*"])
    else:
        assert result.ret == 1, out[-3000:]
        result.stdout.fnmatch_lines(
            ["FAILED yolov8n-fp32-bs1-64: inconclusive: *after 3 process(es) per side*"]
        )


@pytest.mark.slow
def test_without_git_the_judge_is_inconclusive_and_says_why(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_suite=SUITE)
    # a baseline of 10 profiled forwards, not the CPU's default 5: with 5, one preempted baseline forward
    # left the slowed model.2 (+690 %) ambiguous at p=0.08 in a clean-clone .ci/run, 2026-11-26
    record(pytester, "--kernelgate-iterations=10")

    result = run(pytester, "--kernelgate-slow-layer=model.2:8")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*INCONCLUSIVE (same-host A/B): no git repository at *"])

    # 10 profiled forwards a side (test_report_plugin's note: one preempted forward). The screen alone
    # starts no judge: in this process, as the baseline was (a process of 6.3 CPU-s less, 2-core CI-like
    # machine, 2026-11-27)
    screen_only = pytester.runpytest_inprocess(
        *ARGS, "--kernelgate-slow-layer=model.2:8", "--kernelgate-no-confirm", "--kernelgate-iterations=10"
    )
    screen_only.assert_outcomes(failed=1)
    screen_only.stdout.fnmatch_lines(["*REGRESSED model.2 C2f:*"])
