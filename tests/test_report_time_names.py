"""A CPU run's reports speak of CPU time, a GPU run's of GPU time: terminal, Markdown, HTML, plots."""

from __future__ import annotations

import dataclasses

from real_data import slowed_item

from kernelgate.config import GateConfig
from kernelgate.report import html as report_html
from kernelgate.report import markdown as report_markdown
from kernelgate.report import plots
from kernelgate.report.terminal import failure_message
from kernelgate.verdict import diff
from kernelgate.verdict.compare import compare

CPU = "cpu-x86-64-amd-epyc"


def on_cpu() -> diff.BenchmarkDiff:
    item = slowed_item()
    base, current = (dataclasses.replace(m, arch=CPU, device="cpu") for m in (item.base, item.current))
    return diff.build(dataclasses.replace(item.comparison, arch=CPU), base, current)


def test_a_cpu_run_is_cpu_time_everywhere() -> None:
    d = on_cpu()
    message = failure_message(d.comparison, {}, "baselines/x/0001_kernelgate.json", target="t")
    assert "  total CPU time: 1.174 ms -> 1.274 ms" in message and "GPU time" not in message
    text = report_markdown.render([d])
    assert "Total CPU time per forward: 1.174 ms → 1.274 ms" in text and "GPU time" not in text
    page = report_html.render([d])
    assert "total CPU time / forward" in page and "medians of the CPU time per" in page
    assert "GPU time" not in page
    assert "median CPU time per forward" in plots.layer_deltas(d) + plots.total_breakdown(d)


def test_a_gpu_run_is_gpu_time() -> None:
    item = slowed_item()
    d = diff.build(item.comparison, item.base, item.current)
    message = failure_message(d.comparison, {}, "baselines/x/0001_kernelgate.json", target="t")
    assert "  total GPU time: 1.174 ms -> 1.274 ms" in message
    assert "total GPU time / forward" in report_html.render([d])


def test_a_passing_cpu_run_headline_says_cpu_time() -> None:
    item = slowed_item()
    base = dataclasses.replace(item.base, arch=CPU, device="cpu")
    same = diff.build(compare(base, base, GateConfig()), base, base)
    assert "(total CPU time +0.0 % to +0.0 %)" in report_markdown.verdict_line([same])
