"""The Markdown report (PR comment, job summary): golden output on the real H200 regression, and rules."""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path

from factories import dist, measurement
from real_data import BASE as BASE_FILE
from real_data import GOLDEN, YOLOV8N_GROUPS, check_golden, entry, slowed_diff

from kernelgate.config import GateConfig, Scope
from kernelgate.report import markdown as report_markdown
from kernelgate.verdict import diff
from kernelgate.verdict.compare import Verdict, compare

DOCS = Path(__file__).parent.parent / "docs"


def test_real_regression_golden() -> None:
    check_golden(GOLDEN / "report.md", report_markdown.render([slowed_diff()]))


def test_docs_example_is_this_output() -> None:
    """docs/example-report.md is the report of the real regression, as the code renders it now."""
    check_golden(DOCS / "example-report.md", report_markdown.render([slowed_diff()]))


def test_first_lines_are_the_marker_and_the_verdict() -> None:
    lines = report_markdown.render([slowed_diff()]).splitlines()
    assert lines[0] == report_markdown.MARKER
    assert lines[1] == (
        "### ❌ kernelgate: 1 layer slower in yolov8n-fp16-bs1-640 on sm90-nvidia-h200: +99.8 % `model.2` C2f"
    )


def test_sections_hints_and_environment() -> None:
    text = report_markdown.render([slowed_diff()])
    assert (
        "| 🔴 | `model.2` C2f | 100.4 µs | 200.6 µs | **+99.8 %**<br>+100.2 µs | 2.5 % / 0.5 µs | p < 0.001 |"
        in text
    )
    assert "more launches: all 26 kernels of the layer ran 2 times as often per iteration (1 → 2)" in text
    assert "host overhead grew: host overhead (wall - GPU busy) grew 2.808 ms → 3.136 ms (+11.7 %)" in text
    assert "<summary>Layers not over threshold: 23 unchanged</summary>" in text
    assert (
        "<summary>Environment unchanged: GPU NVIDIA H200, driver 580.159.04, CUDA 13.0, cuDNN 9.19.0" in text
    )
    # layer groups, kernels, unchanged, environment
    assert text.count("<details>") == text.count("</details>") == 4


def _passing_diff(name: str, total: float) -> diff.BenchmarkDiff:
    base = measurement({"model.0": 100.0}, benchmark=name)
    current = measurement({"model.0": 100.0}, total=total, benchmark=name)
    return diff.build(compare(base, current, GateConfig()), base, current)


def test_verdict_line_when_everything_passes() -> None:
    diffs = [_passing_diff("a", 101.0), _passing_diff("b", 99.0)]
    assert report_markdown.verdict_line(diffs) == (
        "kernelgate: no regression in 2 benchmark(s) on sm90-nvidia-h200 (total GPU time -1.0 % to +1.0 %)"
    )
    text = report_markdown.render(diffs)
    assert text.splitlines()[1].startswith("### ✅ kernelgate: no regression")
    assert "<summary>✅ 2 benchmark(s) passed</summary>" in text


def test_verdict_line_names_the_benchmark_of_each_layer_when_several_failed() -> None:
    diffs = [slowed_diff(), dataclasses.replace(slowed_diff(), comparison=_renamed("other-bench"))]
    line = report_markdown.verdict_line(diffs)
    assert line.startswith("kernelgate: 2 layers slower in 2 of 2 benchmarks on sm90-nvidia-h200: ")
    assert "+99.8 % `model.2` C2f (other-bench)" in line


def _renamed(name: str) -> object:
    return dataclasses.replace(slowed_diff().comparison, benchmark=name)


class FutureVerdict(enum.Enum):
    """A verdict compare.py may add later (statistical rule): rendered by its value."""

    AMBIGUOUS = "ambiguous"


def test_unknown_verdicts_render_by_value_and_p_values_show() -> None:
    base = measurement({"model.0": 100.0, "model.1": 50.0})
    current = measurement({"model.0": 130.0, "model.1": 50.0})
    comparison = compare(base, current, GateConfig())
    deltas = tuple(
        dataclasses.replace(d, p_value=0.0123)
        if d.name == "model.0"
        else dataclasses.replace(d, verdict=FutureVerdict.AMBIGUOUS)  # type: ignore[arg-type]
        if d.name == "model.1"
        else d
        for d in comparison.deltas
    )
    comparison = dataclasses.replace(comparison, deltas=deltas)
    text = report_markdown.render([diff.build(comparison, base, current)])
    assert "| p = 0.012 |" in text
    assert "| `model.1` Conv | 50.0 µs | 50.0 µs | +0.0 % | 2.5 % / 0.5 µs | — | ambiguous |" in text


def test_an_unknown_failing_verdict_fails_the_report() -> None:
    base = measurement({"model.0": 100.0})
    comparison = compare(base, base, GateConfig())
    deltas = tuple(
        dataclasses.replace(d, verdict=FutureVerdict.AMBIGUOUS) if d.scope is Scope.LAYER else d  # type: ignore[arg-type]
        for d in comparison.deltas
    )
    comparison = dataclasses.replace(
        comparison,
        deltas=deltas,
        fail_on=frozenset({Verdict.REGRESSED, FutureVerdict.AMBIGUOUS}),  # type: ignore[arg-type]
    )
    text = report_markdown.render([diff.build(comparison, base, base)])
    assert text.splitlines()[1].startswith("### ❌ kernelgate: 1 layer slower")
    assert "| 🔴 | `model.0` Conv |" in text


