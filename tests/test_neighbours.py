"""A regression measured after a configuration whose forward changed, its own not
(kernelgate/verdict/neighbours.py): the verdict stands, the message says what may explain it and how
to measure it alone."""

from __future__ import annotations

import json
import lzma
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelgate.config import GateConfig
from kernelgate.measure.results import Measurement
from kernelgate.plugin import samehost as judge
from kernelgate.plugin.session import Options
from kernelgate.verdict import neighbours
from kernelgate.verdict.compare import compare
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


# --- the order the judge measures in ------------------------------------------------------------------


def test_the_unchanged_configurations_come_first_in_their_order() -> None:
    rounds, changed = load()
    assert neighbours.unchanged_first(rounds[0], str, changed) == [
        "yolo11n-fp16-bs1-640",
        "yolo11n-fp32-bs1-640",
        "yolov8n-fp16-bs1-640-graph",
        "yolo11n-fp16-bs1-640-graph",
        "yolov8n-fp16-bs1-640-pipeline",
        "yolov8n-fp32-bs1-640",  # changed
        "yolo26n-fp16-bs1-640",  # changed
    ]
    assert neighbours.unchanged_first(["b", "a"], str, {}) == ["b", "a"]  # nothing known: as given


def test_the_screen_says_which_forward_changed_before_any_round() -> None:
    doc = json.loads(lzma.decompress(RECORDS.read_bytes()))
    said = {s["benchmark"]: neighbours.screen_changed(s["base"], s["head"]) for s in doc["suspects"]}
    assert said == load()[1]  # the base's forward stands for the stored baseline's
    assert neighbours.screen_changed(doc["suspects"][0]["base"], None) is False  # the screen kept none


def test_each_round_measures_the_unchanged_configurations_before_the_changed_ones(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """plugin/samehost.Judge.run with its processes faked (each writes the records of the H100 run's
    first processes): round 1 orders by the screen's word, later rounds by base and head's, which
    correct it (here the screen kept no measurement of yolo26n fp16, whose forward did change)."""
    doc = json.loads(lzma.decompress(RECORDS.read_bytes()))
    first = {s["benchmark"]: s for s in doc["suspects"]}
    given = ["yolo26n-fp16-bs1-640", *[name for name in first if name != "yolo26n-fp16-bs1-640"]]

    def suspect(name: str) -> judge.Suspect:
        base, head = first[name]["base"], first[name]["head"]
        screen = compare(Measurement.from_json(base), Measurement.from_json(head), GateConfig())
        measured = None if name == "yolo26n-fp16-bs1-640" else head
        return judge.Suspect(f"b/test_yolo.py::test_yolo[{name}]", judge.KERNEL, screen, base, "", measured)

    spawned: list[tuple[str, list[str]]] = []

    def spawn(self: judge.Judge, side: judge.Side, ids: Sequence[str], out: Path, cold: bool) -> Any:
        spawned.append((side.name, [i.split("[")[1].rstrip("]") for i in ids]))
        for nodeid in ids:
            path = judge.record_file(out, nodeid)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(first[nodeid.split("[")[1].rstrip("]")][side.name]), "utf-8")
        return SimpleNamespace(name=side.name, go=out / "go.json", out=out)

    sides = tuple(judge.Side(name, tmp_path, tmp_path, {}) for name in ("base", "head"))
    monkeypatch.setattr(judge.Judge, "_sides", lambda self: sides)
    monkeypatch.setattr(judge.Judge, "_spawn", spawn)
    for name in ("await_ready", "release", "keep_log"):
        monkeypatch.setattr(judge.standby, name, lambda *_: None)
    monkeypatch.setattr(judge.standby, "finish", lambda *_: None)

    def decide(s: judge.Suspect, base: Sequence[Mapping[str, Any]], head: Sequence[Mapping[str, Any]],
               final: bool) -> Decision | str:  # fmt: skip
        return Decision(s.screen.benchmark, Outcome.PASS, "agree") if len(base) >= 2 else "open"

    config = SimpleNamespace(
        rootpath=tmp_path, invocation_params=SimpleNamespace(args=(), dir=tmp_path),
        option=SimpleNamespace(file_or_dir=[]),
    )  # fmt: skip
    state = SimpleNamespace(config=GateConfig(), options=Options(out_dir=tmp_path / "kg"))
    runner = judge.Judge(config, state, lambda _: None)  # type: ignore[arg-type]
    try:
        decided = runner.run([suspect(name) for name in given], {judge.KERNEL: decide})
    finally:
        runner.close()
    assert len(decided) == 7 and {d.outcome for d in decided.values()} == {Outcome.PASS}
    unchanged = ["yolo11n-fp16-bs1-640", "yolo11n-fp32-bs1-640", "yolov8n-fp16-bs1-640-graph",
                 "yolo11n-fp16-bs1-640-graph", "yolov8n-fp16-bs1-640-pipeline"]  # fmt: skip
    # round 1: yolov8n fp32 last by the screen's word; yolo26n fp16 where it was given (no word)
    assert runner.orders[0] == ["yolo26n-fp16-bs1-640", *unchanged, "yolov8n-fp32-bs1-640"]
    # round 2: both measured as changed, after every unchanged one
    assert runner.orders[1] == [*unchanged, "yolo26n-fp16-bs1-640", "yolov8n-fp32-bs1-640"]
    assert [ids for _, ids in spawned] == [runner.orders[0]] * 2 + [runner.orders[1]] * 2  # both sides
    assert runner.changed == load()[1]
