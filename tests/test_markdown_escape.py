"""Benchmark ids and architecture keys reach the PR comment escaped: no HTML, no broken code span or
table, no new line of Markdown (report.md of one runner and the merged report of several)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from real_data import slowed_item

from kernelgate.config import GateConfig
from kernelgate.report import escape, publish
from kernelgate.report import markdown as report_markdown
from kernelgate.report import merge as report_merge
from kernelgate.verdict import diff
from kernelgate.verdict.compare import compare

HOSTILE_ID = "yolo<script>alert(1)</script>`x`|y\n# heading"
HOSTILE_ARCH = "sm90<img src=x onerror=alert(1)>|`z"


def hostile(item: publish.Item, benchmark: str, arch: str) -> publish.Item:
    def m(x):  # type: ignore[no-untyped-def]
        return dataclasses.replace(x, benchmark=benchmark, arch=arch)

    comparison = dataclasses.replace(item.comparison, benchmark=benchmark, arch=arch)
    return publish.Item(comparison, m(item.base), m(item.current))


def passing(item: publish.Item) -> publish.Item:
    return publish.Item(compare(item.base, item.base, GateConfig()), item.base, item.base)


def unescaped(line: str) -> str:
    return re.sub(r"\\.", "", line)


def assert_inert(text: str) -> None:
    """No HTML of the names, no heading of their own, every table row as wide as its header."""
    assert "<script" not in unescaped(text) and "<img" not in unescaped(text)
    assert not any(line.startswith("# heading") for line in text.splitlines())
    width = None
    for line in text.splitlines():
        if not line.startswith("|"):
            width = None
            continue
        pipes = unescaped(line).count("|")
        width = pipes if width is None else width
        assert pipes == width, line
    for line in text.splitlines():
        if "yolo" in line:  # a code span never swallows the rest of the line: ticks pair up
            assert unescaped(line).count("`") % 2 == 0, line


def test_escaping_functions() -> None:
    assert escape.plain("a<b>|c`d\ne") == "a\\<b\\>\\|c\\`d e"
    assert escape.code("x``y") == "``` x``y ```"
    assert escape.code("a|b") == "`a\\|b`"
    assert report_markdown.plain is escape.plain and report_markdown.code is escape.code


def test_a_hostile_benchmark_id_and_arch_stay_text_in_report_md() -> None:
    item = hostile(slowed_item(), HOSTILE_ID, HOSTILE_ARCH)
    other = hostile(passing(slowed_item()), HOSTILE_ID + "2", HOSTILE_ARCH)
    diffs = [diff.build(i.comparison, i.base, i.current) for i in (item, other)]
    text = report_markdown.render(diffs)
    assert_inert(text)
    headline = text.splitlines()[1]
    assert escape.plain(HOSTILE_ID) in headline and escape.plain(HOSTILE_ARCH) in headline


def test_a_hostile_arch_stays_text_in_the_merged_report(tmp_path: Path) -> None:
    folder = tmp_path / "reports" / "a" / "report"
    publish.publish([hostile(slowed_item(), HOSTILE_ID, HOSTILE_ARCH)], folder)
    merged = report_merge.merge([folder], tmp_path / "merged", expect=[HOSTILE_ARCH + "-missing"])
    text = (tmp_path / "merged" / "report.md").read_text()
    assert_inert(text)
    headline = text.splitlines()[1]
    assert escape.plain(HOSTILE_ARCH) in headline and escape.plain(HOSTILE_ARCH + "-missing") in headline
    assert HOSTILE_ARCH in merged.lines()[0]  # the terminal shows the key as it is


def test_the_not_compared_table_keeps_a_hostile_id_and_fix_in_their_cells() -> None:
    from kernelgate.report.sections import RunOutcome, not_compared_table
    from kernelgate.verdict.policy import Case, ExitDecision, Status

    case = Case("<script>x</script>|`id`", Status.NOT_COMPARED, "why", "pytest 'a|b' `x`")
    rows = not_compared_table(RunOutcome(ExitDecision(True), (case,)))
    row = next(r for r in rows if "script" in r)
    assert "<script>" not in row and "\\<script\\>" in row
    # four unescaped pipes: the row's own three cells, nothing more
    assert row.replace("\\|", "").count("|") == 4
    assert "`` pytest 'a\\|b' `x` ``" in row  # fenced past its own backticks
