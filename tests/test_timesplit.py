"""Where the time goes: wall = busy + host, and the class of the busy share, with its boundaries."""

from __future__ import annotations

import dataclasses

import pytest
from factories import measurement

from kernelgate.measure import timesplit
from kernelgate.measure.results import Dist
from kernelgate.measure.timesplit import DEVICE_BOUND_FROM, LAUNCH_BOUND_BELOW, Bound, TimeSplit, classify


@pytest.mark.parametrize(
    ("share", "bound"),
    [
        (0.0, Bound.HOST),
        (LAUNCH_BOUND_BELOW - 1e-9, Bound.HOST),
        (LAUNCH_BOUND_BELOW, Bound.MIXED),
        (DEVICE_BOUND_FROM - 1e-9, Bound.MIXED),
        (DEVICE_BOUND_FROM, Bound.DEVICE),
        (1.0, Bound.DEVICE),
        (1.05, Bound.DEVICE),  # a little over: profiled and timed forwards are different ones
    ],
)
def test_classify_boundaries(share: float, bound: Bound) -> None:
    assert classify(share) is bound


def test_the_thresholds_are_the_documented_ones() -> None:
    assert (LAUNCH_BOUND_BELOW, DEVICE_BOUND_FROM) == (0.50, 0.85)


def test_an_eager_gpu_run_reads_launch_bound_and_a_graph_run_gpu_bound() -> None:
    eager = TimeSplit("cuda", 3982.0, 1173.9, 2808.1)
    assert eager.sentence() == "wall 3.982 ms = GPU busy 1.174 ms (29 %) + host 2.808 ms → launch-bound"
    graph = TimeSplit("cuda:0", 1250.0, 1175.0, 75.0)
    assert graph.sentence() == "wall 1.250 ms = GPU busy 1.175 ms (94 %) + host 75.0 µs → GPU-bound"
    assert TimeSplit("cuda", 1000.0, 700.0, 300.0).label == "mixed"


def test_a_cpu_run_speaks_of_cpu_ops_not_of_the_gpu() -> None:
    cpu = TimeSplit("cpu", 1000.0, 300.0, 700.0)
    assert cpu.sentence() == "wall 1.000 ms = CPU ops 300.0 µs (30 %) + host 700.0 µs → overhead-bound"
    assert [TimeSplit("cpu", 100.0, busy, 0.0).label for busy in (10.0, 60.0, 90.0)] == [
        "overhead-bound",
        "mixed",
        "op-bound",
    ]
    assert "GPU" not in cpu.sentence() and "launch" not in cpu.sentence()


def test_split_of_a_measurement_uses_medians_and_its_host_overhead() -> None:
    m = measurement({"model.0": [100.0, 120.0, 110.0]}, wall=[400.0, 500.0, 450.0])
    found = timesplit.split(m)
    assert found == TimeSplit("cuda", 450.0, 110.0, 340.0)
    assert found.host_us == m.host_overhead_us


def test_no_split_without_wall_time_or_without_a_profile() -> None:
    m = measurement({"model.0": 100.0})
    no_wall = dataclasses.replace(m, wall=Dist(()))
    assert timesplit.split(no_wall) is None
    assert timesplit.sentence(no_wall) == "no wall time measured; GPU busy 100.0 µs"
    assert timesplit.split(dataclasses.replace(m, busy=Dist(()))) is None  # a cold-start record
    assert TimeSplit("cuda", 0.0, 0.0, 0.0).busy_share == 0.0


@pytest.mark.parametrize(
    ("share", "bound"), [(1.10, Bound.DEVICE), (1.1000001, Bound.UNSPLIT), (5.0, Bound.UNSPLIT)]
)
def test_busy_well_over_wall_does_not_split(share: float, bound: Bound) -> None:
    assert timesplit.MAX_BUSY_SHARE == 1.10
    assert classify(share) is bound


def test_a_profile_slower_than_the_timed_forwards_is_said_so() -> None:
    """CPU: the profiler's overhead on many small operators can make busy several times the wall."""
    cpu = TimeSplit("cpu", 3410.0, 19238.0, 0.0)
    assert (cpu.label, cpu.split) == ("ops > wall", False)
    assert cpu.sentence() == (
        "wall 3.410 ms < CPU ops 19.24 ms (564 %) in the profiled forwards, which ran slower than the "
        "timed ones (profiler overhead): no split into busy and host"
    )
    assert TimeSplit("cuda", 1000.0, 1200.0, 0.0).label == "busy > wall"
    assert TimeSplit("cuda", 1000.0, 1050.0, 0.0).split  # within the tolerance: GPU-bound