def test_names_with_pipes_and_backticks_stay_in_their_cell() -> None:
    assert report_markdown.code("a|b") == "`a\\|b`"
    assert report_markdown.code("x`y") == "`` x`y ``"
    assert report_markdown.plain("C2f<|>") == "C2f\\<\\|\\>"


def test_a_report_over_the_comment_limit_is_shortened() -> None:
    full = report_markdown.render([slowed_diff()])
    short = report_markdown.render([slowed_diff()], limit=len(full) - 1)
    assert len(short) < len(full)
    assert "Shortened to fit a comment" in short
    assert "Kernels of" not in short and "not over threshold" not in short
    tiny = report_markdown.render([slowed_diff()], limit=1000)
    assert len(tiny) <= 1000 and tiny.endswith("_Cut at GitHub's comment size: see report.md._\n")


def test_a_changed_environment_is_shown_outside_the_details() -> None:
    base = entry(BASE_FILE).measurement
    current = dataclasses.replace(
        base, environment={**base.environment, "torch": "2.12.0+cu130", "cudnn": "91000"}
    )
    text = report_markdown.render([diff.build(compare(base, current, GateConfig()), base, current)])
    assert "⚠️ **Environment changed:** cuDNN 9.19.0 → 9.10.0, torch 2.11.0+cu130 → 2.12.0+cu130" in text


def test_where_the_time_goes_stands_under_the_total() -> None:
    lines = report_markdown.render([slowed_diff()]).splitlines()
    total = next(i for i, line in enumerate(lines) if line.startswith("Total GPU time per forward"))
    assert lines[total + 2] == (
        "Where the time goes: wall 4.410 ms = GPU busy 1.274 ms (29 %) + host 3.136 ms → launch-bound "
        "(baseline: GPU busy 29 % of 3.982 ms, launch-bound)."
    )


def test_passing_benchmarks_show_where_the_time_goes_and_their_groups() -> None:
    base = entry(BASE_FILE).measurement
    grouped = dataclasses.replace(base, groups=YOLOV8N_GROUPS)
    eager = diff.build(compare(grouped, grouped, GateConfig()), grouped, grouped)
    old = dataclasses.replace(base, benchmark="old-record", wall=dist(1200.0, base.busy.n))  # no groups
    graph = diff.build(compare(old, old, GateConfig()), old, old)
    text = report_markdown.render([eager, graph])
    assert (
        "| yolov8n-fp16-bs1-640 | 1.174 ms | 1.174 ms | +0.0 % | GPU busy 29 % of 3.982 ms, launch-bound |"
        in (text)
    )
    assert "| old-record | 1.174 ms | 1.174 ms | +0.0 % | GPU busy 98 % of 1.200 ms, GPU-bound |" in text
    assert "| benchmark | backbone | neck | head | preprocess | model |" in text
    assert (
        "| yolov8n-fp16-bs1-640 | 540.0 µs (+0.0 %) | 281.3 µs (+0.0 %) | 305.6 µs (+0.0 %) | "
        "46.8 µs (+0.0 %) | — |" in text
    )
    assert "| old-record | — | — | — | 46.8 µs (+0.0 %) | 1.127 ms (+0.0 %) |" in text


def test_a_cpu_run_reads_cpu_ops_and_overhead_bound() -> None:
    d = slowed_diff()
    cpu_base, cpu_current = (dataclasses.replace(m, device="cpu") for m in (d.base, d.current))
    text = report_markdown.render([diff.build(d.comparison, cpu_base, cpu_current)])
    assert "= CPU ops 1.274 ms (29 %) + host 3.136 ms → overhead-bound" in text
    assert "<summary>CPU op time per layer group: backbone +18.6 %" in text
    assert "GPU busy" not in text and "launch-bound" not in text


def test_an_inconclusive_benchmark_is_said_in_the_headline_never_as_a_pass() -> None:
    from kernelgate.verdict.reported import merged
    from kernelgate.verdict.samehost import unsettled

    base = measurement({"model.0": 100.0, "model.1": 50.0}, benchmark="doubt")
    current = measurement({"model.0": 150.0, "model.1": 50.0}, benchmark="doubt")
    screen = compare(base, current, GateConfig())
    judged = merged(screen, unsettled("doubt", "no git repository at /x: the base cannot be checked out"))
    diffs = [diff.build(judged, base, current), _passing_diff("fine", 100.0)]
    line = report_markdown.verdict_line(diffs)
    assert line.startswith("kernelgate: no regression in 2 benchmark(s) on sm90-nvidia-h200")
    assert line.endswith("; 1 inconclusive (not settled on this runner: doubt)")
    text = report_markdown.render(diffs)
    assert text.splitlines()[1].startswith("### ❌ kernelgate:")  # fails by default: on_inconclusive
    assert "inconclusive" in text
