"""Rounds of a baseline (separate processes, ``--kernelgate-append``) that disagree.

A round whose median is further from the median round than noise explains (``round_tolerance``
of it, and more than the figure's floor) is refused when it is saved, and a baseline holding one is
no yardstick: a round recorded while something else ran on the GPU would otherwise become the
"noise" that mutes every later verdict. A user who knows why a round differs keeps it with
``--kernelgate-keep-round REASON``; the reason is stored in the entry (``extra_info``).

The spread of the rounds that the verdict uses as noise comes from the majority of rounds
(:func:`majority_spread`), so even a kept outlier does not mute it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernelgate.baseline.errors import BaselineError
from kernelgate.config import HOST_COUPLED, GateConfig, Scope, append_command, record_rounds_command
from kernelgate.measure.results import Dist, Measurement
from kernelgate.units import duration

KEPT_KEY = "kernelgate_kept_rounds"  # in a baseline entry's extra_info: [{"round": 3, "reason": "..."}]
KEEP_OPTION = "--kernelgate-keep-round"


def allowed_us(center: float, tolerance: float, floor_us: float) -> float:
    """How far a round median may lie from the median round ``center`` and still agree."""
    return max(tolerance * center, floor_us)


def majority_spread(dist: Dist, center: float) -> float:
    """The distance from ``center`` within which the majority of the round medians lie, in µs: the
    largest distance of the closest ``n // 2 + 1`` rounds (0 for a single round). One outlier round
    of three, or two of five, does not move it."""
    return majority_distance(dist.round_medians, center)


def majority_distance(medians: Sequence[float], center: float) -> float:
    """:func:`majority_spread` of the round medians ``medians`` (0 for fewer than two)."""
    if len(medians) < 2:
        return 0.0
    distances = sorted(abs(m - center) for m in medians)
    return distances[len(medians) // 2]


@dataclass(frozen=True)
class Disagreement:
    """Round ``round`` (1-based) of ``rounds`` of one figure lies ``median_us`` from a median round
    of ``center_us``, further than ``allowed_us``."""

    figure: str
    round: int
    rounds: int
    median_us: float
    center_us: float
    allowed_us: float

    def __str__(self) -> str:
        pct = 100.0 * (self.median_us - self.center_us) / self.center_us if self.center_us else None
        moved = f"{pct:+.0f} %" if pct is not None else duration(self.median_us - self.center_us, signed=True)
        return (
            f"{self.figure}: round {self.round} of {self.rounds} took {duration(self.median_us)}, the "
            f"{'other' if self.rounds == 2 else 'median'} round {duration(self.center_us)} ({moved}; noise "
            f"explains {duration(self.allowed_us)})"
        )


def _center(medians: tuple[float, ...]) -> float:
    """The round the others are measured from: the median round; of two, the faster (something else
    on the machine slows a round down, it never speeds one up)."""
    return min(medians) if len(medians) == 2 else statistics.median(medians)


def _figures(m: Measurement) -> Iterator[tuple[str, Scope, str, Dist]]:
    """The device-side figures: host-coupled ones (the ``input`` copy and the pipeline's CPU stages,
    cold starts) move between processes of one host by tens of % without anything else running
    (docs/faults.md): the same-host judge decides them, a round is not refused for them."""
    if not m.layers:  # a cold start: its phases are all host work
        return
    yield "total", Scope.TOTAL, "total", m.total
    for lay in m.layers:
        if lay.name not in HOST_COUPLED:
            yield f"layer {lay.name}", Scope.LAYER, lay.name, lay.time
    for k in m.kernels:
        if k.layer not in HOST_COUPLED:
            yield f"kernel {k.key}", Scope.KERNEL, k.key, k.time


def disagreements(
    m: Measurement, config: GateConfig, kept: Mapping[int, str] | None = None
) -> list[Disagreement]:
    """The rounds of ``m`` (not those in ``kept``) whose median lies further from the median round
    than ``config.round_tolerance`` of it and than the figure's floor."""
    out = []
    for figure, scope, name, dist in _figures(m):
        medians = dist.round_medians
        if len(medians) < 2:
            continue
        center = _center(medians)
        floor = config.threshold(m.arch, m.benchmark, scope, name).floor_us
        allowed = allowed_us(center, config.round_tolerance, floor)
        for i, median in enumerate(medians, start=1):
            if abs(median - center) > allowed and i not in (kept or {}):
                out.append(Disagreement(figure, i, len(medians), median, center, allowed))
    return out


