"""``kernelgate report BASE.json CURRENT.json --out DIR``: the same reports from two files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_data import BASE, SLOWED

from kernelgate.baseline.names import safe_name
from kernelgate.cli import main


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
    assert "2026-11-20-abc1234" in (tmp_path / "r" / "report.html").read_text()


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
