"""Each process's host speed taken out of the same-host judge's host times (hostspeed.per_process).

Shaped like the A/A run on H100 host bf2ad080 (2026-11-26) that failed yolov8n fp32 on the host time of
10 layers (+57 … +71 %): the host time of each layer (µs, the base's medians), the factor of each process
(the median over its layers of its host time against the base side pooled), and the latency of each
process, as its samehost.json kept them. Four of the head's six processes ran slow, one of the base's.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from factories import measurement

from kernelgate.config import GateConfig, Scope
from kernelgate.measure.results import Dist, LayerStat, Measurement, combine
from kernelgate.report.markdown import benchmark_section as markdown_section
from kernelgate.verdict import hostspeed
from kernelgate.verdict.compare import Verdict, compare
from kernelgate.verdict.reported import merged
from kernelgate.verdict.samehost import Decision, Outcome, decide

HOST_US = {"input": 31.9, "model.0": 95.2, "model.1": 95.1, "model.2": 318.1, "model.3": 76.2,
           "model.4": 461.1, "model.5": 74.7, "model.6": 449.4, "model.7": 72.2, "model.8": 302.4,
           "model.9": 204.7, "model.10": 22.4, "model.11": 14.6, "model.12": 301.1, "model.13": 16.1,
           "model.14": 12.8, "model.15": 290.6, "model.16": 72.6, "model.17": 13.9, "model.18": 286.1,
           "model.19": 73.0, "model.20": 13.7, "model.21": 284.9, "model.22": 1365.4}  # fmt: skip
BASE_SPEED = [1.64, 1.0, 0.93, 0.98, 1.15, 0.98]
HEAD_SPEED = [1.58, 1.11, 1.79, 2.03, 1.4, 1.77]
BASE_WALL = [8174.2, 5152.4, 4658.2, 4997.8, 4633.5, 5765.5]
HEAD_WALL = [8222.2, 5427.7, 4940.1, 9269.3, 7065.9, 8239.8]


def process(speed: float, wall: float, seed: int, slower: dict[str, float] | None = None) -> Measurement:
    """One process: steady device-side layers, each layer's host time at this process's ``speed``
    (±3 % over 20 iterations), ``slower``: a layer's host time times a factor (the change)."""
    rng = random.Random(seed)

    def samples(us: float, jitter: float) -> tuple[float, ...]:
        return tuple(round(us * (1 + rng.uniform(-jitter, jitter)), 3) for _ in range(20))

    device = list(samples(100.0, 0.001))
    m = measurement(
        layers={"model.0": device}, kernels={"model.0.conv :: gemm": device}, total=device,
        wall=list(samples(wall, 0.03)),
    )  # fmt: skip
    host = tuple(
        LayerStat(name, "Conv", Dist(samples(us * speed * (slower or {}).get(name, 1.0), 0.03)))
        for name, us in HOST_US.items()
    )
    return replace(m, host_layers=host)


def judge(head_slower: dict[str, float] | None = None, n: int = 6) -> tuple[Outcome, str]:
    config = GateConfig()
    base = [process(s, w, seed=i) for i, (s, w) in enumerate(zip(BASE_SPEED, BASE_WALL, strict=True))][:n]
    head = [
        process(s, w, 10 + i, head_slower) for i, (s, w) in enumerate(zip(HEAD_SPEED, HEAD_WALL, strict=True))
    ][:n]
    stored = process(1.0, 5000.0, seed=99)
    screen = compare(stored, head[0], config)
    decision = decide(screen, stored, base, head, config, final=True)
    assert decision is not None
    # what the reports and the exit status read agrees with the outcome
    assert merged(screen, decision).failed is (decision.outcome is not Outcome.PASS), decision
    return decision.outcome, decision.reason


def test_each_processs_speed_comes_out_and_the_a_a_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, reason = judge()
    assert outcome is Outcome.PASS, reason
    with monkeypatch.context() as m:  # the host times as measured: the run's false failure
        m.setattr(hostspeed, "per_process", lambda b, h: (b, h, ((), ())))
        m.setattr("kernelgate.verdict.bimodal.explained", lambda *args: None)
        outcome, reason = judge()
        assert outcome is Outcome.REGRESSION and "host model.22 +" in reason, reason


