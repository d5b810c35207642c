"""The cold-start gate end to end on the CPU: record a baseline, then catch a slowed phase.

Each step is a pytest run of its own (in this process), and every cold-start run is a fresh child
process. The fault is kernelgate's own (``KERNELGATE_SLOW_PHASE``: the child sleeps inside that
phase); the thresholds are wide because imports on a shared 2-core CI machine are noisy.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from test_samehost_e2e import SLOW_UPSAMPLE
from test_samehost_e2e import SUITE as KERNEL_SUITE

from kernelgate.machine.fingerprint import HostFingerprint

pytest.importorskip("ultralytics")

PYPROJECT = """
[tool.kernelgate]
coldstart_threshold = "100%"
coldstart_floor_ms = 2500.0
"""

SUITE = """
def test_coldstart(kernelgate):
    record = kernelgate.coldstart(
        model="yolov8n", precision="fp32", imgsz=32, scenario="empty", runs=1, prime=False
    )
    assert record.ok_runs
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--kernelgate-device=cpu", *args)


@pytest.mark.slow
def test_record_then_catch_a_slowed_cold_start_phase(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KERNELGATE_SLOW_PHASE", raising=False)
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_suite=SUITE)

    saved = run(pytester, "--kernelgate-save")
    saved.assert_outcomes(passed=1)
    assert "no trace kept" not in saved.stdout.str()  # a cold start has no trace: nothing to say
    (path,) = Path(pytester.path, "baselines").glob("cpu-*/0001_kernelgate.json")
    (bench,) = json.loads(path.read_text())["benchmarks"]
    record = bench["extra_info"]["kernelgate_coldstart"]
    assert record["benchmark"] == "coldstart-yolov8n-fp32-bs1-32-empty"
    assert set(record["median_ms"]) >= {"import_torch", "import_model", "build", "first_inference"}
    assert bench["extra_info"]["kernelgate"]["environment"]["torch"]  # the environment rides along
    assert bench["stats"]["rounds"] == 1  # pytest-benchmark timed the child process

    monkeypatch.setenv("KERNELGATE_SLOW_PHASE", "import_model:3.5")
    slowed = run(pytester, "--kernelgate-no-confirm")  # the screen alone (the judge: test_samehost_e2e)
    slowed.assert_outcomes(failed=1)
    slowed.stdout.fnmatch_lines(
        [
            "*kernelgate: cold start coldstart-yolov8n-fp32-bs1-32-empty on cpu-*: 1 phase(s)*over threshold",
            "*REGRESSED import_model (import ultralytics' DetectionModel): * -> *100 %, floor 2.5 s)",
            "*environment changed since the baseline*: KERNELGATE_SLOW_PHASE (unset) -> import_model:3.5",
            "*re-record: pytest test_suite.py::test_coldstart --kernelgate-save",
        ]
    )
    assert "REGRESSED import_torch" not in slowed.stdout.str()
    assert "could not be written" not in slowed.stdout.str()  # the kernel report skips cold starts


def git(path: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=path, check=True, capture_output=True,
    )  # fmt: skip


def base_repository(pytester: pytest.Pytester, pyproject: str, suite: str) -> None:
    """A git repository of ``suite`` (its one commit the base), ``.kernelgate/`` ignored."""
    pytester.makepyprojecttoml(pyproject)
    pytester.makepyfile(test_suite=suite)
    pytester.path.joinpath(".gitignore").write_text(".kernelgate/\n")
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "base")


def as_another_host(path: Path, cpu: str = "Another CPU", coldstarts_only: bool = False) -> None:
    """The baseline file at ``path`` as another host recorded it (its cold starts alone, or all)."""
    data = json.loads(path.read_text())
    for bench in data["benchmarks"]:
        if coldstarts_only and "kernelgate_coldstart" not in bench["extra_info"]:
            continue
        for host in bench["extra_info"]["kernelgate"]["hosts"]:
            other = replace(HostFingerprint.from_json(host), cpu=cpu)
            host.update(cpu=other.cpu, id=other.id)
    path.write_text(json.dumps(data))


