"""A configuration measured in several places of GPU memory (kernelgate.measure.placement), on fakes:
the records' average, the copies' pools, the turn-taking step pytest-benchmark times."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from factories import ARCH, META, V8, entry, measurement

from kernelgate.baseline import store
from kernelgate.baseline.store import FILE_NAME, BaselineError
from kernelgate.config import GateConfig
from kernelgate.measure import placement
from kernelgate.measure.execution import Runner
from kernelgate.measure.integrity import check_record
from kernelgate.measure.results import Dist, LayerStat, Measurement, combine
from kernelgate.verdict import yardstick
from kernelgate.verdict.compare import compare
from kernelgate.verdict.samehost import Outcome, decide


def test_each_iteration_is_the_mean_of_one_step_of_each_copy() -> None:
    # two copies in turn: one layer at two levels, as on the H200 (116.5 µs in one place, 124.5 µs in
    # the other); model.23's work is one kernel in the first copy, another in the second (each counts 0
    # in the steps of the copy without it, as a record has it)
    m = measurement(
        {"model.22": [116.4, 124.6, 116.5, 124.5, 116.6, 124.4], "model.23": [300.0, 302.0] * 3},
        {
            "model.22.cv2 :: gemm": [116.4, 124.6, 116.5, 124.5, 116.6, 124.4],
            "model.23.x :: add": [300.0, 0.0] * 3,
            "model.23.x :: mul": [0.0, 302.0] * 3,
        },
        total=[416.4, 426.6, 416.5, 426.5, 416.6, 426.4],
        wall=[9.0, 9.1, 9.2, 1.0],
    )
    m = dataclasses.replace(
        m, host_layers=(LayerStat("model.22", "Conv", Dist((10.0, 20.0, 12.0, 22.0, 14.0, 24.0))),)
    )
    got = placement.averaged(m, 2)
    layers = {lay.name: lay.time for lay in got.layers}
    assert layers["model.22"].samples == pytest.approx((120.5, 120.5, 120.5))
    assert layers["model.22"].rounds == ()  # one process: no rounds
    assert layers["model.23"].median == pytest.approx(301.0)
    kernels = {k.key: k.time for k in got.kernels}
    assert kernels["model.22.cv2 :: gemm"].median == pytest.approx(120.5)
    assert kernels["model.23.x :: add"].median == pytest.approx(150.0)
    assert kernels["model.23.x :: mul"].median == pytest.approx(151.0)
    assert got.total.samples == pytest.approx((421.5, 421.5, 421.5))
    assert got.host_layers[0].time.samples == pytest.approx((15.0, 17.0, 19.0))
    assert got.wall == m.wall and got.iterations == 3  # the latency: pytest-benchmark's of the copies
    assert not check_record(got)  # layers and kernels still add up to the total, iteration by iteration


def test_a_pooled_median_would_jump_between_levels() -> None:
    # three copies at 116.5, two at 124.5: pooled, the median is the lower level; the mean sits between
    steps = [116.5, 124.5, 116.5, 124.5, 116.5] * 2
    m = measurement({"model.22": steps}, total=steps)
    assert m.layers[0].time.median == pytest.approx(116.5)
    assert placement.averaged(m, 5).layers[0].time.median == pytest.approx(119.7)
    assert placement.averaged(m, 1) is m


def test_a_record_that_lost_a_step_is_left_as_it_is() -> None:
    m = measurement({"model.0": [1.0, 2.0, 3.0]}, total=[1.0, 2.0, 3.0])
    assert placement.averaged(m, 2) is m
    # a figure of another sample count (host times of another number of steps): not averaged either
    even = measurement({"model.0": [1.0, 2.0]}, total=[1.0, 2.0])
    odd = dataclasses.replace(even, host_layers=(LayerStat("model.0", "Conv", Dist((1.0, 2.0, 3.0))),))
    assert placement.averaged(odd, 2) is odd
    assert placement.averaged(even, 2).iterations == 1


def test_probes_are_averaged_step_by_step() -> None:
    assert placement.by_step([1.0, 5.0, 2.0, 6.0, 3.0, 7.0], 2) == pytest.approx([3.0, 4.0, 5.0])
    assert placement.by_step([1.0, 2.0, 3.0], 2) == [1.0, 2.0, 3.0]  # uneven: as they are
    assert placement.by_step([1.0, 2.0], 1) == [1.0, 2.0]


class FakeCuda:
    """torch.cuda's pools: which pool is active, and every allocation with the pool it came from."""

    def __init__(self) -> None:
        self.active: list[object] = []
        self.allocations: list[tuple[object | None, int]] = []

    class MemPool:
        pass

    @contextlib.contextmanager
    def use_mem_pool(self, pool: object) -> Iterator[None]:
        self.active.append(pool)
        try:
            yield
        finally:
            self.active.pop()

    def pool(self) -> object | None:
        return self.active[-1] if self.active else None