def test_one_layer_slower_on_the_host_still_fails_and_names_the_speeds() -> None:
    # a time.sleep-like change: model.9's host time +80 % in every head process, the runner as above
    outcome, reason = judge({"model.9": 1.8})
    assert outcome is Outcome.REGRESSION, reason
    assert reason.startswith("base -> head on this runner: host model.9 +")
    assert "host times at each process's speed: base 0.9" in reason and "head 1.1" in reason


def test_the_factors_are_each_process_against_the_base_pooled() -> None:
    base = [process(s, 5000.0, seed=i) for i, s in enumerate((1.0, 1.0, 1.6))]
    head = [process(s, 5000.0, seed=10 + i) for i, s in enumerate((2.0, 1.0, 1.0))]
    _, h, (fb, fh) = hostspeed.per_process(combine(base), combine(head))
    assert [round(f, 1) for f in fb] == [1.0, 1.0, 1.6] and [round(f, 1) for f in fh] == [2.0, 1.0, 1.0]
    slow = h.host_layer("model.22")
    assert slow is not None
    first = slow.time.round_samples()[0]  # the head's first process, at twice the speed, divided by it
    assert statistics.median(first) == pytest.approx(HOST_US["model.22"], rel=0.05)
    assert h.wall == combine(head).wall and h.layers == combine(head).layers  # latency, GPU: as measured
    assert h.host_layer("input") == combine(head).host_layer("input")  # a host-coupled stage: as measured
    graph = replace(combine(head), host_layers=())  # no host times (a CUDA-graph replay): as it is
    assert hostspeed.per_process(combine(base), graph)[1] == graph


def test_kernelgate_ab_takes_each_processs_speed_out_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from factories import V8, entry

    from kernelgate import offline

    base = combine(
        [process(s, w, seed=i) for i, (s, w) in enumerate(zip(BASE_SPEED, BASE_WALL, strict=True))]
    )
    head = combine(
        [process(s, w, seed=10 + i) for i, (s, w) in enumerate(zip(HEAD_SPEED, HEAD_WALL, strict=True))]
    )

    def verdict(slower: dict[str, float] | None = None) -> list[str]:
        now = head
        if slower:
            runs = zip(HEAD_SPEED, HEAD_WALL, strict=True)
            now = combine([process(s, w, seed=10 + i, slower=slower) for i, (s, w) in enumerate(runs)])
        (pair,) = offline.judge(
            {V8: entry(V8, base)}, {V8: entry(V8, now)}, GateConfig(), "x", processes=True
        )
        assert pair.comparison is not None
        return [f"{d.scope.value} {d.name}" for d in pair.comparison.failures]

    assert verdict() == []
    assert verdict({"model.9": 1.8}) == ["host model.9"]
    with monkeypatch.context() as m:  # the host times as measured: the same false failure as the judge's
        m.setattr(hostspeed, "per_process", lambda b, h: (b, h, ((), ())))
        assert verdict() == []  # the runner's two speeds alone explain these layers
        m.setattr("kernelgate.verdict.bimodal.explained", lambda *args: None)
        assert "host model.22" in verdict()


def test_a_host_side_regression_the_runners_two_speeds_explain_passes_in_the_reports_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the per-process speed left in: the process test finds 10 layers regressed; the two speeds
    # explain them, and the comparison the reports read shows them unchanged, saying why
    monkeypatch.setattr(hostspeed, "per_process", lambda b, h: (b, h, ((), ())))
    config = GateConfig()
    base = [process(s, w, seed=i) for i, (s, w) in enumerate(zip(BASE_SPEED, BASE_WALL, strict=True))]
    head = [process(s, w, 10 + i) for i, (s, w) in enumerate(zip(HEAD_SPEED, HEAD_WALL, strict=True))]
    stored = process(1.0, 5000.0, seed=99)
    screen = compare(stored, head[0], config)
    decision = decide(screen, stored, base, head, config, final=True)
    assert decision is not None and decision.outcome is Outcome.PASS, decision
    assert decision.ab is not None and not decision.ab.failed
    shown = merged(screen, decision)
    assert not shown.failed
    assert "host model.22: the processes of both sides ran at different speeds" in decision.reason


