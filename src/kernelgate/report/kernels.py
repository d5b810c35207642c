"""The kernels of a layer in the Markdown report: the few that changed most, for the table of what
failed, and every changed kernel with its launches and launch shape, for the collapsed details."""

from __future__ import annotations

from kernelgate.measure.naming import kernel_label, module_label
from kernelgate.report import labels
from kernelgate.report.escape import code, plain
from kernelgate.report.labels import pct, us
from kernelgate.verdict.compare import Verdict
from kernelgate.verdict.diff import BenchmarkDiff, LayerDiff

CELL_KERNELS = 3


def changed_cell(layer: LayerDiff) -> str:
    shown = []
    for k in layer.changed_kernels[:CELL_KERNELS]:
        module, _, name = k.name.partition(" :: ")
        extra = ""
        if (
            k.baseline_calls is not None
            and k.current_calls is not None
            and k.baseline_calls != k.current_calls
        ):
            extra = f", launches {k.baseline_calls:g} → {k.current_calls:g}"
        change = {Verdict.NEW: "new", Verdict.MISSING: "gone"}.get(k.verdict, pct(k.delta_pct))
        shown.append(
            f"{code(module_label(module, layer.delta.name))} {code(kernel_label(name))} {change}{extra}"
        )
    more = len(layer.changed_kernels) - CELL_KERNELS
    if more > 0:
        shown.append(f"and {more} more")
    return "<br>".join(shown)


def table(layer: LayerDiff, diff: BenchmarkDiff) -> list[str]:
    launch = {k.key: k.launch for k in diff.current.kernels}
    base_launch = {k.key: k.launch for k in diff.base.kernels}
    rows = [
        "| module | kernel | baseline | current | delta | launches/iter | grid · block | verdict |",
        "|---|---|--:|--:|--:|--:|---|---|",
    ]
    for k in layer.kernels:
        if k.verdict is Verdict.UNCHANGED and abs(k.delta_us) < 0.05:
            continue
        module, _, name = k.name.partition(" :: ")
        facts = launch.get(k.name) or base_launch.get(k.name) or {}
        shape = plain(f"{facts['grid']} · {facts['block']}") if facts.get("grid") else labels.DASH
        calls = f"{labels.calls(k.baseline_calls)} → {labels.calls(k.current_calls)}"
        rows.append(
            f"| {code(module_label(module, layer.delta.name))} | {code(name)} | {us(k.baseline_us)} | "
            f"{us(k.current_us)} | {pct(k.delta_pct)} | {calls} | {shape} | {labels.verdict(k.verdict)} |"
        )
    return rows
