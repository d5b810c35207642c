"""Render comparisons for people: the failure message of a test and the terminal summary."""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kernelgate.config import Scope, record_command
from kernelgate.measure import timesplit
from kernelgate.report import sections
from kernelgate.units import device_time, duration
from kernelgate.units import limit as floor_text
from kernelgate.verdict import hostside
from kernelgate.verdict.compare import Comparison, Delta, Verdict

if TYPE_CHECKING:
    from kernelgate.machine.envdiff import Change
    from kernelgate.measure.results import Measurement

KERNEL_NAME_WIDTH = 90
KERNELS_PER_LAYER = 3
#: A width no table reaches: a log that is no terminal gets each table at its natural width, one
#: line per row (greppable), never wrapped to a guessed terminal width.
UNWRAPPED = 10_000
#: Below this terminal width the summary table drops its vertical rules.
NARROW = 100
#: Colours of the verdict column on a terminal (pytest's --color, NO_COLOR and FORCE_COLOR decide).
STYLES = {
    "regressed": "bold red",
    "inconclusive": "yellow",
    "ambiguous": "yellow",
    "kernel swapped": "yellow",
    "improved": "green",
    "unchanged": "green",
    "pass": "green",
}


def short(name: str, width: int = KERNEL_NAME_WIDTH) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def us(value: float | None) -> str:
    return duration(value)


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f} %"


def rel(value: float) -> str:
    """A threshold as a percentage: 0.025 -> '2.5 %'."""
    return f"{100 * value:.3g} %"


def limit(delta: Delta) -> str:
    return f"{rel(delta.threshold.rel)}, floor {floor_text(delta.threshold.floor_us)}"


def evidence(delta: Delta) -> str:
    """Significance, noise and confirmation of a verdict, where the rule computed them."""
    parts = []
    if delta.p_value is not None:
        parts.append(f"p={delta.p_value:.1g}")
    if delta.noise_pct is not None and delta.noise_pct > 0:
        parts.append(f"round spread {delta.noise_pct:.1f} %")
    if delta.confirm_us is not None and not delta.note:
        parts.append(f"confirmed in a fresh process: {us(delta.confirm_us)}")
    if delta.note:
        parts.append(delta.note)
    return "; ".join(parts)


def _line(delta: Delta, label: str) -> str:
    extra = evidence(delta)
    return (
        f"{label}: {us(delta.baseline_us)} -> {us(delta.current_us)} "
        f"({pct(delta.delta_pct)}, {duration(delta.delta_us, signed=True)}; threshold {limit(delta)}"
        f"{'; ' + extra if extra else ''})"
    )


def _kernel_line(delta: Delta) -> str:
    if delta.verdict is Verdict.NEW:
        change = f"new, {us(delta.current_us)}"
    elif delta.verdict is Verdict.MISSING:
        change = f"gone, was {us(delta.baseline_us)}"
    else:
        change = f"{us(delta.baseline_us)} -> {us(delta.current_us)} ({pct(delta.delta_pct)}{_calls(delta)})"
    return f"      {change}  {short(delta.name)}"


def _calls(delta: Delta) -> str:
    """A hint when the kernel ran more or fewer times per iteration."""
    before, after = delta.baseline_calls, delta.current_calls
    if before is None or after is None or before == after:
        return ""
    return f", launches/iter {before:g} -> {after:g}"


def layer_label(layer: str, types: dict[str, str]) -> str:
    return f"{layer} {types.get(layer, '')}".rstrip()


