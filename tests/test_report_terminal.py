"""The terminal summary of a pytest run: the regressions table, then where the full reports are."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from real_data import GOLDEN, check_golden, slowed_item

from kernelgate.config import GateConfig
from kernelgate.measure.results import Measurement
from kernelgate.report import publish
from kernelgate.report import terminal as report
from kernelgate.verdict.compare import Comparison, compare


def test_terminal_summary_golden(tmp_path: Path) -> None:
    item = slowed_item()
    published = publish.publish([item], tmp_path / "report")
    lines = published.lines(lambda p: str(p.relative_to(tmp_path)))
    measured = {item.current.benchmark: item.current}
    text = report.summary_table([item.comparison], measurements=measured) + "\n".join(lines) + "\n"
    check_golden(GOLDEN / "terminal_summary_with_reports.txt", text)
    assert (tmp_path / "report" / "report.md").is_file()


def test_redacted_reports_keep_real_names_in_the_terminal(tmp_path: Path) -> None:
    item = slowed_item()
    publish.publish([item], tmp_path, redact=True)
    assert "model.2" in report.summary_table([item.comparison])
    assert "model.2" not in (tmp_path / "report.md").read_text()


def two_benchmarks() -> tuple[list[Comparison], dict[str, Measurement]]:
    """The real H200 regression (yolov8n fp16, model.2 run twice) and the same baseline against
    itself under another name: one failing and one passing benchmark."""
    item = slowed_item()
    same = compare(item.base, item.base, GateConfig())
    passing = dataclasses.replace(same, benchmark="yolov8n-fp16-bs1-640-graph")
    graph = dataclasses.replace(item.base, benchmark=passing.benchmark)
    measured = {item.current.benchmark: item.current, passing.benchmark: graph}
    return [item.comparison, passing], measured


@pytest.mark.parametrize("quiet", [False, True], ids=["default", "q"])
@pytest.mark.parametrize("width", [80, 160])
def test_the_summary_fits_the_terminal_golden(width: int, quiet: bool) -> None:
    """A terminal of 80 or 160 columns, with and without -q: every line fits; -q keeps only what
    failed and drops the time split. Regenerate with KERNELGATE_UPDATE_GOLDEN=1."""
    comparisons, measured = two_benchmarks()
    text = report.summary_table(comparisons, width, measured, quiet=quiet)
    check_golden(GOLDEN / f"terminal_{width}{'_q' if quiet else ''}.txt", text)
    table = text.split("where the time goes")[0]
    assert max(len(line) for line in table.splitlines()) <= width
    assert ("yolov8n-fp16-bs1-640-graph" in text) == (not quiet)
    assert ("where the time goes" in text) == (not quiet)
    assert "\x1b[" not in text  # no colour unless asked
    passed = report.summary_table(comparisons[1:], width, measured, quiet=quiet)
    assert (passed == "kernelgate: 1 benchmark(s) compared, none failed\n") == quiet


def test_a_log_gets_each_row_on_one_line_and_a_terminal_gets_colour() -> None:
    comparisons, measured = two_benchmarks()
    log = report.summary_table(comparisons, report.UNWRAPPED, measured)
    rows = [line for line in log.splitlines() if "│ yolov8n-fp16-bs1-640 " in line]
    assert len(rows) >= 2 and all("regressed" in row for row in rows)  # total, model.2, ...: greppable
    assert "\x1b[" not in log
    coloured = report.summary_table(comparisons, 80, measured, color=True)
    assert "\x1b[1;31mregressed\x1b[0m" in coloured and "\x1b[32munchanged\x1b[0m" in coloured


def test_a_progress_line_names_the_test_its_verdict_and_the_time() -> None:
    line = report.progress_line(3, 36, "test_yolo[yolov8n-fp16-bs1-640]", 12.34, 41.2, "pass")
    assert line == "kernelgate [3/36] test_yolo[yolov8n-fp16-bs1-640]: pass (12.3 s; 41 s so far)"


def test_a_passing_cold_start_has_its_row_launch_to_steady_state() -> None:
    """A cold start has no kernel total: its row in the summary is its launch-to-steady-state phase
    (before, a run of passing cold starts alone printed a table with no row)."""
    from test_coldstart import cold

    from kernelgate.coldstart.verdict import compare_scenario

    comparison = compare_scenario(cold(), cold(), GateConfig())
    assert not comparison.failed
    text = report.summary_table([comparison], width=200)
    (row,) = [line for line in text.splitlines() if comparison.benchmark in line]
    assert "to_steady_state" in row and "unchanged" in row
