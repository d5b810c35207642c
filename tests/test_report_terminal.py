"""The terminal summary of a pytest run: the regressions table, then where the full reports are."""

from __future__ import annotations

from pathlib import Path

from real_data import GOLDEN, check_golden, slowed_item

from kernelgate.report import publish
from kernelgate.report import terminal as report


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