def failure_message(
    comparison: Comparison,
    layer_types: dict[str, str],
    baseline_path: str,
    changes: Sequence[Change] = (),
    *,
    target: str,
) -> str:
    """The message of a failing benchmark test: what got slower, by how much, against what, and
    which environment changes (driver, torch, cuDNN, ultralytics, variables) may explain it;
    ``target`` is the test's node id, for the command that re-records it."""
    failures = comparison.failures
    layers = [d for d in failures if d.scope is Scope.LAYER]
    host = [d for d in failures if d.scope is Scope.HOST]
    lines = [
        f"kernelgate: {comparison.benchmark} on {comparison.arch}: "
        f"{len(layers)} layer(s), {len([d for d in failures if d.scope is Scope.KERNEL])} kernel(s)"
        f"{f', the host side of {len(host)} layer(s)' if host else ''}"
        f"{', the latency' if any(d.scope is Scope.WALL for d in failures) else ''}"
        f"{' and the total' if any(d.scope is Scope.TOTAL for d in failures) else ''} "
        + ("not settled on this runner" if _only_unsettled(failures) else "over threshold")
    ]
    where = hostside.side(comparison)
    if where is not None:
        lines.append(f"  {hostside.label(where, comparison.arch)}: {_side_reason(comparison, where)}")
    for delta in failures:
        if delta.scope is Scope.TOTAL:
            lines.append("  " + _line(delta, f"total {device_time(comparison.arch)}"))
    for delta in layers:
        lines.append(
            "  " + _line(delta, f"{delta.verdict.value.upper()} {layer_label(delta.name, layer_types)}")
        )
        kernels = [k for k in comparison.kernels_of(delta.name) if k.verdict is not Verdict.UNCHANGED]
        for kernel in (kernels or list(comparison.kernels_of(delta.name)))[:KERNELS_PER_LAYER]:
            lines.append(_kernel_line(kernel))
    for delta in host:
        label = f"{delta.verdict.value.upper()} host time of {layer_label(delta.name, layer_types)}"
        lines.append("  " + _line(delta, label))
    for delta in failures:
        if delta.scope is Scope.WALL:
            lines.append("  " + _line(delta, "latency (wall time of a step)"))
    for delta in failures:
        if delta.scope is Scope.KERNEL and delta.layer not in {d.name for d in layers}:
            lines.append("  " + _line(delta, f"{delta.verdict.value.upper()} kernel in {delta.layer}"))
            lines.append(f"      {short(delta.name)}")
    others = {
        v: len(
            [
                d
                for d in comparison.deltas
                if d.verdict is v and d not in failures and d.scope is not Scope.KERNEL
            ]
        )
        for v in (Verdict.IMPROVED, Verdict.NEW, Verdict.MISSING)
    }
    extra = ", ".join(f"{n} {v.value}" for v, n in others.items() if n)
    if extra:
        lines.append(f"  not failing: {extra} layer(s)")
    lines += environment_lines(changes)
    lines += [f"  note: {note}" for note in comparison.notes]
    lines.append(f"  baseline: {baseline_path}")
    if _only_unsettled(failures):  # a doubt, not a regression: nothing to re-record
        lines.append(f"  to settle it, measure again on this runner (or a quieter one): pytest '{target}'")
    else:
        lines.append(f"  if this change is intended, re-record: {record_command(target)}")
    return "\n".join(lines)


def _only_unsettled(failures: Sequence[Delta]) -> bool:
    """Every failing figure is a doubt (inconclusive, ambiguous), none a regression."""
    return bool(failures) and all(d.verdict in sections.UNSETTLED for d in failures)


def _side_reason(comparison: Comparison, where: hostside.Side) -> str:
    """Why the slowdown is placed where it is, in a few words."""
    if where is hostside.Side.HOST:
        (total,) = comparison.of(Scope.TOTAL) or (None,)
        gpu = f" ({pct(total.delta_pct)})" if total is not None else ""
        return f"the host takes longer; the {device_time(comparison.arch)} did not fail{gpu}"
    what = "operators" if comparison.arch.startswith("cpu-") else "kernels"
    if where is hostside.Side.GPU:
        return f"{what} take longer or more of them run"
    return f"both the {what} and the host take longer"


def environment_lines(changes: Sequence[Change]) -> list[str]:
    if not changes:
        return []
    return [
        "  environment changed since the baseline (may explain it): " + "; ".join(str(c) for c in changes)
    ]


def time_split_lines(measurements: Iterable[Measurement]) -> str:
    """Per benchmark, where the time of a forward goes: device busy against host overhead."""
    lines = [f"{m.benchmark}: {timesplit.sentence(m)}" for m in measurements if m.busy.n]
    return "".join(f"{line}\n" for line in (["where the time goes (medians):", *lines] if lines else []))