class FakeTorch:
    uint8 = "uint8"

    def __init__(self) -> None:
        self.cuda = FakeCuda()

    def empty(self, size: int, dtype: str, device: str) -> tuple[str, int]:
        self.cuda.allocations.append((self.cuda.pool(), size))
        return ("pad", size)


def _runner(
    torch: FakeTorch, log: list[tuple[str, object | None]], name: str, reference: bool = False
) -> Runner:
    def step() -> None:
        log.append((name, torch.cuda.pool()))

    def ref() -> None:
        log.append((name + " reference", torch.cuda.pool()))

    return Runner(step, net=name, reference=ref if reference else None)


def test_each_copy_is_made_and_stepped_in_a_pool_of_its_own() -> None:
    torch = FakeTorch()
    log: list[tuple[str, object | None]] = []
    made: list[object | None] = []

    def make() -> Runner:
        made.append(torch.cuda.pool())
        return _runner(torch, log, f"copy {len(made)}", reference=True)

    places = placement.Placements(torch, _runner(torch, log, "first"), make, 3)
    runners = places.runners()
    assert len(runners) == 3 and places.runners() == runners  # made once
    assert made[0] is not None and made[1] is not None and made[0] is not made[1]
    # pads of other sizes in each copy's pool, before its copy
    assert [size for pool, size in torch.cuda.allocations if pool is made[1]] == [
        2 * placement.SMALL_PAD,
        2 * placement.LARGE_PAD,
    ]
    for runner in runners:
        runner.step()
    runners[2].reference()  # type: ignore[misc]
    assert log == [("first", None), ("copy 1", made[0]), ("copy 2", made[1]), ("copy 2 reference", made[1])]
    log.clear()
    step = places.cycle()
    for _ in range(5):
        step()
    assert [name for name, _ in log] == ["first", "copy 1", "copy 2", "first", "copy 1"]


def test_without_a_copier_or_pools_it_is_measured_in_one_place() -> None:
    torch = FakeTorch()
    log: list[tuple[str, object | None]] = []
    first = _runner(torch, log, "first")
    alone = placement.Placements(torch, first, None, 4)
    assert alone.count == 1 and alone.runners() == [first]
    no_pools: Any = type("NoPools", (), {"cuda": object()})()  # a torch without torch.cuda.MemPool
    assert placement.Placements(no_pools, first, lambda: _runner(torch, log, "copy"), 4).count == 1


class Net:
    """A net's ``named_modules``: its root (named "") and its submodules."""

    def __init__(self, tag: str) -> None:
        self.modules = [("", f"{tag} root"), ("model.0", f"{tag} conv"), ("model.0.act", "shared act")]

    def named_modules(self, prefix: str = "", remove_duplicate: bool = True) -> Any:
        return iter(self.modules)


def test_the_copies_run_as_one_runner_with_every_copy_hooked() -> None:
    torch = FakeTorch()
    log: list[tuple[str, object | None]] = []
    first = dataclasses.replace(_runner(torch, log, "first"), net=Net("first"))
    copies = iter([Net("second"), Net("third")])

    def make() -> Runner:
        return dataclasses.replace(_runner(torch, log, "copy"), net=next(copies))

    places = placement.Placements(torch, first, make, 3)
    one = places.runner()
    assert one.hook_step and one.reference is None
    # the profiler's ranges and the host clock's hooks go on every copy's submodules, roots left out
    assert [m for _, m in one.net.named_modules()] == [
        "first conv", "shared act", "second conv", "shared act", "third conv", "shared act",
    ]  # fmt: skip
    for _ in range(4):
        one.step()
    assert [name for name, _ in log] == ["first", "copy", "copy", "first"]
    assert placement.Placements(torch, first, None, 3).runner() is first


def test_a_module_that_cannot_be_copied_gets_no_copier() -> None:
    class Uncopyable:
        def __deepcopy__(self, memo: dict[int, Any]) -> Any:
            raise TypeError("cannot copy a handle")

    assert placement.copier(Uncopyable(), lambda net: Runner(lambda: None, net)) is None
    compiled = type("OptimizedModule", (), {"_orig_mod": object()})()  # as torch.compile returns
    assert placement.copier(compiled, lambda net: Runner(lambda: None, net)) is None
    net = {"w": [1, 2]}
    make = placement.copier(net, lambda copied: Runner(lambda: None, copied))
    assert make is not None
    made = make().net
    assert made == net and made is not net and made["w"] is not net["w"]


# --- records of two methods are not compared, not combined ------------------------------------------


def placed(m: Measurement, count: int = 4) -> Measurement:
    return dataclasses.replace(m, placements=count)


def test_placements_survive_json_and_older_records_read_as_one_place() -> None:
    one = measurement({"model.0": 10.0})
    assert "placements" not in one.to_json()  # records of one place stay as they were written
    assert Measurement.from_json(one.to_json()).placements == 1
    assert Measurement.from_json(placed(one).to_json()).placements == 4
    assert combine([placed(one), placed(one)]).placements == 4
    with pytest.raises(ValueError, match="do not combine"):
        combine([one, placed(one)])


