"""Each process of a same-host A/B, figure by figure: the medians a reader checks a verdict against,
and the standard error of the move that the judge's grey zone allows for
(:mod:`kernelgate.verdict.samehost`). The process is the unit: one median a process, a round each."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from kernelgate.config import Scope
from kernelgate.measure.results import Dist, Measurement

Key = tuple[Scope, str]


def process_noise(base: Measurement, head: Measurement) -> dict[Key, float]:
    """Per total, layer, host side of a layer and latency, the standard error (µs) of the difference
    of the two sides' means of their process medians: how far the A/B's move may be off, given how
    much processes differ."""
    return {key: _standard_error(b.round_medians, h.round_medians) for key, b, h in _paired(base, head)}


def process_medians(
    base: Measurement, head: Measurement
) -> dict[Key, tuple[tuple[float, ...], tuple[float, ...]]]:
    """Per total, latency, layer and host side of a layer: each process's median, base and head, in
    the order of the rounds (what a reader checks a same-host verdict against)."""
    return {key: (b.round_medians, h.round_medians) for key, b, h in _paired(base, head)}


def _paired(base: Measurement, head: Measurement) -> list[tuple[Key, Dist, Dist]]:
    """The total, the latency, and each layer and host side of a layer that both sides have."""
    pairs = [((Scope.TOTAL, "total"), base.total, head.total), ((Scope.WALL, "wall"), base.wall, head.wall)]
    for scope, b_layers, h_layers in ((Scope.LAYER, base.layers, head.layers),
                                      (Scope.HOST, base.host_layers, head.host_layers)):  # fmt: skip
        found = {lay.name: lay.time for lay in h_layers}
        pairs += [((scope, lay.name), lay.time, found[lay.name]) for lay in b_layers if lay.name in found]
    return pairs


def _standard_error(base: Sequence[float], head: Sequence[float]) -> float:
    if len(base) < 2 or len(head) < 2:
        return 0.0
    return math.sqrt(statistics.variance(base) / len(base) + statistics.variance(head) / len(head))
