"""GitHub-flavoured Markdown report: for a pull-request comment and ``$GITHUB_STEP_SUMMARY``.

A one-line verdict first; per failing benchmark, where the time of a forward goes (device busy
against host overhead, :mod:`kernelgate.measure.timesplit`), a table of what failed with the kernels that
changed, hints where the data shows one, then collapsed sections (``<details>``) for the time per
layer group (:mod:`kernelgate.models.groups`), the kernels, the improvements, everything unchanged and the
environment. Passing benchmarks share one collapsed section: a table with their totals and
where their time goes, and one of their layer groups. The hidden marker on the first line lets a
workflow find and update its comment.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from kernelgate.config import Scope
from kernelgate.measure.naming import kernel_label
from kernelgate.measure.timesplit import TimeSplit
from kernelgate.models.groups import ordered
from kernelgate.report import kernels, labels, sections
from kernelgate.report.escape import code, plain
from kernelgate.report.labels import pct, signed_us, us
from kernelgate.report.sections import RunOutcome
from kernelgate.verdict import hostside
from kernelgate.verdict.compare import Delta, Verdict
from kernelgate.verdict.diff import BenchmarkDiff, EnvChange, GroupDiff, LayerDiff

MARKER = "<!-- kernelgate-report -->"
COMMENT_LIMIT = 65_000  # GitHub refuses comments over 65,536 characters
VERDICT_LAYERS = 3
ENVIRONMENT_SUMMARY = ("gpu", "driver", "cuda", "cudnn", "torch", "ultralytics")


def layer_name(layer: LayerDiff) -> str:
    return f"{code(layer.delta.name)} {plain(layer.type)}".rstrip()


def summary_name(layer: LayerDiff) -> str:
    """A layer inside ``<summary>``, where Markdown is not rendered everywhere: HTML only."""
    return f"<code>{html.escape(layer.delta.name)}</code> {html.escape(layer.type)}".rstrip()


def _what(diff: BenchmarkDiff) -> list[tuple[tuple[bool, float], str]]:
    """((not an origin, -delta %), label) of what failed in one benchmark: the origin of the
    regression first (kernelgate.verdict.origin), then the worst."""
    origins = diff.comparison.origins
    items = [
        (
            (lay.delta.name not in origins, -(lay.delta.delta_pct or 0.0)),
            f"{pct(lay.delta.delta_pct)} {layer_name(lay)}"
            + (" (origin)" if lay.delta.name in origins else ""),
        )
        for lay in diff.failing_layers
    ]
    items += [
        ((True, -(k.delta_pct or 0.0)), f"{pct(k.delta_pct)} {code(kernel_label(k.name))} in {code(k.layer)}")
        for k in diff.stray_kernels
    ]
    return sorted(items, key=lambda item: item[0])


def verdict_line(diffs: Sequence[BenchmarkDiff], name: Callable[[str], str] = str) -> str:
    """The headline; ``name`` shows a benchmark id or architecture key (``plain`` in Markdown)."""
    arches = ", ".join(name(a) for a in sorted({d.arch for d in diffs})) or "this machine"
    doubts = [d for d in diffs if _inconclusive(d)]
    unsettled = ", ".join(name(d.benchmark) for d in doubts)
    doubt = f"; {len(doubts)} inconclusive (not settled on this runner: {unsettled})" if doubts else ""
    failed = [d for d in diffs if d.failed and not _only_inconclusive(d)]
    what = labels.time_name(diffs)
    if not failed:
        moves = [d.total.delta.delta_pct or 0.0 for d in diffs]
        spread = f" (total {what} {min(moves):+.1f} % to {max(moves):+.1f} %)" if moves else ""
        return f"kernelgate: no regression in {len(diffs)} benchmark(s) on {arches}{spread}{doubt}"
    layers = sum(len(d.failing_layers) for d in failed)
    kernels = sum(len(d.stray_kernels) for d in failed)
    counts = [
        f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((layers, "layer"), (kernels, "kernel")) if n
    ]
    where = name(failed[0].benchmark) if len(failed) == 1 else f"{len(failed)} of {len(diffs)} benchmarks"
    items = [
        (v, t + (f" ({name(d.benchmark)})" if len(failed) > 1 else "")) for d in failed for v, t in _what(d)
    ]
    items.sort(key=lambda item: item[0])
    worst = ", ".join(t for _, t in items[:VERDICT_LAYERS]) + (", …" if len(items) > VERDICT_LAYERS else "")
    if not counts:
        totals = ", ".join(f"{pct(d.total.delta.delta_pct)} ({name(d.benchmark)})" for d in failed)
        return f"kernelgate: total {what} slower in {where} on {arches}: {totals}{doubt}"
    return f"kernelgate: {' and '.join(counts)} slower in {where} on {arches}: {worst}{doubt}"


def _inconclusive(d: BenchmarkDiff) -> bool:
    """Any figure not settled on this runner: the total, a layer, a layer's host time, the latency, so
    that a run with an inconclusive latency is never headlined "no regression"."""
    return any(x.verdict is Verdict.INCONCLUSIVE for x in d.comparison.deltas)


def _only_inconclusive(d: BenchmarkDiff) -> bool:
    """Failed on doubts alone: every failing figure is inconclusive."""
    failures = d.comparison.failures
    return bool(failures) and all(f.verdict is Verdict.INCONCLUSIVE for f in failures)


def _row(mark: str, what: str, delta: Delta, kernels: str) -> str:
    """A failing figure's row; one the same-host judge could not settle is marked ❔, not 🔴."""
    mark = "❔" if delta.verdict in sections.UNSETTLED else mark
    return (
        f"| {mark} | {what} | {us(delta.baseline_us)} | {us(delta.current_us)} | "
        f"**{pct(delta.delta_pct)}**<br>{signed_us(delta.delta_us)} | {labels.threshold(delta)} | "
        f"{labels.p_value(delta)} | {kernels} |"
    )