def test_a_baseline_of_one_place_is_no_yardstick_for_four() -> None:
    one = measurement({"model.0": 100.0}, {"model.0.conv :: gemm": 100.0}, total=100.0)
    problems = yardstick.pair_problems(entry(V8, one), placed(one), GateConfig())
    assert len(problems) == 1 and "1 and 4 places of GPU memory" in problems[0]
    assert yardstick.pair_problems(entry(V8, placed(one)), placed(one), GateConfig()) == []


def test_a_round_of_another_method_is_not_appended(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    one = measurement({"model.0": 100.0}, total=100.0)
    store.save(path, [entry(V8, one)], arch=ARCH, **META)
    before = path.read_text()
    with pytest.raises(
        BaselineError, match=r"measured in 1 place\(s\) of GPU memory, this round in 4"
    ) as info:
        store.save(path, [entry(V8, placed(one))], arch=ARCH, append=True, **META)
    assert "kernelgate record --rounds 3" in str(info.value) and "without --kernelgate-append" in str(
        info.value
    )
    assert path.read_text() == before


def test_the_judge_does_not_compare_a_base_of_another_method() -> None:
    one = measurement({"model.0": 100.0}, total=100.0)
    head = [placed(measurement({"model.0": 103.0}, total=103.0))] * 3
    screen = compare(placed(one), head[0], GateConfig())
    decision = decide(screen, placed(one), [one] * 3, head, GateConfig())
    assert decision is not None and decision.outcome is Outcome.INCONCLUSIVE
    assert "base and head were measured in 1 and 4 places" in decision.reason
    assert (
        decide(screen, placed(one), [placed(one)] * 3, head, GateConfig()).outcome is not Outcome.INCONCLUSIVE
    )  # type: ignore[union-attr]


@pytest.mark.parametrize("arch", ["sm90-nvidia-h200", "sm90-nvidia-h100-80gb-hbm3"])
def test_the_committed_quick_sets_are_measured_as_the_gate_measures_now(arch: str) -> None:
    """gate.yml's configurations (the quick set) must be of the current method, or every GPU run is
    refused; the nightly-only ones may still be of one place (docs/baselines.md: Placements)."""
    from kernelgate.models import matrix

    repo = Path(__file__).resolve().parents[1]
    quick = {spec.id for spec in matrix.load(repo / "pyproject.toml").cases(None, True)}
    records = {
        e.measurement.benchmark: e.measurement
        for e in store.load(repo / "baselines" / arch / FILE_NAME).values()
    }
    assert quick and quick <= set(records)
    assert {b: records[b].placements for b in quick} == dict.fromkeys(quick, placement.PLACEMENTS)


def test_a_slowed_layer_runs_each_copys_own_weights() -> None:
    import copy

    import torch

    from kernelgate.models.yolo import slow_down

    class Counting(torch.nn.Linear):
        calls = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            return super().forward(x)

    net = torch.nn.Sequential(Counting(4, 4), torch.nn.ReLU())
    with torch.no_grad():
        net[0].weight.fill_(1.0)
    slow_down(net, "0", 2)
    twin = copy.deepcopy(net)
    x = torch.ones(1, 4)
    with torch.no_grad():
        twin[0].weight.zero_()
        twin[0].bias.zero_()
        assert float(twin(x).abs().sum()) == 0.0  # the copy's zeroed weights, not the first copy's
        assert float(net(x).abs().sum()) > 0.0
    assert twin[0].calls == 3 and net[0].calls == 3  # 1 + 2 extra runs each, each on its own module


def test_the_trace_excerpt_of_a_placed_record_is_a_step_of_the_median_group() -> None:
    from kernelgate.report import trace_store

    steps = [
        {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "ts": 100.0 * i, "dur": 90.0}
        for i in range(12)
    ]
    doc = {"traceEvents": steps}
    # 12 steps, 4 copies in turn, 3 iterations: the median's is the second, its first step is step 4
    got = trace_store.excerpt(doc, [10.0, 11.0, 30.0])
    assert got["kernelgate"]["excerpt"] == "iteration 4 of 12 (ProfilerStep#4)"
    assert trace_store.excerpt(doc, [30.0] * 5)["kernelgate"]["excerpt"].startswith("iteration 6 of 12")


def test_the_profiled_steps_are_whole_groups_of_one_step_of_each_copy() -> None:
    from kernelgate.measure.pipeline import CPU_SCHEDULE, GPU_SCHEDULE

    assert placement.steps(GPU_SCHEDULE, None, 4).active == 24  # 6 iterations of 4 placements
    assert placement.steps(GPU_SCHEDULE, 10, 4).active == 12  # ten asked: 3 iterations of 4
    assert placement.steps(GPU_SCHEDULE, 3, 4).active == 4
    assert placement.steps(GPU_SCHEDULE, 7, 1).active == 7  # one place (compile mode): as asked
    got = placement.steps(CPU_SCHEDULE, None, 1)
    assert (got.wait, got.warmup, got.active) == (CPU_SCHEDULE.wait, CPU_SCHEDULE.warmup, 5)