def test_the_judges_records_decide_again_offline_as_they_decided(tmp_path: Path) -> None:
    from kernelgate.plugin import evidence
    from kernelgate.plugin.samehost import KERNEL, Suspect

    config = GateConfig()
    base = [process(s, w, seed=i) for i, (s, w) in enumerate(zip(BASE_SPEED, BASE_WALL, strict=True))]
    head = [
        process(s, w, 10 + i, {"model.9": 1.8})
        for i, (s, w) in enumerate(zip(HEAD_SPEED, HEAD_WALL, strict=True))
    ]
    stored = process(1.0, 5000.0, seed=99)
    suspect = Suspect(
        "benchmarks/test_yolo.py::test_yolo[x]", KERNEL, compare(stored, head[0], config), stored.to_json()
    )
    first = decide(suspect.screen, stored, base, head, config, final=True)
    evidence.keep(
        tmp_path, [(suspect.to_json(), True, [m.to_json() for m in base], [m.to_json() for m in head])]
    )
    assert (tmp_path / evidence.FILE).is_file()  # the medians, for a person
    (kept,) = evidence.read_records(tmp_path / evidence.RECORDS)
    again = Suspect.from_json(kept["suspect"])
    b = [Measurement.from_json(r) for r in kept["base"]]
    h = [Measurement.from_json(r) for r in kept["head"]]
    replayed = decide(again.screen, Measurement.from_json(again.baseline), b, h, config, final=True)
    assert first is not None and replayed is not None
    assert (replayed.outcome, replayed.reason) == (first.outcome, first.reason)
    assert replayed.outcome is Outcome.REGRESSION


# The A/A run on H100 host f041c02a (2026-11-26, tree 64ec678) that left yolov8n fp32's latency
# inconclusive after 6 processes a side: each process's latency (µs) and host speed factor, as its
# samehost-records.json.xz kept them
AA3_BASE_WALL = [8879.0, 5329.0, 9248.0, 6888.0, 4934.0, 6478.0]
AA3_HEAD_WALL = [9027.0, 8998.0, 6638.0, 7734.0, 9716.0, 8533.0]
AA3_BASE_SPEED = [1.19, 0.65, 1.41, 1.0, 0.72, 1.0]
AA3_HEAD_SPEED = [1.73, 1.36, 1.61, 1.27, 1.4, 1.17]


def test_a_latency_doubt_says_each_processs_speed_and_the_reports_say_inconclusive() -> None:
    """The latency is judged as measured (a change that slows every layer's host side alike moves the
    factors too), so this runner's spread leaves it a doubt; the doubt names the factors and the
    latency at each process's speed, and the PR comment's headline, its row and the terminal call it
    not settled: not "no regression", not a 🔴 regression, not "re-record"."""
    from kernelgate.report.markdown import headline
    from kernelgate.report.terminal import failure_message
    from kernelgate.verdict.diff import build

    config = GateConfig()
    base = [process(s, w, seed=i) for i, (s, w) in enumerate(zip(AA3_BASE_SPEED, AA3_BASE_WALL, strict=True))]
    head = [
        process(s, w, seed=10 + i) for i, (s, w) in enumerate(zip(AA3_HEAD_SPEED, AA3_HEAD_WALL, strict=True))
    ]
    stored = process(1.0, 5000.0, seed=99)
    screen = compare(stored, head[0], config)
    decision = decide(screen, stored, base, head, config, final=True)
    assert decision is not None and decision.outcome is Outcome.INCONCLUSIVE, decision
    assert "wall +" in decision.reason, decision.reason
    assert "base 0.65 … 1.41, head 1.17 … 1.73" in decision.reason, decision.reason
    at_speed = float(decision.reason.split("the latency at each process's speed ")[1].split(" %")[0])
    assert -12.0 < at_speed < -4.0, decision.reason  # wall / factor: 6870 (base) against 6353 µs (head)
    shown = merged(screen, decision)
    assert shown.failed and all(d.verdict is Verdict.INCONCLUSIVE for d in shown.failures), shown.failures
    diff = build(shown, stored, combine(head))
    line = headline([diff])
    assert line.startswith("❌") and "1 inconclusive" in line, line
    section = "\n".join(markdown_section(diff))
    assert "| ❔ | latency (wall time of a step)" in section and "🔴" not in section, section
    message = failure_message(shown, {}, "baselines/x.json", target="benchmarks/test_yolo.py::test_yolo[x]")
    assert "not settled on this runner" in message and "re-record" not in message, message
    assert "the host side of" not in message, message  # the layers the A/B settled are unchanged
    assert "pytest 'benchmarks/test_yolo.py::test_yolo[x]'" in message, message


