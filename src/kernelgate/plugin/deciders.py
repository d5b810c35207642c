"""How the same-host judge decides each kind of suspect from its records, base and head: a kernel
benchmark by the process rule over its processes (:func:`kernelgate.verdict.samehost.decide`), a cold
start over its runs (:func:`decide_coldstart`). :class:`kernelgate.plugin.samehost.Judge` calls them
after each round; each returns the decision, or what keeps the suspect open."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kernelgate import replay
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.coldstart.phases import ColdStart
from kernelgate.config import Threshold
from kernelgate.measure.results import Dist, Measurement
from kernelgate.plugin.samehost import COLDSTART_MIN_ROUNDS, TURNS_KEY, Decider, Suspect
from kernelgate.verdict import samehost, settled
from kernelgate.verdict.compare import Judgement
from kernelgate.verdict.delta import process_rule

if TYPE_CHECKING:
    from kernelgate.plugin.session import State


def decide_kernel(state: State) -> Decider:
    cfg = state.config

    def decide(s: Suspect, base: Sequence[Mapping[str, Any]], head: Sequence[Mapping[str, Any]],
               final: bool) -> samehost.Decision | str:  # fmt: skip
        b, h = replay.reliable(base), replay.reliable(head)
        found = samehost.decide(s.screen, Measurement.from_json(s.baseline), b, h, cfg, final=final)
        return found if found is not None else settled.still_open(b, h, cfg)  # more rounds

    return decide


def decide_coldstart(state: State) -> Decider:
    """The same-host decision of a cold-start suspect, after rounds in both orders (base first, then
    head first: a machine that warms up during the first child must not favour one side): each phase
    by the rule of the kernel judge (:func:`kernelgate.verdict.delta.process_rule`) over every run of
    each side (each a fresh process) pooled, and over the median of each round's runs: the runs of
    one round share its time on the host, so one slow stretch of the runner must not decide alone
    (pooled alone, an A/A run read ``import torch`` +41 % on one side: docs/faults.md).
    Host-coupled: no offset check."""
    cfg = state.config

    def rule(b: Dist, c: Dist, t: Threshold) -> Judgement:
        return process_rule(b, c, t, alpha=cfg.alpha)

    def decide_one(s: Suspect, base: Sequence[Mapping[str, Any]], head: Sequence[Mapping[str, Any]],
                   final: bool) -> samehost.Decision | str:  # fmt: skip
        b = [ColdStart.from_json(r) for r in base]
        h = [ColdStart.from_json(r) for r in head]
        # a round whose sides took turns run by run holds both orders
        rounds = 1 if all(r.get(TURNS_KEY) for r in (*base, *head)) else COLDSTART_MIN_ROUNDS
        if not b or not h or min(len(b), len(h)) < rounds:
            return f"a round in each order first ({rounds})"
        n = min(sum(len(r.ok_runs) for r in b), sum(len(r.ok_runs) for r in h))
        if n < cfg.confirm_min_rounds:
            return f"{n} of at least {cfg.confirm_min_rounds} runs a side"
        # in a round of turns no stretch of the runner falls on one side's runs alone: each run is
        # then the unit the process test replicates over, as each is a fresh process
        b = [part for r, raw in zip(b, base, strict=True) for part in _apart(r, raw)]
        h = [part for r, raw in zip(h, head, strict=True) for part in _apart(r, raw)]
        ab = coldverdict.compare_rounds(b, h, cfg, judge=rule)
        each = coldverdict.run_values(b, h)  # every run a fresh process: the runner's two speeds
        found = samehost.settle(s.screen, ab, n, final=final, check_offset=False, processes=each)
        return (
            found
            if found is not None
            else "within the noise of their limits: " + settled.names(settled.grey(ab, None))
        )

    return decide_one


def _apart(record: ColdStart, raw: Mapping[str, Any]) -> list[ColdStart]:
    """``record`` as the rounds the process test counts: one per run where its round took turns."""
    if not raw.get(TURNS_KEY):
        return [record]
    return [dataclasses.replace(record, runs=(run,)) for run in record.runs]