FAIL_HEADER = [
    "| | what | baseline | current | delta | threshold | significance | kernels that changed |",
    "|:-:|---|--:|--:|--:|--:|:-:|---|",
]
LAYER_HEADER = [
    "| layer | baseline | current | delta | threshold | significance | verdict |",
    "|---|--:|--:|--:|--:|:-:|---|",
]


def _layer_rows(layers: Iterable[LayerDiff]) -> list[str]:
    return [
        f"| {layer_name(lay)} | {us(lay.delta.baseline_us)} | {us(lay.delta.current_us)} | "
        f"{pct(lay.delta.delta_pct)} | {labels.threshold(lay.delta)} | {labels.p_value(lay.delta)} | "
        f"{labels.verdict(lay.delta.verdict)} |"
        for lay in layers
    ]


def _details(summary: str, body: list[str]) -> list[str]:
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>", ""]


def split_line(diff: BenchmarkDiff) -> str:
    """Where the time of a forward goes now, and the baseline's share and bound beside it."""
    now, before = diff.current_split, diff.base_split
    if now is None:
        return ""
    was = f" (baseline: {_share(before)})" if before is not None else ""
    return f"Where the time goes: {now.sentence()}{was}."


def _share(split: TimeSplit) -> str:
    """``GPU busy 29 % of 3.982 ms, launch-bound``."""
    return f"{split.busy_name} {100 * split.busy_share:.0f} % of {us(split.wall_us)}, {split.label}"


def group_summary(groups: Sequence[GroupDiff]) -> str:
    """``backbone +26.1 %, neck +0.2 %, ...``: each group's change, in the order of the table."""
    return ", ".join(f"{g.name} {pct(g.delta_pct) if g.delta_pct is not None else _gone(g)}" for g in groups)


def _gone(group: GroupDiff) -> str:
    return "new" if group.baseline_us is None else "gone"


def _groups(diff: BenchmarkDiff) -> list[str]:
    """A collapsed table of the time per layer group; its summary line names every group's change."""
    if not diff.groups:
        return []
    what = "GPU time" if diff.current_split is None or diff.current_split.gpu else "CPU op time"
    rows = ["| layer group | baseline | current | delta |", "|---|--:|--:|--:|"] + [
        f"| {plain(g.name)} | {us(g.baseline_us)} | {us(g.current_us)} | {pct(g.delta_pct)} |"
        for g in diff.groups
    ]
    return _details(f"{what} per layer group: {html.escape(group_summary(diff.groups))}", rows)


def _environment(diff: BenchmarkDiff) -> list[str]:
    by_key = {e.key: e for e in diff.environment}
    summary = ", ".join(
        f"{by_key[k].label} {by_key[k].current}"
        for k in ENVIRONMENT_SUMMARY
        if k in by_key and by_key[k].current
    )
    table = ["| | baseline | current |", "|---|---|---|"] + [_env_row(e) for e in diff.environment]
    changed = diff.environment_changed
    if not changed:
        return _details(f"Environment unchanged: {html.escape(summary)}", table)
    moves = ", ".join(
        f"{plain(e.label)} {plain(e.baseline or '—')} → {plain(e.current or '—')}" for e in changed
    )
    return [f"⚠️ **Environment changed:** {moves}", "", *_details("Environment, baseline and current", table)]