def summary_table(
    comparisons: Sequence[Comparison],
    width: int = 120,
    measurements: Mapping[str, Measurement] | None = None,
    *,
    color: bool = False,
    quiet: bool = False,
) -> str:
    """A short table of what failed, or one line per benchmark when all passed; with
    ``measurements`` (by benchmark id), where the time of each compared benchmark goes below it.
    ``width``: the terminal's (:data:`UNWRAPPED` for a log); ``color``: verdicts coloured (ANSI);
    ``quiet`` (pytest -q): only the failing benchmarks' rows, or one line when none failed, and
    no time split."""
    if quiet and not any(c.failed for c in comparisons):
        return f"kernelgate: {len(comparisons)} benchmark(s) compared, none failed\n"
    # a narrow terminal: no vertical rules and one space between columns, so that names fold less
    narrow = width < NARROW
    table = Table(
        show_lines=False,
        box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD,
        collapse_padding=narrow,
        pad_edge=not narrow,
        show_edge=not narrow,
    )
    for column, justify in (
        ("benchmark", "left"),
        ("what", "left"),
        ("baseline", "right"),
        ("current", "right"),
        ("delta", "right"),
        ("limit" if narrow else "threshold", "right"),
        ("verdict", "left"),
    ):
        # names fold onto a second line in a narrow terminal; numbers and verdicts stay whole
        names = column in ("benchmark", "what")
        table.add_column(column, justify=justify, overflow="fold", no_wrap=not names)  # type: ignore[arg-type]
    for comparison in comparisons:
        if quiet and not comparison.failed:
            continue
        # what fails, else the total; a cold start's total is its first phase row (launch to steady state)
        rows = (
            [d for d in comparison.failures if d.scope is not Scope.KERNEL]
            or [d for d in comparison.deltas if d.scope is Scope.TOTAL]
            or list(comparison.deltas[:1])
        )
        for delta in rows:
            verdict = delta.verdict.value if not comparison.failed or delta in comparison.failures else "pass"
            table.add_row(
                comparison.benchmark,
                delta.figure,
                us(delta.baseline_us),
                us(delta.current_us),
                pct(delta.delta_pct),
                rel(delta.threshold.rel),
                Text(verdict, style=STYLES.get(verdict, "")),
            )
    known = {} if quiet else measurements or {}
    found = [known[c.benchmark] for c in comparisons if c.benchmark in known]
    return _render(table, width, color, strip=narrow) + time_split_lines(found)


def progress_line(done: int, total: int, name: str, seconds: float, elapsed: float, verdict: str) -> str:
    """One line per finished gate test of a run with several: where the run is, so that a long run
    (the nightly matrix: minutes) shows something before its end. Plain text: greppable in a log."""
    return f"kernelgate [{done}/{total}] {name}: {verdict} ({seconds:.1f} s; {elapsed:.0f} s so far)"


def unsettled_lines(comparisons: Sequence[Comparison]) -> list[str]:
    """A line per total or layer whose verdict is not settled (ambiguous or inconclusive), with
    why: it is neither a pass nor a regression."""
    lines = []
    for comparison, delta in sections.unsettled(comparisons):
        why = delta.note or "over threshold but inside the noise"
        shown = "; ".join(p for p in (why, evidence(delta) if not delta.note else "") if p)
        lines.append(
            f"not settled: {comparison.benchmark} {delta.figure} {delta.verdict.value} "
            f"({pct(delta.delta_pct)}): {shown}"
        )
    return lines


def let_go_lines(comparisons: Sequence[Comparison]) -> list[str]:
    """A line per figure the screen passed although over its threshold
    (:func:`kernelgate.report.sections.let_go`): at this runner's CPU speed, or at the level of this
    runner's own rounds; so said."""
    return [
        f"passed {how}: {comparison.benchmark} {delta.figure}: {delta.note}"
        for basis, (how, _) in sections.LET_GO.items()
        for comparison, delta in sections.let_go(comparisons, basis)
    ]


def _render(table: Table, width: int, color: bool = False, strip: bool = False) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
    )
    console.print(table)
    text = buffer.getvalue()
    return "".join(line.rstrip() + "\n" for line in text.splitlines()) if strip else text


def layer_table(
    comparison: Comparison, layer_types: dict[str, str], width: int = 120, color: bool = False
) -> str:
    """Every layer of one benchmark (and the total) with its delta and verdict."""
    table = Table(title=f"{comparison.benchmark} on {comparison.arch}", title_justify="left")
    for column in ("layer", "type", "baseline", "current", "delta", "threshold", "verdict"):
        table.add_column(column, justify="left" if column in {"layer", "type", "verdict"} else "right")
    for delta in comparison.of(Scope.TOTAL) + comparison.of(Scope.LAYER):
        table.add_row(
            delta.name,
            layer_types.get(delta.name, ""),
            us(delta.baseline_us),
            us(delta.current_us),
            pct(delta.delta_pct),
            rel(delta.threshold.rel),
            Text(delta.verdict.value, style=STYLES.get(delta.verdict.value, "")),
        )
    return _render(table, width, color)
