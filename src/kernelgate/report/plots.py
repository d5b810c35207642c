"""Plots of a benchmark diff as inline SVG, drawn with matplotlib: no JavaScript, nothing fetched.

matplotlib's object API (``Figure``) is used without pyplot, so no GUI backend or global figure
state is touched. Text stays text in the SVG (``svg.fonttype = none``): smaller files, searchable
names, and redaction that a test can check. Hash salt and date are fixed, so the output is stable.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

from kernelgate.report.labels import device_time, pct, signed_us

if TYPE_CHECKING:
    from kernelgate.verdict.diff import BenchmarkDiff, LayerDiff

RED, GREEN, GREY, INK, BAND = "#cf222e", "#1a7f37", "#8c959f", "#57606a", "#eaeef2"
RC: Any = {  # matplotlib types rc keys as literals; these are all valid
    "svg.fonttype": "none",
    "svg.hashsalt": "kernelgate",
    "font.size": 8.5,
    "font.family": "sans-serif",
    "axes.spines.top": False,
    "axes.spines.right": False,
}
TOP_CONTRIBUTORS = 8
HISTORY_PANELS = 6


def _svg(fig: Any) -> str:
    buffer = io.StringIO()
    # the figures are laid out by matplotlib's constrained layout: no second "tight" pass (half
    # of the time of a report's plots)
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _color(layer: LayerDiff) -> str:
    if layer.failing:
        return RED
    return GREEN if layer.delta.verdict.value == "improved" else GREY


def _label(layer: LayerDiff) -> str:
    return f"{layer.delta.name} {layer.type}".strip()


def layer_deltas(diff: BenchmarkDiff) -> str:
    """One bar per layer: the change of its median GPU (CPU) time, with its threshold marked (|)."""
    import matplotlib

    rows = diff.layers
    with matplotlib.rc_context(RC):
        fig = _figure(7.5, 0.8 + 0.22 * len(rows))
        ax = fig.add_subplot()
        ys = list(range(len(rows)))
        values = [lay.delta.delta_us for lay in rows]
        limits = [lay.delta.threshold.limit_us(lay.delta.baseline_us or 0.0) for lay in rows]
        ax.barh(ys, [2 * v for v in limits], left=[-v for v in limits], color=BAND, height=0.9, zorder=0)
        ax.barh(ys, values, color=[_color(lay) for lay in rows], height=0.6, zorder=2)
        for y, lay, limit in zip(ys, rows, limits, strict=True):
            value = lay.delta.delta_us
            ax.annotate(
                pct(lay.delta.delta_pct),
                (max(value, limit) if value >= 0 else min(value, -limit), y),
                xytext=(4 if value >= 0 else -4, 0),
                textcoords="offset points",
                ha="left" if value >= 0 else "right",
                va="center",
                fontsize=7,
                color=INK,
            )
        ax.set_yticks(ys, [_label(lay) for lay in rows])
        ax.invert_yaxis()
        ax.axvline(0, color=INK, linewidth=0.8)
        span = max([abs(v) for v in values + limits] or [1.0])
        ax.set_xlim(-span * 1.35, span * 1.35)
        ax.set_xlabel(
            f"change of the layer's median {device_time(diff.arch)} per forward (µs); "
            "grey band: within threshold"
        )
        return _svg(fig)


def total_breakdown(diff: BenchmarkDiff) -> str:
    """Waterfall of the total's change: the layers that moved most, the rest, and the total."""
    import matplotlib

    ranked = sorted(diff.layers, key=lambda lay: -abs(lay.delta.delta_us))
    steps = [(_label(lay), lay.delta.delta_us, _color(lay)) for lay in ranked[:TOP_CONTRIBUTORS]]
    rest = ranked[TOP_CONTRIBUTORS:]
    if rest:
        steps.append((f"{len(rest)} other layers", sum(lay.delta.delta_us for lay in rest), GREY))
    total = diff.total.delta.delta_us
    residual = total - sum(value for _, value, _ in steps)
    if abs(residual) >= 0.05:
        steps.append(("medians don't add up", residual, GREY))
    with matplotlib.rc_context(RC):
        fig = _figure(7.5, 0.9 + 0.26 * (len(steps) + 1))
        ax = fig.add_subplot()
        running = 0.0
        for y, (_, value, color) in enumerate(steps):
            ax.barh(y, value, left=running, color=color, height=0.65)
            running += value
        y_total = len(steps)
        ax.barh(y_total, total, color=RED if diff.total.failing else INK, height=0.65)
        ax.set_yticks(
            list(range(y_total + 1)),
            [f"{name}  {signed_us(value)}" for name, value, _ in steps]
            + [f"total  {signed_us(total)} ({pct(diff.total.delta.delta_pct)})"],
        )
        ax.invert_yaxis()
        ax.axvline(0, color=INK, linewidth=0.8)
        ax.set_xlabel(f"cumulative change of the median {device_time(diff.arch)} per forward (µs)")
        return _svg(fig)


def history(diff: BenchmarkDiff) -> str:
    """Small multiples: the total and the layers that moved most, over older baselines, baseline, now."""
    import matplotlib

    points = diff.history
    ranked = sorted(diff.layers, key=lambda lay: (not lay.failing, -abs(lay.delta.delta_us)))
    series = [("total", [p.total_us for p in points], diff.total.failing)]
    series += [
        (_label(lay), [p.layers.get(lay.delta.name, math.nan) for p in points], lay.failing)
        for lay in ranked[: HISTORY_PANELS - 1]
    ]
    cols = 3
    rows = math.ceil(len(series) / cols)
    with matplotlib.rc_context(RC):
        fig = _figure(7.5, 1.9 * rows + 0.3)
        axes = fig.subplots(rows, cols, squeeze=False)
        xs = list(range(len(points)))
        for ax, (name, values, failing) in zip(axes.flat, series, strict=False):
            ax.plot(xs, values, marker="o", markersize=3, color=INK, linewidth=1)
            ax.plot(xs[-1:], values[-1:], marker="o", markersize=5, color=RED if failing else GREY)
            finite = [v for v in values if not math.isnan(v)]
            if finite:  # a flat line stays flat: at least ±5 % of its level on the y axis
                mid, half = (
                    (max(finite) + min(finite)) / 2,
                    max((max(finite) - min(finite)) / 2, 0.05 * max(finite)),
                )
                ax.set_ylim(mid - 1.15 * half, mid + 1.15 * half)
            ax.set_title(name, fontsize=8.5, loc="left")
            ax.set_xticks(xs, [p.label for p in points], rotation=30, ha="right", fontsize=6.5)
            ax.set_ylabel("µs", fontsize=7)
        for ax in list(axes.flat)[len(series) :]:
            ax.set_visible(False)
        return _svg(fig)
