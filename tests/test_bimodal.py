"""A host-side doubt that the runner's own spread explains: processes of both sides at two speeds,
the fastest of each agreeing. Process medians of the A/A run on H100 host 5c7476c4 (2026-11-26,
samehost.json), round by round; that run failed unchanged code as inconclusive (`wall +25.0 %`)."""

from __future__ import annotations

import re

import pytest
from factories import process_step

from kernelgate.config import GateConfig, Scope, Threshold
from kernelgate.verdict import bimodal
from kernelgate.verdict.compare import Delta, Verdict, compare
from kernelgate.verdict.samehost import Outcome, decide, merged

AA_BASE = [4756.8, 5458.5, 5940.1, 7522.8, 5015.7, 7470.6]  # yolov8n fp32's step, µs
AA_HEAD = [5074.8, 7884.6, 4729.4, 7947.2, 5789.4, 8308.1]


def judged(base: list[float], head: list[float]) -> tuple[Outcome, str]:
    config = GateConfig()
    stored = process_step(9000.0, seed=99, jitter=0.02)
    b = [process_step(w, seed=i, jitter=0.02) for i, w in enumerate(base)]
    h = [process_step(w, seed=10 + i, jitter=0.02) for i, w in enumerate(head)]
    screen = compare(stored, h[0], config)
    decision = decide(screen, stored, b, h, config)
    assert decision is not None
    assert not merged(screen, decision).failed or decision.outcome is not Outcome.PASS
    return decision.outcome, decision.reason


def test_the_measured_a_a_passes_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, reason = judged(AA_BASE, AA_HEAD)
    assert outcome is Outcome.PASS, reason
    speeds = (
        r"wall: the processes of both sides ran at different speeds "
        r"\(base 47\d\d … 75\d\d, head 47\d\d … 8[23]\d\d µs\)"
    )
    assert re.search(speeds, reason), reason
    assert re.search(r"the fastest of each agree \(-0\.\d %\)", reason), reason
    # what the run said without this rule: inconclusive, the run failed
    monkeypatch.setattr(bimodal, "explained", lambda *args: None)
    outcome, reason = judged(AA_BASE, AA_HEAD)
    assert outcome is Outcome.INCONCLUSIVE and "wall +" in reason


def test_slow_processes_only_on_the_head_stay_a_doubt() -> None:
    base = [5480.0, 5520.0, 5500.0, 5510.0, 5490.0, 5530.0]
    head = [7000.0, 6700.0, 6750.0, 5500.0, 5505.0, 5495.0]
    outcome, reason = judged(base, head)
    assert outcome is Outcome.INCONCLUSIVE and "wall" in reason


def test_a_head_slower_in_its_fastest_process_too_is_not_the_runner() -> None:
    head = [w * 1.14 for w in AA_BASE]  # every process +14 %, the runner's two speeds kept
    outcome, reason = judged(AA_BASE, [head[i] for i in (1, 0, 3, 2, 5, 4)])
    assert outcome is not Outcome.PASS, reason
    assert "different speeds" not in reason


def test_only_host_side_figures_and_enough_processes() -> None:
    wall = Delta(Scope.WALL, "wall", "", 5000.0, 6000.0, Threshold(0.1, 50.0), Verdict.AMBIGUOUS)
    assert bimodal.explained(wall, AA_BASE, AA_HEAD) is not None
    layer = Delta(Scope.LAYER, "model.1", "", 5000.0, 6000.0, Threshold(0.1, 50.0), Verdict.AMBIGUOUS)
    assert bimodal.explained(layer, AA_BASE, AA_HEAD) is None  # device side: never
    assert bimodal.explained(wall, AA_BASE[:2], AA_HEAD[:2]) is None  # too few processes


def test_the_runners_two_speeds_settle_at_the_least_rounds_not_the_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # two speeds on both sides, more slow processes on the head: pooled +56 %, a doubt the runner
    # explains at the third round (the judge went on to its sixth for such figures on that host)
    config = GateConfig()
    stored = process_step(9000.0, seed=99, jitter=0.02)
    b = [process_step(w, seed=i, jitter=0.02) for i, w in enumerate([4760.0, 7600.0, 4800.0])]
    h = [process_step(w, seed=10 + i, jitter=0.02) for i, w in enumerate([4750.0, 7500.0, 7550.0])]
    screen = compare(stored, h[0], config)
    decision = decide(screen, stored, b, h, config)
    assert decision is not None and decision.outcome is Outcome.PASS, decision
    assert decision.rounds == 3 and "different speeds" in decision.reason
    with monkeypatch.context() as m:  # without the rule: grey, so more rounds
        m.setattr(bimodal, "explained", lambda *args: None)
        assert decide(screen, stored, b, h, config) is None
    # slow processes on the head alone: not explained, so more rounds (no decision yet)
    slow = [process_step(w, seed=20 + i, jitter=0.02) for i, w in enumerate([7000.0, 6800.0, 4800.0])]
    fast = [process_step(w, seed=30 + i, jitter=0.02) for i, w in enumerate([4760.0, 4790.0, 4770.0])]
    assert decide(compare(stored, slow[0], config), stored, fast, slow, config) is None
