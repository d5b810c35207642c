"""The latency and host-coupled stages at each process's CPU speed (verdict.probespeed): a fixed loop
timed before each step says how fast the CPU ran, whatever the code.

Shaped like the A/A run on H100 host d04ac8b9 (2026-11-26) that failed yolo11n fp16 on its host
``input`` (+51.8 %) after 3 processes a side: each process's factor from its layers' host times, its
host ``input`` and its latency (µs), as its samehost-records.json.xz kept them. That run had no probe;
here, as where the CPU is what moved, the loops before the steps whose host times were taken run at
the speed the layers show, and those before the timed steps at the speed the latency shows (the
speed moved within a process: the head's first process, its layers at 1.71, timed its steps within
8 % of the base's).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import replace

import pytest
from factories import measurement
from test_own_rounds import screened
from test_process_speed import process as at_speed

from kernelgate.baseline import ownrounds
from kernelgate.config import GateConfig, Scope, Threshold
from kernelgate.machine import cpuspeed
from kernelgate.measure.results import Dist, LayerStat, Measurement, combine
from kernelgate.report.terminal import let_go_lines
from kernelgate.verdict import probespeed, settled
from kernelgate.verdict.compare import Basis, Comparison, Delta, Verdict, compare
from kernelgate.verdict.samehost import Decision, Outcome, decide

BASE_SPEED = [1.21, 0.95, 1.01]
HEAD_SPEED = [1.71, 1.16, 1.91]
BASE_INPUT = [63.5, 43.0, 58.3]
HEAD_INPUT = [80.1, 84.1, 92.9]
BASE_WALL = [11317.2, 10704.7, 11597.1]
HEAD_WALL = [12176.0, 13289.6, 21052.2]
PROBE_US = 300.0  # the loop on a CPU at speed 1
TYPICAL_WALL = 11300.0  # the latency at speed 1: the timed steps' loops follow the latency


def process(speed: float, wall: float, input_us: float, seed: int, probe: float | None) -> Measurement:
    """One process as :func:`test_process_speed.process` makes it (each layer's host time at ``speed``),
    its host ``input`` as given; the loop before each step whose host times were taken at ``speed``,
    before each timed step at ``probe`` (None: no probe, a record of an older kernelgate)."""
    m = at_speed(speed, wall, seed)
    rng = random.Random(seed + 1000)

    def samples(us: float) -> tuple[float, ...]:
        return tuple(round(us * (1 + rng.uniform(-0.03, 0.03)), 3) for _ in range(m.wall.n))

    host = tuple(
        LayerStat(lay.name, lay.type, Dist(samples(input_us))) if lay.name == "input" else lay
        for lay in m.host_layers
    )
    if probe is None:
        return replace(m, host_layers=host)
    timed, hosted = Dist(samples(PROBE_US * probe)), Dist(samples(PROBE_US * speed))
    return replace(m, host_layers=host, cpu_probe=timed, cpu_probe_host=hosted)


def judge(
    head_wall: list[float] = HEAD_WALL,
    head_input: list[float] = HEAD_INPUT,
    probed: bool = True,
    head_probe: list[float] | None = None,
    head_speed: list[float] = HEAD_SPEED,
) -> Decision:
    config = GateConfig()
    base = [
        process(s, w, i, seed=n, probe=w / TYPICAL_WALL if probed else None)
        for n, (s, w, i) in enumerate(zip(BASE_SPEED, BASE_WALL, BASE_INPUT, strict=True))
    ]
    probes = head_probe or [w / TYPICAL_WALL for w in HEAD_WALL]
    head = [
        process(s, w, i, seed=10 + n, probe=p if probed else None)
        for n, (s, w, i, p) in enumerate(zip(head_speed, head_wall, head_input, probes, strict=True))
    ]
    stored = base[1]
    decision = decide(compare(stored, head[0], config), stored, base, head, config, final=True)
    assert decision is not None
    return decision


def test_the_a_a_that_failed_on_the_input_copy_passes_at_each_processs_cpu_speed() -> None:
    decision = judge()
    assert decision.outcome is Outcome.PASS, decision.reason
    # the pass says what moved as measured and what it was at each step's CPU speed, with the loops
    said = decision.reason.split("; ", 1)[1]
    assert said.startswith("wall +") and " % as measured, " in said, decision.reason
    assert "at each step's CPU speed: the two sides' steps ran on CPUs of different speed" in said
    # the same processes without a probe, judged as measured: red (the run failed on the input copy;
    # with these samples the latency, +17 %, stays a doubt that the layers' factors cannot settle)
    unprobed = judge(probed=False)
    assert unprobed.outcome is not Outcome.PASS, unprobed.reason
    assert "wall +" in unprobed.reason or "host input +" in unprobed.reason, unprobed.reason


def test_an_input_copy_slower_than_the_cpu_explains_still_fails_and_says_so() -> None:
    # twice as slow as the run's: +84 % at each step's CPU speed, over its 50 % threshold; the head's
    # processes spread too much for 3 a side to call it a regression, so red as a doubt
    decision = judge(head_input=[v * 2.0 for v in HEAD_INPUT])
    assert decision.outcome is not Outcome.PASS, decision.reason
    assert "host input +" in decision.reason, decision.reason
    assert "at each step's CPU speed: a fixed loop took" in decision.reason, decision.reason


def test_every_layer_slower_on_a_steady_cpu_fails_on_the_latency() -> None:
    # a change that slows every layer's host side alike: the layers' factors move, the loop does not
    slower = [1.5 * s for s in BASE_SPEED]
    walls = [1.5 * w for w in BASE_WALL]
    steady = [w / TYPICAL_WALL for w in BASE_WALL]
    decision = judge(head_wall=walls, head_input=BASE_INPUT, head_speed=slower, head_probe=steady)
    assert decision.outcome is Outcome.REGRESSION, decision.reason
    assert "wall +" in decision.reason, decision.reason


def test_a_head_on_a_faster_cpu_is_not_failed_by_the_loop_alone() -> None:
    # the head's loops ran 30 % faster than the base's, its latency as measured the same: at each
    # step's CPU speed the head is slower, but a step follows the loop loosely (1.1x to 2.1x), and the
    # loop alone made two false regressions on an H200 machine (test_the_fleets_two_false_regressions_
    # ...): a pass that gives both numbers, not a regression
    fast = [0.7 * w / TYPICAL_WALL for w in BASE_WALL]
    decision = judge(head_wall=BASE_WALL, head_input=BASE_INPUT, head_speed=BASE_SPEED, head_probe=fast)
    assert decision.outcome is Outcome.PASS, decision.reason
    assert "% as measured, +" in decision.reason, decision.reason
    assert "over its limit only at each step's CPU speed (a fixed loop took base" in decision.reason
    assert decision.reason.endswith("not as measured"), decision.reason
    # the same head, slower as measured too (+40 %): the loop does not excuse it
    slower = judge(head_wall=[1.4 * w for w in BASE_WALL], head_input=BASE_INPUT, head_speed=BASE_SPEED,
                   head_probe=fast)  # fmt: skip
    assert slower.outcome is Outcome.REGRESSION, slower.reason
    assert "wall +" in slower.reason, slower.reason


def test_a_latency_judged_as_measured_is_settled_by_its_own_noise() -> None:
    # the head's loops 30 % faster, its latency +7.8 % as measured (limit 10 %): judged as measured,
    # the move must clear the limit by the as-measured spread of the processes, not by the narrower
    # spread at each step's CPU speed; here it does not, so the judge measures another round
    # (the base's processes agree, so the runner's two speeds do not explain it: bimodal)
    config = GateConfig()
    walls = ([11290.0, 11300.0, 11310.0], [12180.0, 12500.0, 11870.0])
    base = [process(1.0, w, 50.0, seed=n, probe=w / TYPICAL_WALL) for n, w in enumerate(walls[0])]
    head = [process(1.0, w, 50.0, seed=10 + n, probe=0.7 * w / TYPICAL_WALL) for n, w in enumerate(walls[1])]
    stored = base[1]
    screen = compare(stored, head[0], config)
    assert decide(screen, stored, base, head, config) is None  # not settled at 3 processes a side
    line = settled.still_open(base, head, config)
    assert line == "within the noise of their limits: wall +8.0 %", line  # as measured, said so
    # after the last round it passes, with both numbers
    final = decide(screen, stored, base, head, config, final=True)
    assert final is not None and final.outcome is Outcome.PASS, final
    assert "over its limit only at each step's CPU speed" in final.reason, final.reason
    # the figures a reader checks it against are the latency's processes as measured
    (wall_base, wall_head) = final.processes[(Scope.WALL, "wall")]
    assert wall_head == tuple(h.wall.median for h in head) and wall_base == tuple(b.wall.median for b in base)


def test_the_loop_alone_never_makes_a_regression() -> None:
    regressed = Delta(Scope.WALL, "wall", "wall", 100.0, 130.0, Threshold(0.1, 0.0), Verdict.REGRESSED)
    ab = Comparison("b", "cuda", (regressed,), fail_on=frozenset({Verdict.REGRESSED}))

    def judged(as_measured: Delta) -> Delta:
        (found,) = probespeed.measured_too(ab, replace(ab, deltas=(as_measured,))).deltas
        return found

    # over its limit as measured too, if not significant there (one process on a slow CPU): it stands
    assert judged(replace(regressed, current_us=115.0, verdict=Verdict.AMBIGUOUS)) == regressed
    # under its limit as measured: the figure as measured, with both numbers
    under = judged(replace(regressed, current_us=108.0, verdict=Verdict.UNCHANGED))
    assert (under.verdict, under.current_us) == (Verdict.UNCHANGED, 108.0)
    assert under.note.startswith(
        "wall +8.0 % as measured, +30.0 % at each step's CPU speed: over its limit only"
    )
    # a doubt at each step's CPU speed (over its limit, not significant) that was under its limit as
    # measured: no doubt either; one over its limit as measured stays a doubt
    doubt = replace(ab, deltas=(replace(regressed, verdict=Verdict.AMBIGUOUS),))
    (cleared,) = probespeed.measured_too(doubt, replace(ab, deltas=(replace(under, note=""),))).deltas
    assert (cleared.verdict, cleared.current_us) == (Verdict.UNCHANGED, 108.0)
    assert "over its limit only at each step's CPU speed" in cleared.note
    still = replace(regressed, current_us=115.0, verdict=Verdict.AMBIGUOUS)
    assert probespeed.measured_too(doubt, replace(ab, deltas=(still,))) == doubt
    # a device-side layer is not taken at the CPU's speed: left as it is
    layer = replace(regressed, scope=Scope.LAYER, name="model.2", layer="model.2")
    layered = replace(ab, deltas=(layer,))
    assert (
        probespeed.measured_too(layered, replace(layered, deltas=(replace(layer, current_us=100.0),)))
        == layered
    )


# A CUDA-graph replay of yolo11n fp16 on H200 host dd2a37c9 (a machine of 4 GPUs, an A/A job on
# each, 2026-11-26/27): each process's latency (µs), its host ``input`` copy and its loop (µs), and
# its GPU-busy time, as that A/A run's samehost-records.json.xz kept them. Every head process ran
# on a CPU 1.5-1.8x slower than the base's; the judge of that tree left a replay as measured and
# failed it: host input +120.7 %, wall +11.8 %.
GRAPH_BUSY = 1399.0
GRAPH_BASE = [(1690.9, 30.0, 222.2), (1660.7, 22.8, 240.3), (1650.2, 18.5, 220.6)]
GRAPH_HEAD = [(1851.9, 46.2, 388.1), (1883.8, 56.5, 392.5), (1861.6, 53.5, 339.9)]


def replay(wall: float, input_us: float, loop: float, seed: int, busy: float = GRAPH_BUSY) -> Measurement:
    """One process of a CUDA-graph replay: steady GPU time ``busy``, the latency, the host ``input``
    copy and the loop before each step (±2 %)."""
    rng = random.Random(seed)

    def samples(us: float) -> list[float]:
        return [round(us * (1 + rng.uniform(-0.02, 0.02)), 3) for _ in range(20)]

    device = [round(busy * (1 + rng.uniform(-0.001, 0.001)), 3) for _ in range(20)]
    m = measurement(layers={"model.0": device}, kernels={"model.0.conv :: gemm": device}, total=device,
                    wall=samples(wall))  # fmt: skip
    loops = Dist(tuple(samples(loop)))
    return replace(m, host_layers=(LayerStat("input", "input", Dist(tuple(samples(input_us)))),),
                   cpu_probe=loops, cpu_probe_host=loops)  # fmt: skip


def replays(
    sides: list[tuple[float, float, float]], seed: int, busy: float = GRAPH_BUSY
) -> list[Measurement]:
    return [replay(w, i, p, seed + n, busy) for n, (w, i, p) in enumerate(sides)]


def test_a_graph_replay_on_a_slower_cpu_is_taken_at_its_speed_and_its_gpu_time_as_measured() -> None:
    base, head = combine(replays(GRAPH_BASE, 0)), combine(replays(GRAPH_HEAD, 10))
    b, h, found = probespeed.adjust(base, head)
    assert min(found[1]) > 1.4 and max(found[0]) < 1.1, found  # the head's CPU ran slower
    assert h.wall.median < head.wall.median and h.wall.median > GRAPH_BUSY  # only the host part moved
    assert abs(h.wall.median / b.wall.median - 1.0) < 0.02, (b.wall.median, h.wall.median)
    assert h.host_layer("input").time.median < head.host_layer("input").time.median  # type: ignore[union-attr]
    assert h.layers == head.layers and h.busy == head.busy  # the device side untouched
    config = GateConfig()
    stored = replays(GRAPH_BASE, 20)[1]
    decision = decide(compare(stored, combine(replays(GRAPH_HEAD, 30)), config), stored,
                      replays(GRAPH_BASE, 0), replays(GRAPH_HEAD, 10), config, final=True)  # fmt: skip
    assert decision is not None and decision.outcome is Outcome.PASS, decision
    # the whole latency divided, as in eager, would take the GPU's 1.4 ms out with the CPU's speed
    whole = probespeed._divided(head.wall, head.cpu_probe, statistics.median(base.cpu_probe.samples))
    assert whole.median < 0.75 * b.wall.median


def test_on_a_cpu_the_whole_latency_follows_the_cpus_speed() -> None:
    # without a GPU the device's busy time is the CPU's own ops: none of the sample stays as measured
    base = combine([replace(m, device="cpu") for m in replays(GRAPH_BASE, 0)])
    head = combine([replace(m, device="cpu") for m in replays(GRAPH_HEAD, 10)])
    b, h, _ = probespeed.adjust(base, head)
    reference = statistics.median(base.cpu_probe.samples)
    assert h.wall == probespeed._divided(head.wall, head.cpu_probe, reference)
    assert h.wall.median < 0.8 * b.wall.median  # the 1.4 ms that a GPU would have kept, divided too


def test_a_graph_replay_slower_on_the_gpu_fails_whatever_the_cpu() -> None:
    # the head's GPU time +10 % (the replay's kernels slower), its CPU as slow as that run's: the GPU's
    # part of the latency is not divided by the CPU's speed, so the latency shows the change
    config = GateConfig()
    base, head = replays(GRAPH_BASE, 0), replays(GRAPH_HEAD, 10, busy=1.10 * GRAPH_BUSY)
    head = [replace(m, wall=Dist(tuple(v + 0.10 * GRAPH_BUSY for v in m.wall.samples))) for m in head]
    decision = decide(compare(base[1], combine(head), config), base[1], base, head, config, final=True)
    assert decision is not None and decision.outcome is Outcome.REGRESSION, decision
    assert "total +" in decision.reason, decision.reason
    b, h, _ = probespeed.adjust(combine(base), combine(head))
    assert h.wall.median / b.wall.median - 1.0 > 0.06, (b.wall.median, h.wall.median)  # the GPU's +140 µs


# yolov8n fp32's eager step on host 4d886d13 (the same machine's third GPU, another A/A run): its GPU
# busy 1.18 ms of a 4.5-8 ms step.
# The base's processes ran on slow CPUs, the head's on fast ones; the whole latency divided by the
# loop made the head +17.4 % slower than the base after 6 processes a side (inconclusive, red).
# Latency µs and loop µs per process, as kept.
FP32_BUSY = 1182.0
FP32_BASE = [(7314.1, 415.1), (7160.9, 348.9), (4583.3, 227.5), (8112.2, 369.3), (5644.2, 350.0),
             (5581.4, 353.3)]  # fmt: skip
FP32_HEAD = [(4519.7, 225.2), (5989.9, 254.1), (4871.4, 232.3), (4495.1, 224.1), (4919.3, 221.8),
             (7710.3, 328.4)]  # fmt: skip


def test_an_eager_step_that_is_not_all_host_work_is_not_overcorrected() -> None:
    base = combine(replays([(w, 30.0, p) for w, p in FP32_BASE], 0, busy=FP32_BUSY))
    head = combine(replays([(w, 30.0, p) for w, p in FP32_HEAD], 10, busy=FP32_BUSY))
    b, h, _ = probespeed.adjust(base, head)
    at_speed = 100.0 * (h.wall.median / b.wall.median - 1.0)
    whole = 100.0 * (
        probespeed._divided(head.wall, head.cpu_probe, statistics.median(base.cpu_probe.samples)).median
        / probespeed._divided(base.wall, base.cpu_probe, statistics.median(base.cpu_probe.samples)).median
        - 1.0
    )
    assert whole > 10.0, whole  # the earlier rule: over the latency's 10 % limit
    # the host part alone at each step's speed: under the limit (as measured, the head was 23.5 % faster)
    assert abs(at_speed) < 10.0 and at_speed < whole - 5.0, (at_speed, whole)


def test_a_round_without_a_probe_leaves_the_sides_as_measured() -> None:
    rounds = [process(s, 1500.0, 20.0, seed=n, probe=s) for n, s in enumerate(BASE_SPEED)]
    rounds[1] = replace(rounds[1], cpu_probe=Dist(()))
    both = combine(rounds)
    # the rounds that have a probe keep it, in their place (a baseline appended to: the runner's own)
    assert both.cpu_probe.rounds == (20, 0, 20)
    assert both.cpu_probe.samples == rounds[0].cpu_probe.samples + rounds[2].cpu_probe.samples
    assert probespeed.factors(both, both) == ((), ())
    assert probespeed.adjust(both, both)[0] is both


def test_rounds_appended_with_a_probe_to_rounds_without_keep_theirs() -> None:
    old = combine([process(s, 1500.0, 20.0, seed=n, probe=None) for n, s in enumerate(BASE_SPEED[:2])])
    assert old.cpu_probe.n == 0 and len(old.total.round_samples()) == 2
    new = process(1.3, 1500.0, 20.0, seed=7, probe=1.3)
    stored = Measurement.from_json(combine([old, new]).to_json())  # as the baseline file keeps it
    assert stored.cpu_probe.rounds == (0, 0, 20) and stored.cpu_probe_host.rounds == (0, 0, 20)
    assert stored.cpu_probe.samples == new.cpu_probe.samples
    mine = ownrounds.rounds_of(stored, [2])  # the appending runner's own round, its probe with it
    assert mine.cpu_probe == new.cpu_probe and mine.cpu_probe_host == new.cpu_probe_host
    assert ownrounds.rounds_of(stored, [0, 1]).cpu_probe.n == 0
    # probes that do not line up with their measurement's rounds are dropped, not misplaced
    odd = replace(new, cpu_probe=Dist(new.cpu_probe.samples, (10, 10)))
    assert combine([old, odd]).cpu_probe.n == 0
    assert combine([old, old]).cpu_probe == Dist(())


def test_the_probe_travels_in_the_record() -> None:
    m = process(1.0, 1500.0, 20.0, seed=1, probe=1.0)
    again = Measurement.from_json(m.to_json())
    assert again.cpu_probe == m.cpu_probe and again.cpu_probe.n == 20
    assert again.cpu_probe_host == m.cpu_probe_host and again.cpu_probe_host.n == 20
    old = m.to_json()
    del old["cpu_probe_us"], old["cpu_probe_host_us"]
    assert Measurement.from_json(old).cpu_probe.n == 0
    both = combine([m, process(1.2, 1500.0, 20.0, seed=2, probe=1.2)])
    assert len(both.cpu_probe.round_medians) == 2


def test_the_loop_takes_time_on_this_cpu() -> None:
    assert cpuspeed.loop_us(2_000) > 0.0
    longer = min(cpuspeed.loop_us(20_000) for _ in range(3))
    shorter = min(cpuspeed.loop_us(2_000) for _ in range(3))
    assert longer > shorter  # ten times the work: no speed assertion, only that it is timed


def test_the_verdict_names_the_figures_judged_at_cpu_speed() -> None:
    decision = judge(head_wall=[w * 1.6 for w in HEAD_WALL])
    assert decision.outcome is Outcome.REGRESSION, decision.reason
    assert decision.ab is not None
    (wall,) = [d for d in decision.ab.deltas if d.scope is Scope.WALL]
    assert wall.verdict is Verdict.REGRESSED
    assert "fixed loop" in decision.reason


def test_the_judges_round_line_says_the_latency_is_at_each_steps_cpu_speed() -> None:
    from kernelgate.verdict.settled import still_open

    base = [process(s, w, i, seed=n, probe=w / TYPICAL_WALL) for n, (s, w, i) in
            enumerate(zip(BASE_SPEED, BASE_WALL, BASE_INPUT, strict=True))]  # fmt: skip
    # the same CPUs, the head's latency +2 %, +30 %, +12 % process by process: grey, more rounds
    head = [process(s, w * k, i, seed=10 + n, probe=w / TYPICAL_WALL) for n, (s, w, i, k) in
            enumerate(zip(BASE_SPEED, BASE_WALL, BASE_INPUT, (1.02, 1.30, 1.12), strict=True))]  # fmt: skip
    line = still_open(base, head, GateConfig())
    assert line.startswith("within the noise of their limits: wall +"), line
    assert line.endswith("(the latency and host-coupled stages at each step's CPU speed)"), line


def test_kernelgate_ab_judges_the_latency_as_the_judge_does(monkeypatch: pytest.MonkeyPatch) -> None:
    # `kernelgate ab`'s rounds, judged offline (kernelgate.offline.judge): the head's loops 30 % faster,
    # its latency as measured the same as the base's: judged as measured there too
    from kernelgate.baseline.store import Entry
    from kernelgate.offline import judge as offline_judge

    fast = [0.7 * w / TYPICAL_WALL for w in BASE_WALL]
    base = [process(s, w, i, seed=n, probe=w / TYPICAL_WALL) for n, (s, w, i) in
            enumerate(zip(BASE_SPEED, BASE_WALL, BASE_INPUT, strict=True))]  # fmt: skip
    head = [process(s, w, i, seed=10 + n, probe=p) for n, (s, w, i, p) in
            enumerate(zip(BASE_SPEED, BASE_WALL, BASE_INPUT, fast, strict=True))]  # fmt: skip
    name = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"

    def wall() -> Delta:
        sides = {name: Entry(name, combine(base), {})}, {name: Entry(name, combine(head), {})}
        (pair,) = offline_judge(*sides, GateConfig(), "base.json", processes=True)
        assert pair.comparison is not None, pair.case
        (found,) = pair.comparison.of(Scope.WALL)
        return found

    judged = wall()
    assert judged.verdict is Verdict.UNCHANGED and probespeed.ONLY_AT_SPEED in judged.note, judged
    assert judged.basis is Basis.ONLY_AT_SPEED
    # the loop alone deciding (the rule before): not a pass
    monkeypatch.setattr(probespeed, "measured_too", lambda ab, _: ab)
    assert wall().verdict in (Verdict.REGRESSED, Verdict.INCONCLUSIVE)


def screen_of(head: Measurement, own: list[Measurement]) -> tuple[bool, str, Comparison]:
    """The screen of ``head`` (one process) against ``own`` (this runner's own rounds)."""
    return screened(combine(own), head, own=True)


# two own rounds at speed 1, their loops at speed 1; the latency 11300 µs
OWN = [(1.0, 11300.0, 31.9, 1), (1.02, 11500.0, 32.5, 2)]


def test_the_screen_lets_the_cpu_loop_explain_a_slower_latency_against_its_own_rounds() -> None:
    own = [process(s, w, i, seed=n, probe=w / TYPICAL_WALL) for s, w, i, n in OWN]
    # the screen's process: its layers' host times at speed 1, but its timed steps on a CPU 1.5x slower
    # (the speed moves within a process): +50 % as measured, its loop 1.5x the own rounds'
    slow_cpu = process(1.0, 16950.0, 31.9, seed=5, probe=1.5)
    suspect, why, shown = screen_of(slow_cpu, own)
    assert not suspect, why
    (wall,) = [d for d in shown.deltas if d.scope is Scope.WALL]
    assert wall.verdict is Verdict.UNCHANGED and probespeed.EXPLAINED in wall.note, wall
    assert wall.basis is Basis.EXPLAINED
    # passed, and said: the terminal's line with both numbers
    (line,) = let_go_lines([shown])
    assert line.startswith(f"passed at this runner's CPU speed: {shown.benchmark} wall: +"), line
    # the same latency with its loop at the own rounds' speed: the code got slower, a suspect
    slower = process(1.0, 16950.0, 31.9, seed=5, probe=1.0)
    suspect, why, _ = screen_of(slower, own)
    assert suspect and why.startswith("wall +"), why
    # a CPU 1.5x slower explains +50 %, not +120 %: a move the loop leaves over the limit stays
    much = process(1.0, 11300.0 * 2.2, 31.9, seed=5, probe=1.5)
    assert screen_of(much, own)[0]


def test_without_the_loop_in_the_own_rounds_the_screen_is_as_before() -> None:
    own = [process(s, w, i, seed=n, probe=None) for s, w, i, n in OWN]  # recorded before the loop
    slow_cpu = process(1.0, 16950.0, 31.9, seed=5, probe=1.5)
    suspect, why, _ = screen_of(slow_cpu, own)
    assert suspect and "wall +" in why, why


def test_the_loop_never_makes_a_suspect_and_leaves_the_layers_host_times_alone() -> None:
    own = [process(s, w, i, seed=n, probe=w / TYPICAL_WALL) for s, w, i, n in OWN]
    # a CPU faster at the timed steps (loop 0.7x): as measured the latency did not move, so no suspect
    fast_cpu = process(1.0, 11400.0, 31.9, seed=6, probe=0.7)
    assert not screen_of(fast_cpu, own)[0]
    # a host layer slower (not a host-coupled stage): the loop does not touch it
    m = process(1.0, 11400.0, 31.9, seed=7, probe=1.5)
    slower_layer = replace(
        m,
        host_layers=tuple(
            LayerStat(lay.name, lay.type, Dist(tuple(3 * v for v in lay.time.samples)))
            if lay.name == "model.9"
            else lay
            for lay in m.host_layers
        ),
    )
    suspect, why, _ = screen_of(slower_layer, own)
    assert suspect and "host model.9" in why, why


def test_a_move_the_loop_does_not_explain_stays_a_suspect() -> None:
    # every loop at the own rounds' speed: nothing for the loop to explain
    apart = [process(1.0, 11300.0, 31.9, seed=1, probe=1.0), process(1.0, 13500.0, 31.9, seed=2, probe=1.0)]
    # over the full threshold, near the slowest own round: the guard sends it to the judge (the
    # own-range rule's doubt at each step's speed is no explanation)
    suspect, why, _ = screen_of(process(1.0, 13600.0, 31.9, seed=5, probe=1.0), apart)
    assert suspect and "wall +" in why, why
    # over half the threshold beyond close own rounds, under the full one: the screen's own thresholds
    own = [process(s, w, i, seed=n, probe=1.0) for s, w, i, n in OWN]
    suspect, why, _ = screen_of(process(1.0, 11400.0 * 1.08, 31.9, seed=5, probe=1.0), own)
    assert suspect and why.startswith("wall +"), why
    # a loop 1.04x the own rounds' takes +11 % to +7 %: near the slowest own round (12500 µs), which the
    # own-range rule leaves in doubt, but still over half the threshold: not explained, a suspect
    wide = [process(1.0, 11300.0, 31.9, seed=1, probe=1.0), process(1.0, 12500.0, 31.9, seed=2, probe=1.0)]
    suspect, why, _ = screen_of(process(1.0, 13100.0, 31.9, seed=5, probe=1.04), wide)
    assert suspect and why.startswith("wall +"), why


def test_a_host_layer_that_moved_against_the_others_is_not_explained_by_the_loop() -> None:
    own = [process(s, w, i, seed=n, probe=w / TYPICAL_WALL) for s, w, i, n in OWN]
    # a faster CPU where the host times were taken (0.7x) and every layer's host time with it, but
    # model.9's as before: model.9 got slower against the others, which the loop must not take for the
    # CPU's speed; the timed steps on a slower CPU (loop 1.5x, latency +50 %), which it explains
    m = process(0.7, 11300.0 * 1.5, 31.9 * 0.7, seed=8, probe=1.5)
    kept = {lay.name: lay for lay in own[0].host_layers}
    slower = replace(
        m, host_layers=tuple(kept["model.9"] if lay.name == "model.9" else lay for lay in m.host_layers)
    )
    suspect, why, _ = screen_of(slower, own)
    assert suspect and "host model.9" in why, why
    assert "wall" not in why  # the latency: the loop explained it
