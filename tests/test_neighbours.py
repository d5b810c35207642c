"""A regression measured after a configuration whose forward changed, its own not
(kernelgate/verdict/neighbours.py): the verdict stands, the message says what may explain it and how
to measure it alone."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

from kernelgate.measure.results import Measurement
from kernelgate.verdict import neighbours
from kernelgate.verdict.samehost import Decision, Outcome

# the first base and head process of each kernel suspect of one gated run on an H100 machine
# (2026-11-27): a head with an extra kernel in yolov8n fp32's model.22, a time.sleep in yolo11n fp32's
# model.9 and a synchronisation after yolo26n fp16's model.5; the graph replays and the pipeline,
# unchanged and measured after yolov8n fp32 in the same processes, failed (docs/sensitivity.md)
RECORDS = Path(__file__).parent / "data" / "h100-multi-host-first-processes.json.xz"


def load() -> tuple[list[list[str]], dict[str, bool]]:
    doc = json.loads(lzma.decompress(RECORDS.read_bytes()))
    order = [s["benchmark"] for s in doc["suspects"]]
    changed = {
        s["benchmark"]: neighbours.forward_changed(
            Measurement.from_json(s["base"]), Measurement.from_json(s["head"])
        )
        for s in doc["suspects"]
    }
    return [order, order, order], changed  # three rounds, every suspect open in each


def test_the_measured_forwards_changed_where_the_head_changed_them() -> None:
    rounds, changed = load()
    assert rounds[0][0] == "yolov8n-fp32-bs1-640"
    assert {name for name, c in changed.items() if c} == {
        "yolov8n-fp32-bs1-640",  # a new kernel in model.22
        "yolo26n-fp16-bs1-640",  # a wait for the device after model.5
    }  # the sleep in yolo11n fp32's model.9 launches nothing new: not a change of the forward


def test_an_unchanged_configuration_after_a_changed_one_names_it() -> None:
    rounds, changed = load()
    assert neighbours.earlier_changed(rounds, changed, "yolov8n-fp16-bs1-640-graph") == [
        "yolov8n-fp32-bs1-640"
    ]
    assert neighbours.earlier_changed(rounds, changed, "yolov8n-fp32-bs1-640") == []  # itself changed
    assert neighbours.earlier_changed(rounds, changed, "yolo26n-fp16-bs1-640") == []  # itself changed
    decision = Decision(
        "yolov8n-fp16-bs1-640-graph", Outcome.REGRESSION, "base -> head on this runner: model.8 +3.6 %"
    )
    said = neighbours.neighboured(decision, decision.benchmark, rounds, changed, "pytest 'x.py::t[a]'")
    assert said.outcome is Outcome.REGRESSION  # the verdict stands
    assert said.reason.startswith("base -> head on this runner: model.8 +3.6 %; its kernels are the same")
    assert "every process measured it after yolov8n-fp32-bs1-640, whose forward did change" in said.reason
    assert said.reason.endswith("measure it alone: pytest 'x.py::t[a]'")


def test_a_changed_configuration_settled_early_is_not_named_for_the_rounds_without_it() -> None:
    # yolov8n fp32 decided at the first round: the later processes did not measure it first, so the
    # regression of the graph replay, measured there too, is not put down to it
    rounds, changed = load()
    later = [name for name in rounds[0] if name != "yolov8n-fp32-bs1-640"]
    assert neighbours.earlier_changed([rounds[0], later, later], changed, "yolov8n-fp16-bs1-640-graph") == []
    # a round that did not measure the configuration does not count
    assert neighbours.earlier_changed(
        [rounds[0], ["yolov8n-fp32-bs1-640"]], changed, "yolov8n-fp16-bs1-640-graph"
    ) == ["yolov8n-fp32-bs1-640"]


def test_a_pass_or_a_first_configuration_is_left_as_it_is() -> None:
    rounds, changed = load()
    passed = Decision("yolov8n-fp16-bs1-640-graph", Outcome.PASS, "base and head agree on this runner")
    assert neighbours.neighboured(passed, passed.benchmark, rounds, changed, "pytest x") is passed
    first = {**changed, "yolov8n-fp32-bs1-640": False}  # nothing changed before it
    regressed = Decision("yolov8n-fp16-bs1-640-graph", Outcome.REGRESSION, "model.8 +3.6 %")
    assert neighbours.neighboured(regressed, regressed.benchmark, rounds, first, "pytest x") is regressed
    assert neighbours.earlier_changed(rounds, changed, "not-a-suspect") == []
