"""``kernelgate report BASE.json CURRENT.json --out DIR``: the same reports from two files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_data import BASE, SLOWED

from kernelgate.baseline.names import safe_name
from kernelgate.baseline.store import load
from kernelgate.cli import main
from kernelgate.report import publish


def test_report_of_the_real_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(BASE), str(SLOWED), "--out", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"report: {tmp_path}/report.md (PR comment)" in out
    assert "the baseline has no stored trace" in out
    assert json.loads((tmp_path / "report.json").read_text())["failed"] is True
    golden = (Path(__file__).parent / "data/golden/report.md").read_text()
    assert (tmp_path / "report.md").read_text().splitlines()[:12] == golden.splitlines()[:12]


def test_history_files_and_no_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "history"
    history.mkdir()
    (history / "2026-11-20-abc1234.json").write_text(BASE.read_text())
    (history / "broken.json").write_text("{")
    assert (
        main(["report", str(BASE), str(BASE), "--out", str(tmp_path / "r"), "--history", str(history)]) == 0
    )
    out = capsys.readouterr().out
    assert "history: skipped" in out and "broken.json: not valid JSON" in out
    assert "2026-11-20 abc1234" in (tmp_path / "r" / "report.html").read_text()


def test_unreadable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "missing.json"), str(SLOWED), "--out", str(tmp_path)]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_a_broken_trace_is_noted_and_the_report_still_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "run" / "traces"
    traces.mkdir(parents=True)
    (traces / f"{safe_name('test_yolo[yolov8n-fp16-bs1-640]')}.json").write_text("{not json")
    code = main(
        ["report", str(BASE), str(SLOWED), "--out", str(tmp_path / "r"), "--traces", str(tmp_path / "run")]
    )
    assert code == 1
    out = capsys.readouterr().out
    assert "the current trace" in out and "was not copied" in out
    assert (tmp_path / "r" / "report.html").is_file()


def test_report_prints_the_verdict_headline_first_and_exits_with_the_verdicts_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(BASE), str(SLOWED), "--out", str(tmp_path / "a")]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert (
        first
        == "❌ kernelgate: 1 layer slower in yolov8n-fp16-bs1-640 on sm90-nvidia-h200: +99.8 % model.2 C2f"
    )
    markdown = (tmp_path / "a" / "report.md").read_text().splitlines()[1]
    assert markdown == f"### {first}".replace("model.2", "`model.2`")
    assert main(["report", str(BASE), str(BASE), "--out", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "✅ kernelgate: no regression in 1 benchmark(s) on sm90-nvidia-h200 (total GPU time +0.0 % to +0.0 %)"
    )


def test_history_is_ordered_by_commit_time_also_across_the_old_names(tmp_path: Path) -> None:
    """gate.yml names older baselines <commit time>-<hash> (%ct-%h); before, <commit date>-<hash>,
    and a name order put a new name (1795…) before an old one (2026-…)."""
    for name in ("1795600000-bbb2222", "2026-11-20-aaa1111", "1795500000-ccc3333", "notes"):
        (tmp_path / f"{name}.json").write_text(BASE.read_text())
    fullname = next(iter(load(BASE)))
    history, notes = publish.load_history(tmp_path, [fullname])
    assert [label for label, _ in history[fullname]] == [
        "2026-11-20 aaa1111",
        "2026-11-24 06:00 ccc3333",
        "2026-11-25 09:46 bbb2222",
        "notes",
    ]
    assert notes == []