def test_a_latency_doubt_the_screen_did_not_fail_is_shown_on_the_latency_not_the_total() -> None:
    """Against another host's baseline the screen's latency may be within its threshold while base and
    head on this runner leave it in doubt (4 x H200, 2026-11-27: yolov8n fp32, wall +10.1 % after 6
    processes a side): the reports show the latency's A/B in doubt, host-side, not the total GPU time
    (+0.5 %) as "over threshold" and GPU-side, which is what they showed."""
    from kernelgate.report.terminal import failure_message
    from kernelgate.verdict.diff import build

    config = GateConfig()
    base = [process(s, w, seed=i) for i, (s, w) in enumerate(zip(AA3_BASE_SPEED, AA3_BASE_WALL, strict=True))]
    head = [
        process(s, w, seed=10 + i) for i, (s, w) in enumerate(zip(AA3_HEAD_SPEED, AA3_HEAD_WALL, strict=True))
    ]
    # the stored baseline as the first head process measured: nothing over its threshold on the screen
    stored = process(AA3_HEAD_SPEED[0], AA3_HEAD_WALL[0], seed=99)
    screen = compare(stored, head[0], config)
    assert not screen.failures, screen.failures
    decision = decide(screen, stored, base, head, config, final=True)
    assert decision is not None and decision.outcome is Outcome.INCONCLUSIVE, decision
    shown = merged(screen, decision)
    (doubt,) = [d for d in shown.deltas if d.verdict is Verdict.INCONCLUSIVE]
    assert doubt.scope is Scope.WALL, doubt
    assert decision.ab is not None and (doubt.baseline_us, doubt.current_us) == next(
        (d.baseline_us, d.current_us) for d in decision.ab.deltas if d.scope is Scope.WALL
    )  # base and head on this runner
    assert doubt.note.startswith(decision.reason) and "against the stored baseline" in doubt.note, doubt.note
    section = "\n".join(markdown_section(build(shown, stored, combine(head))))
    assert "| ❔ | latency (wall time of a step)" in section and "| ❔ | **total**" not in section, section
    assert "**host-side**" in section, section
    message = failure_message(shown, {}, "baselines/x.json", target="benchmarks/test_yolo.py::test_yolo[x]")
    assert "the latency not settled on this runner" in message, message
    assert "GPU-side" not in message and "host-side" in message, message


# an A/A run on H100 host 4fde678d (2026-11-26), yolov8n fp32, 3 processes a side: every head process
# ran slow, and the latency failed +52.7 %; each process's host speed factor, and its latency (µs)
AA4_BASE_SPEED = [0.80, 1.0, 1.63]
AA4_HEAD_SPEED = [1.55, 1.46, 1.56]
AA4_BASE_WALL = [5317.0, 6826.0, 6202.0]
AA4_HEAD_WALL = [11114.0, 9469.0, 9102.0]


