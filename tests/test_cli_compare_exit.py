"""``kernelgate compare`` and ``kernelgate report``: they exit 1 when they compared nothing (naming
the files, the counts and the command that records a baseline), pair benchmarks by id when the
node ids differ, and take the same-host judge's verdicts a run recorded in its results file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernelgate import cli, offline
from kernelgate.baseline import store as baseline
from kernelgate.verdict.compare import Verdict

DATA = Path(__file__).parent / "data"
BASE = DATA / "h200-yolov8n-fp16-baseline.json"
SLOWED = DATA / "h200-yolov8n-fp16-model2-slowed.json"
NO_CONFIG = "/nonexistent/pyproject.toml"


def edited(tmp_path: Path, source: Path, change: Callable[[dict[str, Any]], None], name: str) -> Path:
    data = json.loads(source.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def compare(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = cli.main(["compare", *args, "--config", NO_CONFIG])
    out, err = capsys.readouterr()
    return code, out + err


def no_benchmarks(data: dict[str, Any]) -> None:
    data["benchmarks"] = []


def test_an_empty_baseline_compares_nothing_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = edited(tmp_path, BASE, no_benchmarks, "empty.json")
    code, out = compare(capsys, str(empty), str(SLOWED))
    assert code == 1
    assert f"nothing was compared: 1 benchmark(s) in {SLOWED} (1 no baseline), 0 in {empty}" in out
    assert "pytest benchmarks --kernelgate-save" in out


def test_an_empty_current_file_compares_nothing_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = edited(tmp_path, SLOWED, no_benchmarks, "current.json")
    code, out = compare(capsys, str(BASE), str(empty))
    assert code == 1
    assert f"nothing was compared: 0 benchmark(s) in {empty} (it has none), 1 in {BASE}" in out


def test_a_baseline_of_another_architecture_compares_nothing_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def other_arch(data: dict[str, Any]) -> None:
        data["kernelgate"]["arch"] = "sm80-nvidia-a100"
        for bench in data["benchmarks"]:
            bench["extra_info"]["kernelgate"]["arch"] = "sm80-nvidia-a100"

    other = edited(tmp_path, BASE, other_arch, "a100.json")
    code, out = compare(capsys, str(other), str(SLOWED))
    assert code == 1
    assert "not compared: the baseline is of sm80-nvidia-a100, the current result of sm90-nvidia-h200" in out
    assert "kernelgate compare baselines/sm90-nvidia-h200/0001_kernelgate.json" in out
    assert "nothing was compared" in out


def test_benchmarks_that_match_by_id_only_are_compared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def moved(data: dict[str, Any]) -> None:  # the same suite run from another folder
        for bench in data["benchmarks"]:
            bench["fullname"] = "elsewhere/" + bench["fullname"]

    current = edited(tmp_path, SLOWED, moved, "moved.json")
    code, out = compare(capsys, str(BASE), str(current))  # a KeyError before
    assert code == 1
    assert "REGRESSED model.2 C2f" in out
    same = edited(tmp_path, BASE, moved, "same.json")
    assert compare(capsys, str(BASE), str(same)) == (0, "yolov8n-fp16-bs1-640: pass\n")


def judged(tmp_path: Path, outcome: str, against: Path = BASE) -> Path:
    """The slowed results file as a run writes it after its same-host judge found ``outcome``:
    every failing verdict of the screen turned into what the judge said."""
    base_entry = next(iter(baseline.load(against).values()))
    entry = next(iter(baseline.load(SLOWED).values()))
    from kernelgate.config import GateConfig
    from kernelgate.verdict import reported, samehost
    from kernelgate.verdict.compare import compare as compare_records

    screen = compare_records(base_entry.measurement, entry.measurement, GateConfig())
    decision = samehost.Decision(
        entry.measurement.benchmark, samehost.Outcome(outcome), "base and head agree on this runner"
    )
    merged = reported.merged(screen, decision)
    record = offline.Judged(
        merged.benchmark,
        offline.digest(base_entry.measurement.to_json()),
        decision.outcome.value,
        decision.reason,
        merged,
    )

    def add(data: dict[str, Any]) -> None:
        data["benchmarks"][0]["extra_info"][offline.JUDGE_KEY] = record.to_json()

    return edited(tmp_path, SLOWED, add, f"judged-{outcome}.json")


def test_report_and_compare_take_the_verdict_the_run_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current = judged(tmp_path, "pass")
    code, out = compare(capsys, str(BASE), str(current))
    assert code == 0, out
    assert "verdicts of the run's same-host judge: pass: base and head agree on this runner" in out
    code = cli.main(["report", str(BASE), str(current), "--out", str(tmp_path / "r"), "--config", NO_CONFIG])
    assert code == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert text.splitlines()[1].startswith("### ✅ kernelgate: no regression in 1 benchmark(s)")
    assert json.loads((tmp_path / "r" / "report.json").read_text())["failed"] is False


def test_a_recorded_verdict_against_another_baseline_is_not_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = edited(tmp_path, BASE, lambda d: d["benchmarks"][0]["stats"].update(rounds=99), "b.json")
    current = judged(tmp_path, "pass", against=SLOWED)  # judged against another baseline record
    code, out = compare(capsys, str(other), str(current))
    assert code == 1
    assert "compared afresh" in out and "REGRESSED model.2 C2f" in out


def test_an_inconclusive_recorded_verdict_fails_report_and_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current = judged(tmp_path, "inconclusive")
    code, out = compare(capsys, str(BASE), str(current))
    assert code == 1
    assert "yolov8n-fp16-bs1-640: inconclusive: " in out
    code = cli.main(["report", str(BASE), str(current), "--out", str(tmp_path / "r"), "--config", NO_CONFIG])
    assert code == 1
    text = (tmp_path / "r" / "report.md").read_text()
    assert "### ❌ kernelgate:" in text
    assert "Not settled" in text and "| inconclusive | base and head agree on this runner |" in text
    entry = next(iter(baseline.load(current).values()))
    judgement = offline.judgement_of(entry)
    assert judgement is not None
    assert {d.verdict for d in judgement.comparison.failures} == {Verdict.INCONCLUSIVE}


def test_report_of_a_file_without_baseline_says_not_compared_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = edited(tmp_path, BASE, no_benchmarks, "empty.json")
    code = cli.main(["report", str(empty), str(SLOWED), "--out", str(tmp_path / "r"), "--config", NO_CONFIG])
    assert code == 1
    text = (tmp_path / "r" / "report.md").read_text()
    assert (
        "### ❌ kernelgate: no benchmark compared; 1 not compared: yolov8n-fp16-bs1-640 (no baseline)" in text
    )
    assert "| benchmark | why | command to fix |" in text
    assert "`pytest 'benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]' --kernelgate-save`" in text