def kept_rounds(benchmark: Mapping[str, Any]) -> dict[int, str]:
    """Round (1-based) -> the reason it was kept, from a baseline entry's pytest-benchmark fields.
    Raises ValueError or TypeError where the list is malformed."""
    extra = benchmark.get("extra_info") or {}
    raw = extra.get(KEPT_KEY, [])
    if not isinstance(raw, list):
        raise TypeError(f"extra_info.{KEPT_KEY} must be a list, not {type(raw).__name__}")
    kept: dict[int, str] = {}
    for item in raw:
        number, reason = item["round"], item["reason"]
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ValueError(f"extra_info.{KEPT_KEY}: round {number!r} must be a whole number from 1")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"extra_info.{KEPT_KEY}: round {number} has no reason")
        kept[number] = reason
    return kept


def keeping(benchmark: Mapping[str, Any], rounds: Iterable[int], reason: str) -> dict[str, Any]:
    """``benchmark`` (pytest-benchmark's fields of an entry) with ``rounds`` kept for ``reason``."""
    kept = kept_rounds(benchmark) | dict.fromkeys(rounds, reason)
    extra = dict(benchmark.get("extra_info") or {})
    extra[KEPT_KEY] = [{"round": r, "reason": kept[r]} for r in sorted(kept)]
    return {**benchmark, "extra_info": extra}


def refusal(benchmark: str, found: list[Disagreement], target: str, hosts: str = "") -> str:
    """Why the rounds of ``benchmark`` are refused, with the numbers, and the commands that fix it
    (``target``: the test's node id); ``hosts``: :func:`other_hosts_note` where they came from
    several hosts."""
    rounds = sorted({d.round for d in found})
    listed = "; ".join(str(d) for d in found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
    which = " and ".join(map(str, rounds))
    return (
        f"{benchmark}: round(s) {which} disagree with the others beyond what noise explains ({listed}). "
        + (f"{hosts} " if hosts else "")
        + f"Measure again: add a round with {append_command(target)} (or record it "
        f"afresh: {record_rounds_command(target)}); or, if the difference is "
        f"real, keep the round(s) and say why: {KEEP_OPTION} 'REASON'. round_tolerance in [tool.kernelgate] "
        "sets how far rounds may differ."
    )


def _rounds(numbers: list[int]) -> str:
    return f"round{'s' * (len(numbers) != 1)} {', '.join(map(str, numbers))}"


def other_hosts_note(m: Measurement, disagreeing: Iterable[int]) -> str:
    """Where the rounds of ``m`` come from more than one host: which rounds came from which host,
    and what to do about rounds that disagree (``disagreeing``, 1-based); empty otherwise (one host,
    or no round with a fingerprint)."""
    hosts = m.round_hosts
    by_host: dict[str | None, list[int]] = {}
    for number, host in enumerate(hosts, start=1):
        by_host.setdefault(None if host is None else host.id, []).append(number)
    if len(by_host) < 2:
        return ""
    first = {h.id: h for h in reversed([h for h in hosts if h is not None])}
    listed = "; ".join(
        f"{_rounds(numbers)}: "
        + (first[key].short() if key is not None else "a host without a fingerprint (an older kernelgate)")
        for key, numbers in by_host.items()
    )
    odd = [hosts[n - 1] for n in sorted(set(disagreeing)) if 0 < n <= len(hosts)]
    reason = next((f"another host: {h.id}" for h in odd if h is not None), "another host")
    may = "may come" if None in by_host else "come"
    return (
        f"These rounds {may} from different hosts ({listed}): a host's offset is not noise, and "
        "round_tolerance is not widened for it. To keep a host's round(s) anyway, say so: "
        f"{KEEP_OPTION} '{reason}' (the noise of a verdict comes from the majority of rounds, so a "
        "kept round mutes nothing); or let one host record this baseline, and gate other runners "
        "through the same-host A/B (confirm = true)."
    )


def check_method(old: Measurement, new: Measurement, fullname: str) -> None:
    """A round appended to a baseline is measured as its rounds were: in as many places of GPU memory
    (kernelgate.measure.placement), else :class:`BaselineError` with the command that records anew."""
    if old.placements == new.placements:
        return
    raise BaselineError(
        f"{fullname}: the baseline's rounds were measured in {old.placements} place(s) of GPU memory, this "
        f"round in {new.placements} (kernelgate.measure.placement): rounds of two methods do not make one "
        f"baseline. Record it anew, without --kernelgate-append: {record_rounds_command()}"
    )
