"""Result files judged after the run: what ``kernelgate compare`` and ``kernelgate report`` decide
from a baseline file and a results file, and what the pytest plugin writes into the results file
so that they decide as the run did.

Pairing: a benchmark of the current file is matched with the baseline entry of the same pytest
node id, else of the same benchmark id (the same suite run from another folder). A pair is
compared only when both records can be trusted and are of one architecture; a cold start is
compared phase by phase. Every benchmark of the current file ends as a
:class:`~kernelgate.verdict.policy.Case`, and :func:`kernelgate.verdict.policy.decide` gives the exit.

The same-host judge's decisions cannot be made again from two files (its base and head rounds
ran on the runner). The plugin stores each one in the results file, under
``extra_info.kernelgate_judge`` of its benchmark (:func:`with_judgements`): the comparison with the
judge's verdicts and a digest of the baseline record it was judged against. Offline, a pair whose
baseline record has that digest takes the recorded comparison; against another baseline the
benchmark is compared afresh, and a note says so.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelgate.baseline.store import Entry
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.coldstart.phases import ColdStart
from kernelgate.config import GateConfig, Threshold, record_command
from kernelgate.machine import envdiff
from kernelgate.measure import integrity
from kernelgate.measure.results import Dist, Measurement
from kernelgate.report.terminal import failure_message, layer_table
from kernelgate.verdict import policy, samehost, settled, yardstick
from kernelgate.verdict.compare import Comparison, Judge, Judgement, compare
from kernelgate.verdict.delta import process_rule
from kernelgate.verdict.policy import Case, ExitDecision, Status

JUDGE_KEY = "kernelgate_judge"


def digest(record: Mapping[str, Any]) -> str:
    """A digest of a baseline record (a Measurement's or ColdStart's JSON)."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Judged:
    """A same-host judge's decision on one benchmark, as the results file keeps it."""

    benchmark: str
    baseline_digest: str
    outcome: str
    reason: str
    comparison: Comparison

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "baseline_digest": self.baseline_digest,
            "outcome": self.outcome,
            "reason": self.reason,
            "comparison": self.comparison.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Judged:
        return cls(
            str(data["benchmark"]),
            str(data["baseline_digest"]),
            str(data["outcome"]),
            str(data["reason"]),
            Comparison.from_json(data["comparison"]),
        )


def with_judgements(entries: Sequence[Entry], judged: Sequence[Judged]) -> list[Entry]:
    """``entries`` with each judged benchmark's decision in ``extra_info.kernelgate_judge``."""
    by_id = {j.benchmark: j for j in judged}
    out = []
    for entry in entries:
        found = by_id.get(entry.measurement.benchmark)
        if found is not None:
            extra = dict(entry.benchmark.get("extra_info") or {})
            extra[JUDGE_KEY] = found.to_json()
            entry = dataclasses.replace(entry, benchmark={**entry.benchmark, "extra_info": extra})
        out.append(entry)
    return out


def judgement_of(entry: Entry) -> Judged | None:
    extra = entry.benchmark.get("extra_info") or {}
    data = extra.get(JUDGE_KEY) if isinstance(extra, Mapping) else None
    if not isinstance(data, Mapping):
        return None
    try:
        return Judged.from_json(data)
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Pair:
    """One benchmark of the current file and what became of it."""

    case: Case
    comparison: Comparison | None = None  # None: not compared (``case`` says why)
    base: Entry | None = None
    current: Entry | None = None
    cold: tuple[ColdStart, ColdStart] | None = None  # a cold start: its baseline and current records
    note: str = ""  # where the verdicts come from, when not from comparing the two files here


def _fix(base: Measurement, current: Entry) -> str:
    """The command for a pair that cannot be compared: the baseline of the right architecture, a
    new measurement, or a re-recorded baseline."""
    m = current.measurement
    if base.arch != m.arch:
        return f"kernelgate compare baselines/{m.arch}/0001_kernelgate.json <current file>"
    if m.unreliable_reasons or integrity.check_record(m):
        return f"pytest {shlex.quote(current.fullname)} (measure it again)"
    return record_command(current.fullname)


def _recorded(base: Entry, current: Entry) -> tuple[Comparison | None, str]:
    """The run's same-host verdicts of ``current`` against ``base``, where it recorded them."""
    judged = judgement_of(current)
    if judged is None:
        return None, ""
    cold = coldverdict.record_of(base)
    record = cold.to_json() if cold is not None else base.measurement.to_json()
    if judged.baseline_digest != digest(record):
        return None, (
            "the run's same-host verdict was against another baseline record, so this pair was "
            "compared afresh"
        )
    return judged.comparison, f"verdicts of the run's same-host judge: {judged.outcome}: {judged.reason}"