def decide_walls(
    base_speed: list[float],
    base_wall: list[float],
    head_speed: list[float],
    head_wall: list[float],
    final: bool,
) -> Decision | None:
    config = GateConfig()
    base = [process(s, w, seed=i) for i, (s, w) in enumerate(zip(base_speed, base_wall, strict=True))]
    head = [process(s, w, seed=10 + i) for i, (s, w) in enumerate(zip(head_speed, head_wall, strict=True))]
    stored = process(1.0, 5000.0, seed=99)
    return decide(compare(stored, head[0], config), stored, base, head, config, final=final)


def test_a_latency_the_processes_host_speeds_explain_is_a_doubt_not_a_regression() -> None:
    # the base ran a process as slow on the host side (1.63) as the head's typical one (1.55), and the
    # latency at each process's speed moved -2.4 %: more rounds, then a doubt, never a regression
    assert decide_walls(AA4_BASE_SPEED, AA4_BASE_WALL, AA4_HEAD_SPEED, AA4_HEAD_WALL, final=False) is None
    decision = decide_walls(AA4_BASE_SPEED, AA4_BASE_WALL, AA4_HEAD_SPEED, AA4_HEAD_WALL, final=True)
    assert decision is not None and decision.outcome is Outcome.INCONCLUSIVE, decision
    assert "wall +" in decision.reason, decision.reason
    assert "inside the noise of this runner" in decision.reason, decision.reason
    assert decision.ab is not None
    (wall,) = [d for d in decision.ab.deltas if d.scope is Scope.WALL]
    assert wall.verdict is Verdict.AMBIGUOUS, wall
    moved = float(wall.note.split("the latency at each process's speed moved ")[1].split(" %")[0])
    assert -6.0 < moved < 0.0, wall.note  # -2.4 % from the medians above; the samples jitter ±3 %


def test_a_latency_slower_than_each_processs_speed_explains_still_fails() -> None:
    # the same processes, the head's latency 30 % slower again: at each process's speed +27 %
    slower = [w * 1.3 for w in AA4_HEAD_WALL]
    decision = decide_walls(AA4_BASE_SPEED, AA4_BASE_WALL, AA4_HEAD_SPEED, slower, final=False)
    assert decision is not None and decision.outcome is Outcome.REGRESSION, decision
    assert "wall +" in decision.reason, decision.reason


def test_every_layers_host_side_slower_on_a_steady_runner_fails_on_the_latency() -> None:
    # a change that slows every layer's host side alike moves the head's factors: where the base's
    # processes never ran that slow, the latency is a regression, as measured
    decision = decide_walls([1.0, 0.97, 1.03], [5300.0, 5200.0, 5400.0], [1.5, 1.45, 1.55],
                            [7950.0, 7700.0, 8100.0], final=False)  # fmt: skip
    assert decision is not None and decision.outcome is Outcome.REGRESSION, decision
    assert "wall +" in decision.reason, decision.reason


def test_kernelgate_ab_calls_such_a_latency_a_doubt_too() -> None:
    from factories import V8, entry

    from kernelgate import offline

    def verdicts(head_wall: list[float]) -> dict[str, Verdict]:
        base = combine([process(s, w, seed=i) for i, (s, w) in enumerate(zip(AA4_BASE_SPEED, AA4_BASE_WALL,
                                                                            strict=True))])  # fmt: skip
        head = combine([process(s, w, seed=10 + i) for i, (s, w) in enumerate(zip(AA4_HEAD_SPEED, head_wall,
                                                                                strict=True))])  # fmt: skip
        (pair,) = offline.judge(
            {V8: entry(V8, base)}, {V8: entry(V8, head)}, GateConfig(), "x", processes=True
        )
        assert pair.comparison is not None
        return {f"{d.scope.value} {d.name}": d.verdict for d in pair.comparison.failures}

    assert verdicts(AA4_HEAD_WALL).get("wall wall") is Verdict.INCONCLUSIVE
    assert verdicts([w * 1.3 for w in AA4_HEAD_WALL]).get("wall wall") is Verdict.REGRESSED
