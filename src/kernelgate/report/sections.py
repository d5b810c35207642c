"""The parts of report.md that say how the whole run ended, so that the report agrees with the
exit status (:func:`kernelgate.verdict.policy.decide`): the headline's mark and the reasons the run
fails, a table of the benchmarks not compared (why, and the command that fixes it), a table of the
cold starts, the layers whose verdict is not settled (ambiguous or inconclusive), with why, and the
latency and host-coupled figures passed at this runner's CPU speed, with both numbers; and one line
on the hosts that recorded the baselines and this runner (:func:`hosts_line`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kernelgate.machine.fingerprint import RecordedHosts
from kernelgate.report import labels
from kernelgate.report.escape import code, plain
from kernelgate.report.labels import pct
from kernelgate.verdict.compare import Basis, Comparison, Delta, Verdict
from kernelgate.verdict.diff import BenchmarkDiff
from kernelgate.verdict.policy import Case, ExitDecision, Status

UNSETTLED = frozenset({Verdict.AMBIGUOUS, Verdict.INCONCLUSIVE})


@dataclass(frozen=True)
class Judged:
    """One suspect of the stored-baseline screen as the same-host judge decided it."""

    benchmark: str
    why: str  # what the screen saw ("wall +25.0 % over 50% of their thresholds")
    outcome: str  # pass, regression, inconclusive
    reason: str
    processes: int  # a side


@dataclass(frozen=True)
class RunOutcome:
    """What the report says beyond the compared benchmarks: the run's decision, the benchmarks not
    compared, the cold starts (compared phase by phase) and what the same-host judge decided."""

    decision: ExitDecision
    not_compared: tuple[Case, ...] = ()
    coldstarts: tuple[Comparison, ...] = ()
    arch: str = ""  # the run's architecture key (a run that compared nothing has no diff to name it)
    judged: tuple[Judged, ...] = ()
    # (benchmark, why) of benchmarks skipped as the repeat of one measured in the run
    unmeasured: tuple[tuple[str, str], ...] = ()


def _cell(text: str) -> str:
    """A table cell or list item: one line, runs of blanks as one, Markdown escaped."""
    return plain(" ".join(text.split()))


def mark(diffs: Sequence[BenchmarkDiff], run: RunOutcome | None) -> str:
    if run is not None:
        return "❌" if run.decision.failed else "✅"
    return "❌" if any(d.failed for d in diffs) else "✅"


def headline_suffix(diffs: Sequence[BenchmarkDiff], run: RunOutcome | None) -> str:
    """What the verdict line adds: the ambiguous figures (inconclusive ones it names itself), the
    cold starts that failed and the benchmarks not compared."""
    text = ""
    ambiguous = [d for c, d in unsettled([d.comparison for d in diffs]) if d.verdict is Verdict.AMBIGUOUS]
    if ambiguous:
        text += f"; {len(ambiguous)} ambiguous figure(s), not settled (see below)"
    if run is None:
        return text
    cold = [c for c in run.coldstarts if c.failed]
    if cold:
        text += f"; {len(cold)} cold start(s) failed: {_first(c.benchmark for c in cold)}"
    elif run.coldstarts:  # the count above is of the kernel benchmarks: say the cold starts were judged
        text += f"; {len(run.coldstarts)} cold start(s) passed"
    if run.unmeasured:
        text += f"; {len(run.unmeasured)} not measured, as the repeat of another (see below)"
    if run.not_compared:
        named = (
            c.benchmark + ("" if c.status is Status.NOT_COMPARED else f" ({c.status.value})")
            for c in run.not_compared
        )
        text += f"; {len(run.not_compared)} not compared: {_first(named)}"
    return text


def _first(names: Iterable[str], n: int = 3) -> str:
    listed = list(names)
    return ", ".join(plain(name) for name in listed[:n]) + (", …" if len(listed) > n else "")


def unshown(diffs: Sequence[BenchmarkDiff], run: RunOutcome | None) -> list[str]:
    """The first line of each reason the run fails, less the regressions its diffs show."""
    if run is None or not run.decision.failed:
        return []
    shown = tuple(f"{d.benchmark}: " for d in diffs if d.failed)
    listed = [r.strip().splitlines()[0] for r in run.decision.reasons if r.strip()]
    return [r for r in listed if not r.startswith(shown)]


def reasons(diffs: Sequence[BenchmarkDiff], run: RunOutcome | None) -> list[str]:
    """Why the run fails (exit 1), the first line of each reason, less the regressions the
    sections below show; nothing when it passes."""
    listed = unshown(diffs, run)
    if not listed:
        return []
    return ["**The run fails (exit status 1):**", "", *(f"- {_cell(r)}" for r in listed), ""]


def not_compared_table(run: RunOutcome | None) -> list[str]:
    if run is None or not run.not_compared:
        return []
    rows = ["#### Not compared", "", "| benchmark | why | command to fix |", "|---|---|---|"]
    for case in run.not_compared:
        fix = code(case.fix) if case.fix else labels.DASH
        rows.append(f"| {_cell(case.benchmark)} | {_cell(case.status.value)}: {_cell(case.reason)} | {fix} |")
    return [*rows, ""]


def _seconds(us: float | None) -> str:
    return labels.us(us)


def coldstart_table(run: RunOutcome | None) -> list[str]:
    """Every phase of every cold start that took any time: baseline, current, delta, threshold and
    verdict, with the same-host judge's note where it decided (a phase +50 % against another host's
    baseline reads "unchanged" only with the reason beside it)."""
    if run is None or not (run.coldstarts or run.unmeasured):
        return []
    rows = ["#### Cold starts", ""]
    if run.coldstarts:
        rows += [
            "| cold start | phase | baseline | current | delta | threshold | verdict |",
            "|---|---|--:|--:|--:|--:|---|",
        ]
    for comparison in run.coldstarts:
        for d in comparison.deltas:
            if not (d.baseline_us or d.current_us):
                continue  # a phase of no length on both sides (nothing to read)
            verdict = labels.verdict(d.verdict)
            if d in comparison.failures:
                verdict = f"**{verdict}**"
            if d.note:
                verdict += f" ({_cell(d.note)})"
            rows.append(
                f"| {_cell(comparison.benchmark)} | {_cell(d.name)} | {_seconds(d.baseline_us)} | "
                f"{_seconds(d.current_us)} | {pct(d.delta_pct)} | {labels.threshold(d)} | {verdict} |"
            )
    if run.unmeasured:  # skipped as the repeat of a cold start above
        rows += [""] if run.coldstarts else []
        rows += [f"- {code(name)}: {_cell(why)}" for name, why in run.unmeasured]
    return [*rows, ""]


def tally(judged: Sequence[Judged]) -> str:
    """``3 suspect(s) of the stored-baseline screen, 2 pass, 1 inconclusive``, or '' for none."""
    if not judged:
        return ""
    counts: dict[str, int] = {}
    for j in judged:
        counts[j.outcome] = counts.get(j.outcome, 0) + 1
    each = ", ".join(f"{n} {outcome}" for outcome, n in counts.items())
    return f"{len(judged)} suspect(s) of the stored-baseline screen, {each}"


def judged_table(run: RunOutcome | None) -> list[str]:
    """The suspects of the screen and what the same-host judge made of each: why it was a suspect,
    the verdict, how many processes a side, the reason (a pass from a judge shows its cost and why)."""
    if run is None or not run.judged:
        return []
    rows = [
        "<details>",
        f"<summary>Decided on this runner (base and head measured here): {tally(run.judged)}</summary>",
        "",
        "| benchmark | why a suspect | verdict | processes a side | reason |",
        "|---|---|---|--:|---|",
    ]
    rows += [
        f"| {_cell(j.benchmark)} | {_cell(j.why or 'over its screen threshold')} | {_cell(j.outcome)} | "
        f"{j.processes or labels.DASH} | {_cell(j.reason)} |"
        for j in run.judged
    ]
    return [*rows, "", "</details>", ""]


def why_unsettled(delta: Delta) -> str:
    """Why a figure's verdict is not settled: the judge's reason, or the noise it is inside."""
    if delta.note:
        return delta.note
    parts = ["over threshold but inside the noise"]
    if delta.p_value is not None:
        parts.append(f"p = {delta.p_value:.3g}")
    if delta.noise_pct:
        parts.append(f"round spread {delta.noise_pct:.1f} %")
    return ", ".join(parts)


def unsettled(comparisons: Sequence[Comparison]) -> list[tuple[Comparison, Delta]]:
    """The total, layers and phases whose verdict is ambiguous or inconclusive, failing or not
    (kernels are shown with their layer)."""
    return [
        (c, d) for c in comparisons for d in c.deltas if d.verdict in UNSETTLED and d.scope.value != "kernel"
    ]


def _titled(title: str, columns: str, rule: str, rows: list[str]) -> list[str]:
    """A report.md table under its heading, or nothing where it has no rows."""
    return [f"#### {title}", "", columns, rule, *rows, ""] if rows else []


def unsettled_table(diffs: Sequence[BenchmarkDiff]) -> list[str]:
    rows = [
        f"| {_cell(c.benchmark)} | {code(d.name)} | {pct(d.delta_pct)} | "
        f"{labels.verdict(d.verdict)} | {_cell(why_unsettled(d))} |"
        for c, d in unsettled([d.comparison for d in diffs])
    ]
    return _titled("Not settled (neither a pass nor a regression)",
                   "| benchmark | what | delta | verdict | why |", "|---|---|--:|---|---|", rows)  # fmt: skip


#: the figures the screen passed although over their thresholds, by what it passed them on: the
#: terminal's words ("passed <these>: ...") and report.md's table title
LET_GO = {
    Basis.EXPLAINED: ("at this runner's CPU speed", "over the threshold as measured"),
    Basis.OWN_LEVEL: (
        "at the level of this runner's own rounds",
        "over the threshold against their pooled median",
    ),
}


def let_go(comparisons: Sequence[Comparison], basis: Basis) -> list[tuple[Comparison, Delta]]:
    """The figures the screen let go on ``basis``: the latency and host-coupled figures each step's
    CPU-speed loop put within their limits against this runner's own rounds
    (:func:`probespeed.explained`), the device-side layers inside the levels of those rounds
    (:func:`ownrange.at_own_level`). Passed, but over their thresholds as compared, so shown with both
    numbers."""
    return [(c, d) for c in comparisons for d in c.deltas if d.basis is basis]


def let_go_table(diffs: Sequence[BenchmarkDiff]) -> list[str]:
    lines: list[str] = []
    for basis, (how, over) in LET_GO.items():
        rows = [
            f"| {_cell(c.benchmark)} | {code(d.figure)} | {pct(d.delta_pct)} | {_cell(d.note)} |"
            for c, d in let_go([d.comparison for d in diffs], basis)
        ]
        lines += _titled(f"Passed {how} ({over})", "| benchmark | what | delta | why it passed |",
                         "|---|---|--:|---|", rows)  # fmt: skip
    return lines


def hosts(diffs: Sequence[BenchmarkDiff]) -> tuple[RecordedHosts, RecordedHosts]:
    """The hosts that recorded the baselines of ``diffs``, and those of this run."""
    base = RecordedHosts.of(h for d in diffs for h in d.base.round_hosts)
    return base, RecordedHosts.of(h for d in diffs for h in d.current.round_hosts)


def hosts_line(diffs: Sequence[BenchmarkDiff]) -> list[str]:
    """``Hosts: the baseline's a1b2c3d4, c3d4e5f6; this runner's e5f6a7b8 (one of them).``; nothing
    where no round on either side has a fingerprint (a kernelgate before them)."""
    base, runner = hosts(diffs)
    if not (base.hosts or runner.hosts):
        return []

    def ids(recorded: RecordedHosts) -> str:
        return ", ".join(code(h.id) for h in recorded.hosts) or "unknown"

    line = f"Hosts: the baseline's {ids(base)}"
    line += " and rounds without a fingerprint" if base.hosts and base.unknown else ""
    line += f"; this runner's {ids(runner)}"
    if base.hosts and runner.hosts:
        among = all(base.includes(h) for h in runner.hosts)
        line += (
            " (one of them)" if among else " (not among them: the stored-baseline screen sees a host offset)"
        )
    return [line + ".", ""]