def _env_row(e: EnvChange) -> str:
    mark = " (changed)" if e.changed and not e.volatile else ""
    return f"| {plain(e.label)}{mark} | {plain(e.baseline or '—')} | {plain(e.current or '—')} |"


def benchmark_section(diff: BenchmarkDiff, compact: bool = False) -> list[str]:
    total = diff.total.delta
    lines = [
        f"#### ❌ {plain(diff.benchmark)} on {plain(diff.arch)}",
        "",
        f"Total {labels.device_time(diff.arch)} per forward: "
        f"{us(total.baseline_us)} → {us(total.current_us)} "
        f"({pct(total.delta_pct)}, {signed_us(total.delta_us)}; threshold {labels.threshold(total)}): "
        f"{'over threshold' if diff.total.failing else 'within threshold'}. "
        f"Wall time (median): {us(diff.base.wall.median if diff.base.wall.n else None)} → "
        f"{us(diff.current.wall.median if diff.current.wall.n else None)}.",
        "",
        *([split_line(diff), ""] if diff.current_split else []),
        *FAIL_HEADER,
    ]
    if diff.total.failing:
        lines.append(_row("🔴", "**total**", total, ""))
    for lay in diff.failing_layers:
        lines.append(_row("🔴", layer_name(lay) + _role(lay, diff), lay.delta, kernels.changed_cell(lay)))
    for k in diff.stray_kernels:
        module, _, name = k.name.partition(" :: ")
        lines.append(
            _row("🔴", f"kernel in {code(k.layer)}: {code(module)} {code(kernel_label(name))}", k, "")
        )
    for d in diff.comparison.failures:  # the host side: a layer's host time, the latency
        if d.scope is Scope.HOST:
            lines.append(_row("🔴", f"host time of {code(d.name)}", d, plain(d.note)))
        elif d.scope is Scope.WALL:
            lines.append(_row("🔴", "latency (wall time of a step)", d, ""))
    where = hostside.side(diff.comparison)
    if where is not None and where is not hostside.Side.GPU:
        side = hostside.label(where, diff.comparison.arch)
        lines += ["", f"**{side}**: what got slower runs on the host (Python, launches, waits)."]
    lines.append("")
    lines += [f"Origin {code(lay.delta.name)}: {plain(lay.delta.note.split('origin: ', 1)[-1])}.\n"
              for lay in diff.failing_layers if lay.delta.name in diff.comparison.origins]  # fmt: skip
    hints = [(layer_name(lay), h) for lay in diff.layers for h in lay.hints]
    hints += [(plain(diff.benchmark), h) for h in diff.hints]
    if hints:
        lines += (
            ["**Hints**", ""] + [f"- {where}, {h.kind.value}: {plain(h.text)}" for where, h in hints] + [""]
        )
    if diff.traces is not None:
        pair = [code(p) for p in (diff.traces.baseline, diff.traces.current) if p]
        note = f" {plain(diff.traces.note)}" if diff.traces.note else ""
        lines += [f"Traces (Perfetto, TensorBoard, chrome://tracing): {', '.join(pair) or '—'}.{note}", ""]
    lines += _groups(diff)
    if not compact:
        for lay in (*diff.failing_layers, *(lay for lay in diff.layers if not lay.failing and lay.hints)):
            n_over = len([k for k in lay.kernels if k.verdict is not Verdict.UNCHANGED])
            lines += _details(
                f"Kernels of {summary_name(lay)}: {n_over} of {len(lay.kernels)} changed",
                kernels.table(lay, diff),
            )
    improved = diff.improved_layers
    if improved:
        lines += _details(f"✅ {len(improved)} layer(s) faster", LAYER_HEADER + _layer_rows(improved))
    others = diff.other_layers
    if others and not compact:
        counts = Counter(labels.verdict(lay.delta.verdict) for lay in others)
        summary = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
        lines += _details(f"Layers not over threshold: {summary}", LAYER_HEADER + _layer_rows(others))
    lines += _environment(diff)
    return lines


def _role(lay: LayerDiff, diff: BenchmarkDiff) -> str:
    """The layer's part in a regression with a named origin (kernelgate.verdict.origin)."""
    if lay.delta.name in diff.comparison.origins:
        return " **(origin)**"
    return " (after the origin: may be shifted by it)" if "shifted by" in lay.delta.note else ""


