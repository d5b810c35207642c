"""What a pytest-xdist worker sends to the controller: JSON round trips of comparisons and baseline
entries (verdicts as computed, confirm notes included), and the controller's merge of the shares."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from factories import entry, measurement

from kernelgate.baseline import store as baseline
from kernelgate.config import GateConfig, Scope, Threshold
from kernelgate.plugin import workers
from kernelgate.plugin.session import Options, State
from kernelgate.verdict.compare import Basis, Comparison, Delta, Verdict, compare, confirmed

DATA = Path(__file__).parent / "data"


def real_comparison() -> Comparison:
    """The real H200 regression (model.2 slowed), made failing-but-not-confirmed for one kernel."""
    (base,) = baseline.load(DATA / "h200-yolov8n-fp16-baseline.json").values()
    (cur,) = baseline.load(DATA / "h200-yolov8n-fp16-model2-slowed.json").values()
    first = compare(base.measurement, cur.measurement, GateConfig())
    return confirmed(first, compare(base.measurement, base.measurement, GateConfig()))


def test_a_comparison_survives_its_json_round_trip_unchanged() -> None:
    comparison = dataclasses.replace(real_comparison(), notes=("the GPU reported a clock slowdown",))
    assert any(d.note.startswith("not confirmed") for d in comparison.deltas)
    again = Comparison.from_json(json.loads(json.dumps(comparison.to_json())))
    assert again == comparison
    assert again.failed == comparison.failed and again.failures == comparison.failures


def test_every_field_of_a_delta_travels() -> None:
    delta = Delta(
        Scope.KERNEL, "model.2.cv1.conv :: sm90_xmma", "model.2", 10.125, 13.5, Threshold(0.25, 2.0),
        Verdict.REGRESSED, 1.0, 2.0, 0.0079, 3.25, 13.25, 10.5, "confirmed", Basis.EXPLAINED,
    )  # fmt: skip
    data = delta.to_json()
    assert set(data) == {f.name for f in dataclasses.fields(Delta)}, "a new Delta field must travel too"
    assert Delta.from_json(json.loads(json.dumps(data))) == delta
    empty = Delta(Scope.LAYER, "model.9", "model.9", None, 4.0, Threshold(0.1, 0.5), Verdict.NEW)
    assert Delta.from_json(empty.to_json()) == empty
    # a record written before the field (the judge's records of earlier runs): taken as measured
    older = {k: v for k, v in delta.to_json().items() if k != "basis"}
    assert Delta.from_json(older) == dataclasses.replace(delta, basis=Basis.MEASURED)


def test_an_entry_round_trip_keeps_pytest_benchmarks_fields_and_other_extra_info() -> None:
    original = entry("benchmarks/test_yolo.py::test_yolo[a]")
    bench = dict(original.benchmark, params={"case": ("yolov8n", 640)})
    bench["extra_info"] = {"kernelgate": {"stale": True}, "kernelgate_coldstart": {"runs": []}}
    original = dataclasses.replace(original, benchmark=bench)
    again = baseline.Entry.from_json(json.loads(json.dumps(original.to_json())))
    assert again.measurement == original.measurement
    assert again.benchmark["params"] == {"case": ["yolov8n", 640]}  # as the baseline file writes it
    assert again.benchmark["extra_info"] == {"kernelgate_coldstart": {"runs": []}}
    assert again.benchmark["stats"] == original.benchmark["stats"]


def state(**kwargs: object) -> State:
    return State(config=GateConfig(), options=Options(), **kwargs)  # type: ignore[arg-type]


TESTS = [f"test_suite.py::test_{name}" for name in ("a", "b", "c")]


def worker_state(names: list[str], compared: bool = True) -> State:
    s = state(gate_tests=list(TESTS))
    for name in names:
        m = measurement({"model.0": 100.0}, benchmark=f"bench-{name}")
        s.measured.append(entry(f"test_suite.py::test_{name}", m))
        if compared:
            s.comparisons.append(compare(m, m, GateConfig()))
            path = Path("/repo/baselines") / m.arch / baseline.FILE_NAME
            s.baselines.setdefault(path, {})[f"test_suite.py::test_{name}"] = entry(
                f"test_suite.py::test_{name}", m
            )
    return s


def test_the_controller_gets_every_share_in_collection_order() -> None:
    first, second = worker_state(["c", "a"]), worker_state(["b"])
    second.missing.append("bench-x")
    second.notes.append("a note of gw1")
    first.notes.append("a note of gw1")  # the same note from two workers (a baseline's): said once
    controller = state()
    workers.receive(controller, workers.send(second), "gw1")
    workers.receive(controller, workers.send(first), "gw0")
    workers.settle(controller)
    assert controller.gate_tests == TESTS
    assert [e.fullname for e in controller.measured] == TESTS
    assert [c.benchmark for c in controller.comparisons] == ["bench-a", "bench-b", "bench-c"]
    assert controller.comparisons[0] == first.comparisons[1]
    assert controller.missing == ["bench-x"] and controller.notes == ["a note of gw1"]
    (known,) = controller.baselines.values()
    assert sorted(known) == TESTS
    assert controller.nothing_compared() is None


def test_nothing_compared_counts_across_workers() -> None:
    skipped, unbased = state(gate_tests=TESTS[:2]), state(gate_tests=TESTS[:2])
    skipped.skipped.append(TESTS[0])
    unbased.missing.append("bench-b")
    controller = state()
    for worker, share in (("gw0", skipped), ("gw1", unbased)):
        assert share.nothing_compared() is not None
        workers.receive(controller, workers.send(share), worker)
    workers.settle(controller)
    message = controller.nothing_compared()
    assert message is not None and "2 gate benchmark(s) collected, none compared" in message
    assert "(1 skipped, 1 without a baseline)" in message
    compared = worker_state(["c"])
    workers.receive(controller, workers.send(compared), "gw2")
    assert controller.nothing_compared() is None


def test_a_worker_that_crashed_is_named_and_fails_the_run() -> None:
    controller = state()
    traceback = (
        "Traceback (most recent call last):\n  ...\npytest.UsageError: kernelgate: worker gw{} cannot pin\n"
    )
    workers.receive(controller, None, "gw1", error=traceback.format(1))
    (error,) = controller.errors
    assert "worker(s) went down before sending their measurements" in error
    assert "(pytest.UsageError: kernelgate: worker gwN cannot pin)" in error
    workers.receive(controller, None, "gw2", error=traceback.format(2))  # restarted, failed alike
    workers.receive(controller, None, "gw0")  # finished without kernelgate data: nothing to say
    assert len(controller.errors) == 1
    workers.receive(controller, None, "gw3", error="Not properly terminated")
    assert len(controller.errors) == 2 and "(Not properly terminated)" in controller.errors[1]


def test_a_share_of_another_schema_is_refused() -> None:
    text = json.dumps({**json.loads(workers.send(state())), "schema_version": 99})
    with pytest.raises(ValueError, match="schema 99, the controller reads 1"):
        workers.receive(state(), text, "gw0")