def judge(
    base: Mapping[str, Entry],
    current: Mapping[str, Entry],
    gate: GateConfig,
    where: str,
    *,
    processes: bool = False,
) -> list[Pair]:
    """Every benchmark of ``current`` against its entry in ``base`` (a file at ``where``).
    ``processes``: the two files are rounds of one A/B on one runner (``kernelgate ab``), judged as
    the same-host judge judges them, the process as the unit (:func:`process_rule`)."""
    rule: Judge | None = None
    if processes:

        def rule(b: Dist, c: Dist, t: Threshold) -> Judgement:
            return process_rule(b, c, t, alpha=gate.alpha)

    pairs = []
    for entry in current.values():
        m, fix = entry.measurement, record_command(entry.fullname)
        match = yardstick.match(base, entry)
        if match is None:
            why = f"no baseline entry in {where}"
            pairs.append(Pair(Case(m.benchmark, Status.NO_BASELINE, why, fix), current=entry))
            continue
        old, new = coldverdict.record_of(match), coldverdict.record_of(entry)
        if (old is None) != (new is None):
            why = "one of the two is a cold start, the other a kernel benchmark"
            pairs.append(Pair(Case(m.benchmark, Status.NOT_COMPARED, why, fix), None, match, entry))
            continue
        recorded, note = _recorded(match, entry)
        if old is not None and new is not None:
            pairs.append(_cold(match, entry, old, new, gate, recorded, note))
            continue
        problems = yardstick.pair_problems(match, m, gate)
        if problems:
            status = Status.UNRELIABLE if m.unreliable_reasons else Status.NOT_COMPARED
            case = Case(m.benchmark, status, "; ".join(problems), _fix(match.measurement, entry))
            pairs.append(Pair(case, None, match, entry))
            continue
        if recorded is not None:
            comparison = recorded
        elif processes:  # each process's host speed out of its layers' host times, as the judge does
            found = settled.judged_ab(match.measurement, m, gate)
            # the A/B measures no more: a figure that may be slower is a doubt, unless the runner's
            # two speeds explain it
            n = min(len(match.measurement.total.round_medians), len(m.total.round_medians))
            comparison = samehost.final_doubts(found.ab, n, found.each, found.speeds, found.probes)
        else:
            comparison = compare(match.measurement, m, gate, judge=rule)
        pairs.append(Pair(Case.of(comparison, entry.fullname), comparison, match, entry, note=note))
    return pairs


def _cold(
    base: Entry,
    current: Entry,
    old: ColdStart,
    new: ColdStart,
    gate: GateConfig,
    recorded: Comparison | None,
    note: str,
) -> Pair:
    if new.error and not old.error:
        why = f"cold start {new.id} failed {new.error} (the baseline's runs completed)"
        return Pair(Case(new.id, Status.NOT_COMPARED, why), None, base, current, (old, new))
    if old.error or new.error:
        why = f"baseline {old.error or 'ok'}; now {new.error or 'ok'}"
        fix = record_command(current.fullname)
        return Pair(Case(new.id, Status.NOT_COMPARED, why, fix), None, base, current, (old, new))
    comparison = recorded or coldverdict.compare_scenario(old, new, gate)
    return Pair(Case.of(comparison, current.fullname), comparison, base, current, (old, new), note)


def nothing_compared(pairs: Sequence[Pair], base_path: str, current_path: str, base_count: int) -> str | None:
    """Why two files compared nothing (None when a pair was compared), naming the files, the counts
    and the command that records a baseline."""
    if any(p.comparison is not None for p in pairs):
        return None
    counts: dict[str, int] = {}
    for p in pairs:
        counts[p.case.status.value] = counts.get(p.case.status.value, 0) + 1
    listed = ", ".join(f"{n} {what}" for what, n in counts.items()) or "it has none"
    return (
        f"kernelgate: nothing was compared: {len(pairs)} benchmark(s) in {current_path} ({listed}), "
        f"{base_count} in {base_path}. A comparison of nothing checked nothing. Record a baseline on the "
        f"machine that ran {current_path}: {record_command()}, and commit the "
        "baselines/<arch>/ folder it names."
    )


def decide(
    pairs: Sequence[Pair], gate: GateConfig, base_path: str, current_path: str, base_count: int
) -> tuple[ExitDecision, str | None]:
    """The exit of two files judged (:func:`kernelgate.verdict.policy.decide`, as a run's), and
    why they compared nothing (None when they compared something)."""
    empty = nothing_compared(pairs, base_path, current_path, base_count)
    return policy.decide([p.case for p in pairs], policy.ExitPolicy.of(gate), empty), empty


def lines(pair: Pair, where: str, every_layer: bool = False) -> list[str]:
    """What ``kernelgate compare`` says about one benchmark of the current file (``where``: the
    baseline file's name; ``every_layer``: a table of every layer too)."""
    case, comparison = pair.case, pair.comparison
    out = [f"{case.benchmark}: {pair.note}"] if pair.note else []
    if comparison is None or pair.base is None or pair.current is None:
        return [
            *out,
            f"{case.benchmark}: not compared: {case.reason}",
            *([f"  fix: {case.fix}"] if case.fix else []),
        ]
    if pair.cold is not None:
        old, new = pair.cold
        if not comparison.failed:
            return [*out, coldverdict.summary(comparison)]
        changes = envdiff.changes(old.environment, new.environment)
        return [
            *out,
            coldverdict.scenario_failure(comparison, old, new, where, changes, target=pair.current.fullname),
        ]
    types = {lay.name: lay.type for lay in pair.current.measurement.layers}
    out += [layer_table(comparison, types)] if every_layer else []
    if case.status is Status.PASS:
        return [*out, f"{comparison.benchmark}: pass"]
    if case.status is Status.REGRESSION:
        changes = envdiff.changes(pair.base.measurement.environment, pair.current.measurement.environment)
        return [*out, failure_message(comparison, types, where, changes, target=pair.current.fullname)]
    return [*out, policy.describe(case)]