def _passing(diffs: Sequence[BenchmarkDiff]) -> list[str]:
    rows = [
        "| benchmark | total baseline | total current | delta | where the time goes "
        "| layers within threshold |",
        "|---|--:|--:|--:|---|--:|",
    ]
    for d in diffs:
        t = d.total.delta
        now = d.current_split
        rows.append(
            f"| {plain(d.benchmark)} | {us(t.baseline_us)} | {us(t.current_us)} | {pct(t.delta_pct)} | "
            f"{_share(now) if now else labels.DASH} | {_within(d)} |"
        )
    groups = _group_rows(diffs)
    rows += ["", *groups] if groups else []
    changed = {
        f"{plain(e.label)} {plain(e.baseline or '—')} → {plain(e.current or '—')}": None
        for d in diffs
        for e in d.environment_changed
    }
    lines = [f"⚠️ **Environment changed:** {', '.join(changed)}", ""] if changed else []
    return lines + _details(f"✅ {len(diffs)} benchmark(s) passed", rows)


def _within(d: BenchmarkDiff) -> str:
    """Layers within threshold, and those not settled (ambiguous, inconclusive) beside them."""
    unsettled = [lay for lay in d.other_layers if lay.delta.verdict in sections.UNSETTLED]
    within = len(d.other_layers) + len(d.improved_layers) - len(unsettled)
    return f"{within} of {len(d.layers)}" + (f" ({len(unsettled)} not settled)" if unsettled else "")


def _group_rows(diffs: Sequence[BenchmarkDiff]) -> list[str]:
    """One row per benchmark: each group's current time and its change against the baseline."""
    names = ordered({g.name for d in diffs for g in d.groups})
    if not names:
        return []
    rows = [
        "Time per layer group, current (change against the baseline):",
        "",
        "| benchmark | " + " | ".join(plain(n) for n in names) + " |",
        "|---|" + "--:|" * len(names),
    ]
    for d in diffs:
        by_name = {g.name: g for g in d.groups}
        cells = [
            f"{us(by_name[n].current_us)} ({pct(by_name[n].delta_pct)})" if n in by_name else labels.DASH
            for n in names
        ]
        rows.append(f"| {plain(d.benchmark)} | " + " | ".join(cells) + " |")
    return rows


def headline(diffs: Sequence[BenchmarkDiff], run: RunOutcome | None = None) -> str:
    """The report's first line (Markdown): the run's mark, the verdict, and what else failed or is
    not settled; ``kernelgate report`` prints it as plain text (:func:`kernelgate.report.escape.text`)."""
    line = verdict_line(diffs, plain) if diffs else "kernelgate: no benchmark compared"
    return f"{sections.mark(diffs, run)} {line}{sections.headline_suffix(diffs, run)}"


def body(diffs: Sequence[BenchmarkDiff], compact: bool = False, run: RunOutcome | None = None) -> list[str]:
    """The verdict line (its mark the run's decision, where ``run`` gives it), why the run fails, a
    section per failing benchmark, the benchmarks not compared, the figures not settled, those passed
    at this runner's CPU speed, the cold starts and the table of passing benchmarks."""
    lines = [f"### {headline(diffs, run)}", ""]
    lines += sections.reasons(diffs, run)
    for diff in diffs:
        if diff.failed:
            lines += benchmark_section(diff, compact)
    lines += sections.not_compared_table(run) + sections.unsettled_table(diffs) + sections.let_go_table(diffs)
    lines += sections.coldstart_table(run)
    passing = [d for d in diffs if not d.failed]
    if passing:
        lines += _passing(passing)
    return lines + sections.judged_table(run) + sections.hosts_line(diffs)


SHORTENED = "_Shortened to fit a comment: the full tables are in report.md and report.html._"


def fit(lines_for: Callable[[bool], list[str]], footer: str = "", limit: int = COMMENT_LIMIT) -> str:
    """``lines_for(compact=False)`` as text, or ``lines_for(True)`` with a note where that exceeds
    ``limit``; cut at ``limit`` as a last resort."""
    for compact in (False, True):
        lines = lines_for(compact) + ([SHORTENED, ""] if compact else [])
        if footer:
            lines += [footer, ""]
        text = "\n".join(lines).rstrip() + "\n"
        if len(text) <= limit:
            return text
    return text[: limit - 80].rsplit("\n", 1)[0] + "\n\n_Cut at GitHub's comment size: see report.md._\n"


def render(
    diffs: Sequence[BenchmarkDiff],
    footer: str = "",
    limit: int = COMMENT_LIMIT,
    run: RunOutcome | None = None,
) -> str:
    """The whole report; shortened (no kernel and unchanged tables) where it would exceed ``limit``."""
    return fit(lambda compact: [MARKER, *body(diffs, compact, run)], footer, limit)
