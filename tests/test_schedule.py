"""Longest-first scheduling under pytest-xdist: the expected times, and a simulated run of the default
suite on two workers with the durations measured on the H200 (no GPU, no worker processes)."""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

pytest.importorskip("xdist")

from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

from kernelgate.plugin import schedule

COLD = "benchmarks/test_coldstart.py::test_coldstart[yolov8n-fp16-bs1-640-{}]"
YOLO = "benchmarks/test_yolo.py::test_yolo[{}]"
# `pytest benchmarks --durations=0` on one H200 (docs/fleet.md, run B): seconds per test, in the
# order pytest collects them. The first kernel benchmark of a process also pays CUDA's start-up.
MEASURED = {
    COLD.format("empty"): 13.79,
    COLD.format("warm"): 13.57,
    COLD.format("ptx-jit"): 0.01,
    COLD.format("ptx-jit-warm"): 0.01,
    YOLO.format("yolov8n-fp16-bs1-640"): 4.86,
    YOLO.format("yolov8n-fp32-bs1-640"): 1.45,
    YOLO.format("yolo11n-fp16-bs1-640"): 3.36,
    YOLO.format("yolo11n-fp32-bs1-640"): 1.77,
    YOLO.format("yolov8n-fp16-bs1-640-graph"): 1.17,
    YOLO.format("yolo11n-fp16-bs1-640-graph"): 1.64,
    YOLO.format("yolov8n-fp16-bs1-640-pipeline"): 2.55,
    YOLO.format("yolo26n-fp16-bs1-640"): 3.97,
}


def test_expected_times_rank_the_kinds_of_benchmark() -> None:
    seconds = schedule.expected_seconds
    assert seconds(COLD.format("empty")) == schedule.COLDSTART_S
    assert seconds(YOLO.format("yolov8n-fp16-bs1-640-compile")) == schedule.COMPILE_S
    assert seconds(YOLO.format("yolov8n-fp16-bs1-640-graph")) == schedule.CONFIGURATION_S
    assert seconds(YOLO.format("yolov8s-fp16-bs1-640")) == schedule.CONFIGURATION_S * schedule.LARGE
    assert seconds(YOLO.format("rtdetr-l-fp16-bs1-640")) == schedule.CONFIGURATION_S * schedule.LARGE
    assert seconds(YOLO.format("yolov5nu-fp16-bs1-640")) == schedule.CONFIGURATION_S
    assert seconds("tests/test_other.py::test_plain") == schedule.OTHER_S
    assert seconds("tests/test_other.py::test_param[3]") == schedule.OTHER_S
    order = [MEASURED_IDS[i] for i in schedule.longest_first(MEASURED_IDS)]
    assert order[:4] == [COLD.format(s) for s in ("empty", "warm", "ptx-jit", "ptx-jit-warm")]
    assert order[4:] == MEASURED_IDS[4:]  # ties keep the collection order


MEASURED_IDS = list(MEASURED)


@dataclass(eq=False)
class Node:
    """What the scheduler uses of an xdist WorkerController."""

    name: str
    sent: list[int] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> Any:
        return type("Gateway", (), {"id": self.name})()

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def shutdown(self) -> None:
        self.shutting_down = True


class Config:
    def __init__(self, workers: int) -> None:
        self.values: dict[str, Any] = {"tx": [f"{workers}*popen"], "maxschedchunk": None}

    def getvalue(self, name: str) -> Any:
        return self.values[name]

    getoption = getvalue


def simulate(
    scheduler_class: type[Any], durations: Mapping[str, float], workers: int = 2
) -> tuple[float, dict[str, list[str]]]:
    """Run the scheduler as xdist's controller does, workers taking ``durations`` per test: the
    wall time (the last worker's finish) and the tests each worker ran, in order."""
    collection = list(durations)
    scheduler = scheduler_class(Config(workers))
    nodes = [Node(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    ran: dict[str, list[str]] = {n.name: [] for n in nodes}
    clock: dict[str, float] = {n.name: 0.0 for n in nodes}
    events: list[tuple[float, int, str]] = []  # (finish time, order, worker)
    running: dict[str, int] = {}
    count = 0

    def start(node: Node) -> None:
        nonlocal count
        queue = scheduler.node2pending[node]
        # an xdist worker starts a test once it knows the next one, or that it is shutting down
        if node.name in running or not queue or (len(queue) < 2 and not node.shutting_down):
            return
        index = queue[0]
        running[node.name] = index
        clock[node.name] += durations[collection[index]]
        count += 1
        heapq.heappush(events, (clock[node.name], count, node.name))

    for node in nodes:
        start(node)
    while events:
        _, _, name = heapq.heappop(events)
        node = next(n for n in nodes if n.name == name)
        index = running.pop(name)
        ran[name].append(collection[index])
        scheduler.mark_test_complete(node, index, durations[collection[index]])
        for other in nodes:
            start(other)
    assert sorted(t for tests in ran.values() for t in tests) == sorted(collection)  # each test once
    return max(clock.values()), ran


def test_longest_first_puts_the_cold_starts_on_different_workers_and_balances_the_rest() -> None:
    wall, ran = simulate(schedule.LongestFirst, MEASURED)
    assert [tests[0] for tests in ran.values()] == [COLD.format("empty"), COLD.format("warm")]
    total = sum(MEASURED.values())
    assert wall <= total / 2 + max(MEASURED.values()) / 3  # LPT's bound, well inside it here
    plain_wall, plain_ran = simulate(LoadScheduling, MEASURED)
    # xdist's own: both cold starts on one worker (the first chunk of two in collection order)
    assert COLD.format("empty") in plain_ran["gw0"] and COLD.format("warm") in plain_ran["gw0"]
    assert wall < plain_wall - 5


def test_longest_first_keeps_a_worker_queue_of_two() -> None:
    durations = {YOLO.format(f"yolov8n-fp16-bs{b}-640"): 1.0 for b in range(1, 41)}
    scheduler = schedule.LongestFirst(Config(2))
    nodes = [Node("gw0"), Node("gw1")]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, list(durations))
    scheduler.schedule()
    assert [len(scheduler.node2pending[n]) for n in nodes] == [2, 2]
    assert nodes[0].sent == [0, 2] and nodes[1].sent == [1, 3]
    scheduler.mark_test_complete(nodes[0], 0, 1.0)
    assert nodes[0].sent == [0, 2, 4]  # one test for the one finished, not a chunk
    wall, ran = simulate(schedule.LongestFirst, durations)
    assert wall == 20.0 and [len(t) for t in ran.values()] == [20, 20]