# wide: a CPU start-up on the shared 2-core CI machine moves by seconds; the judge settles at round 2
JUDGED = PYPROJECT.replace("2500.0", "10000.0") + "confirm_min_rounds = 2\nconfirm_max_rounds = 2\n"


@pytest.mark.slow
def test_a_cold_start_recorded_on_another_host_is_judged_on_this_runner(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold start depends on the host more than on the code: against another host's baseline base
    and head on this runner decide, measured at the test's own time (the test's record is the head's
    runs), whatever the stored numbers say; from this runner's own baseline the screen decides as
    before."""
    monkeypatch.delenv("KERNELGATE_SLOW_PHASE", raising=False)
    # 2 runs a process: more than the screen's one against another host's baseline (checked below),
    # and as many as each process of a same-host round times (plugin/coldstart.py's JUDGE_RUNS)
    base_repository(pytester, JUDGED, SUITE.replace("runs=1", "runs=2"))
    run(pytester, "--kernelgate-save").assert_outcomes(passed=1)
    (path,) = Path(pytester.path, "baselines").glob("cpu-*/0001_kernelgate.json")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "baseline")

    here = run(pytester)  # this runner recorded it: the screen alone, 2 runs, no judge
    here.assert_outcomes(passed=1)
    assert "same-host" not in here.stdout.str()

    data = json.loads(path.read_text())
    (this_host,) = {h["id"] for b in data["benchmarks"] for h in b["extra_info"]["kernelgate"]["hosts"]}
    as_another_host(path, "Another CPU (64 cores)")  # the same baseline, as another host recorded it
    git(pytester.path, "commit", "-qam", "baseline of another host")

    judged = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-json=screen.json", "-rA"
    )  # fmt: skip
    out = judged.stdout.str()
    judged.assert_outcomes(passed=1)
    assert (
        "kernelgate: cold starts: this runner is not the host that recorded this cold start's baseline (host "
        in out
    ), out[-3000:]
    assert "Another CPU (64 cores)" in out
    # judged at the test's own time, printed as it measures (not into the test's captured output),
    # and nothing left for the session's end
    said = out.index("kernelgate: coldstart-yolov8n-fp32-bs1-32-empty: this runner is not the host")
    assert "measured on this runner at the test's own time, in turns" in out[said:]
    # base and head took turns, process by process (plugin/standby.py): the round holds both orders,
    # so its two runs a side (confirm_min_rounds = 2 here) settle it
    found = re.search(r"same-host round 1: .*cold starts [\d.]+ s in turns\), 0 suspect", out)
    assert found and found.start() > said, out[-3000:]
    assert "same-host round 2" not in out and "suspect(s) against the stored baseline" not in out
    verdict = out.index("coldstart-yolov8n-fp32-bs1-32-empty: pass: base and head agree on this runner")
    assert verdict > found.start()
    # the pass names what the judge measured: the cold start's total, stored and base -> head
    assert re.search(
        r"\n  to_steady_state: stored baseline .* -> .*; base -> head on this runner .* -> .*, limit \+.*: ",
        out[verdict:],
    ), out[verdict:]
    (bench,) = json.loads((pytester.path / "screen.json").read_text())["benchmarks"]
    # pytest-benchmark's record is the head's two runs (each a fresh process), not a run of the screen,
    # and its fixture counts as used
    assert bench["stats"]["rounds"] == 2
    assert "fixture was not used" not in out
    head = bench["extra_info"]["kernelgate_coldstart"]
    assert len(head["runs"]) == 2

    # this runner appends a round of its own (a fleet's runners each do): its runs go beside the first
    # host's, and its screen compares with them, as exact as the first host's, with no judge
    run(pytester, "--kernelgate-save", "--kernelgate-append").assert_outcomes(passed=1)
    (entry,) = json.loads(path.read_text())["benchmarks"]
    assert list(entry["extra_info"]["kernelgate_coldstart_by_host"]) == [this_host]
    own = run(pytester, "--benchmark-json=own.json")
    own.assert_outcomes(passed=1)
    out = own.stdout.str()
    assert f"kernelgate: cold starts: screened against this runner's own runs (host {this_host}" in out, out[
        -3000:
    ]
    assert "same-host" not in out and "not the host that recorded" not in out
    (bench,) = json.loads((pytester.path / "own.json").read_text())["benchmarks"]
    assert bench["stats"]["rounds"] == 2  # the screen's usual runs: it decides


# a cold start and a tiny YOLO's kernel benchmark in one suite; the head slows Upsample 30 times
MIXED = SUITE.replace("runs=1", "runs=2") + KERNEL_SUITE


@pytest.mark.slow
def test_a_cold_start_judged_at_its_test_and_a_kernel_suspect_share_one_base_checkout(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cold start of another host's baseline is judged at its own test's time; a kernel benchmark
    the head slowed is judged after the last test by the same judge: one base checkout, every
    process's log and both suspects' evidence kept, each test's outcome its verdict."""
    monkeypatch.delenv("KERNELGATE_SLOW_PHASE", raising=False)
    pyproject = (
        JUDGED.replace("confirm_max_rounds = 2", "confirm_max_rounds = 2\nlayer_threshold = \"100%\"\n"
                       "kernel_threshold = \"100%\"\ntotal_threshold = \"100%\"\nfloor_us = 300.0\n"
                       "kernel_floor_us = 300.0")
    )  # fmt: skip
    base_repository(pytester, pyproject, MIXED)
    run(pytester, "--kernelgate-save", "--benchmark-min-rounds=3").assert_outcomes(passed=2)
    (path,) = Path(pytester.path, "baselines").glob("cpu-*/0001_kernelgate.json")
    as_another_host(path, coldstarts_only=True)  # the cold start as another host recorded it
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "baseline")
    git(pytester.path, "checkout", "-q", "-b", "pr")
    pytester.makeconftest(SLOW_UPSAMPLE)
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "slower upsample")

    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-min-rounds=3", "-rA",
        "--junitxml=out.xml",
    )  # fmt: skip
    out = result.stdout.str()
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
    assert out.count("same-host judge: base ") == 1, out[-4000:]  # one base checkout for both
    cold = out.index("kernelgate: coldstart-yolov8n-fp32-bs1-32-empty: this runner is not the host")
    end = out.index("kernelgate: 1 suspect(s) against the stored baseline")
    assert cold < end  # the cold start at its test's time, the kernel suspect after the last test
    assert "kernelgate:   yolov8n-fp32-bs1-64: " in out[end:]
    assert "coldstart-yolov8n-fp32-bs1-32-empty: pass: base and head agree on this runner" in out
    # the progress line of each: the cold start's verdict is known, the kernel's waits for the end
    result.stdout.fnmatch_lines(
        [
            "kernelgate ?1/2? test_coldstart: suspect: another host*; judged on this runner: pass (*",
            "kernelgate ?2/2? test_yolo: suspect: *; judged on this runner after the last test (*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["FAILED test_suite.py::test_yolo - kernelgate: yolov8n-fp32-bs1-64: REGRESSION*"]
    )
    result.stdout.fnmatch_lines(["PASSED test_suite.py::test_coldstart"])
    logs = {p.name for p in (pytester.path / ".kernelgate" / "judge-logs").iterdir()}
    assert {"round1-base-cold.log", "round1-head-cold.log", "round1-base.log", "round1-head.log"} <= logs
    kept = json.loads((pytester.path / ".kernelgate" / "samehost.json").read_text())
    judged = {s["benchmark"]: s for s in kept["suspects"]}
    assert set(judged) == {"coldstart-yolov8n-fp32-bs1-32-empty", "yolov8n-fp32-bs1-64"}
    assert len(judged["coldstart-yolov8n-fp32-bs1-32-empty"]["head"][0]["runs_ms"]) == 2
    xml = (pytester.path / "out.xml").read_text()
    assert xml.count("<failure ") == 1 and "yolov8n-fp32-bs1-64: REGRESSION (same-host A/B, " in xml
    assert "coldstart-yolov8n-fp32-bs1-32-empty: PASS (same-host A/B, " in xml  # its verdict rides along


@pytest.mark.slow
def test_without_a_base_a_cold_start_of_another_host_takes_its_run_and_is_inconclusive(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no base can be checked out (no git repository), the cold start is not judged at its
    test's time: the screen takes its one run (the test's record) and the verdict after the last
    test is inconclusive, with the reason and the fix."""
    monkeypatch.delenv("KERNELGATE_SLOW_PHASE", raising=False)
    pytester.makepyprojecttoml(JUDGED)
    pytester.makepyfile(test_suite=SUITE.replace("runs=1", "runs=2"))
    run(pytester, "--kernelgate-save").assert_outcomes(passed=1)
    (path,) = Path(pytester.path, "baselines").glob("cpu-*/0001_kernelgate.json")
    as_another_host(path)

    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-json=screen.json", "-rA"
    )  # fmt: skip
    out = result.stdout.str()
    result.assert_outcomes(failed=1)
    assert "no base to measure against now (no git repository at " in out and "(1 run)" in out, out[-3000:]
    result.stdout.fnmatch_lines(
        ["*coldstart-yolov8n-fp32-bs1-32-empty: inconclusive: no git repository at *"]
    )
    (bench,) = json.loads((pytester.path / "screen.json").read_text())["benchmarks"]
    assert bench["stats"]["rounds"] == 1  # the screen's one run: the offset, not the verdict


# the two scenarios that differ only in the JIT cache a child starts with
TWINS = """
import pytest


@pytest.mark.parametrize("scenario", ["empty", "warm"])
def test_coldstart(kernelgate, scenario):
    record = kernelgate.coldstart(model="yolov8n", precision="fp32", imgsz=32, scenario=scenario, runs=2)
    assert record.ok_runs
"""


@pytest.mark.slow
def test_a_warm_cache_that_the_cold_twin_left_empty_is_not_measured_twice(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against another host's baseline, the warm-cache cold start is skipped once the empty-cache one
    of the same model was judged on this runner and its processes compiled nothing into their JIT
    cache (here, on the CPU, nothing at all): its children would repeat the twin's. Run alone, it is
    judged in full, as its skip says."""
    monkeypatch.delenv("KERNELGATE_SLOW_PHASE", raising=False)
    base_repository(pytester, JUDGED, TWINS)
    run(pytester, "--kernelgate-save").assert_outcomes(passed=2)
    (path,) = Path(pytester.path, "baselines").glob("cpu-*/0001_kernelgate.json")
    as_another_host(path)  # both scenarios as another host recorded them
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "baseline of another host")

    both = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kernelgate-device=cpu", "-rA")
    out = both.stdout.str()
    both.assert_outcomes(passed=1, skipped=1)
    assert both.ret == 0
    assert "coldstart-yolov8n-fp32-bs1-32-empty: pass: base and head agree on this runner" in out, out[-3000:]
    assert "coldstart-yolov8n-fp32-bs1-32-warm: this runner is not the host" not in out  # never judged
    reason = (
        "coldstart-yolov8n-fp32-bs1-32-warm: not measured: a warm cache holds nothing to reuse on this "
        "runner, so its processes would repeat those of coldstart-yolov8n-fp32-bs1-32-empty, judged just "
        "before with the same model and variables, whose 4 runs of base and head each left the CUDA JIT "
        "cache with no compiled kernel (at most 0 bytes)"
    )
    assert out.count(reason) == 2, out[-3000:]  # the skip's reason, and the kernelgate section's note
    # and its progress line says why as it goes
    both.stdout.fnmatch_lines(["kernelgate ?2/2? test_coldstart?warm?: skipped: *: not measured: a warm *"])
    assert "Run alone, this scenario is judged in full: pytest 'test_suite.py::test_coldstart[warm]'" in out
    comment = (pytester.path / ".kernelgate" / "report" / "report.md").read_text()  # the PR comment
    assert "; 1 cold start(s) passed; 1 not measured, as the repeat of another (see below)" in comment
    assert "- `coldstart-yolov8n-fp32-bs1-32-warm`: not measured: a warm cache holds nothing" in comment

    alone = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--kernelgate-device=cpu", "-rA", "test_suite.py::test_coldstart[warm]"
    )  # fmt: skip
    out = alone.stdout.str()
    alone.assert_outcomes(passed=1)
    assert "coldstart-yolov8n-fp32-bs1-32-warm: pass: base and head agree on this runner" in out, out[-3000:]
