"""verdict/ownrange.aged: a runner's own rounds that no longer match it are said, with the command that
renews them. On 2 x H200 (2026-11-27) the same layers of 3-5 configurations were 1.4-5.2 % off the
rounds each GPU had appended 20-40 minutes before, in every A/A run, while base and head agreed within
0.3 % in the judge: each run went to the judge for them, and nothing said why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pytest
from test_own_rounds import HOST_A, HOST_B, round_on

from kernelgate.baseline import ownrounds
from kernelgate.commands import append_command, record_rounds_command
from kernelgate.config import GateConfig
from kernelgate.machine.fingerprint import HostFingerprint
from kernelgate.measure.results import Measurement, combine
from kernelgate.plugin import judgement
from kernelgate.plugin import samehost as judge
from kernelgate.plugin.session import Options, State
from kernelgate.verdict import ownrange, reported, samehost
from kernelgate.verdict.compare import Comparison, compare

CONFIG = GateConfig()


def own_rounds(conv_us: float = 100.0, host: HostFingerprint = HOST_B) -> Measurement:
    return combine([round_on(host, conv_us, s) for s in range(2)])


def ab(base_us: float, head_us: float) -> Comparison:
    """The judge's base -> head on this runner, 3 processes a side."""
    base = combine([round_on(HOST_B, base_us, 10 + s) for s in range(3)])
    head = combine([round_on(HOST_B, head_us, 20 + s) for s in range(3)])
    return compare(base, head, CONFIG)


def test_a_layer_the_base_moved_with_on_this_runner_is_an_aged_round() -> None:
    stored, run = own_rounds(100.0), round_on(HOST_B, 103.0, 5)  # the screen: +3 %
    # the base measured here now is +3 % too, and the head agrees with it: the rounds are off
    (said,) = ownrange.aged(stored, run, ab(103.0, 103.0), CONFIG)
    assert said.startswith("model.0 100.0 -> 103.") and said.endswith("µs (+3.0 %)"), said
    # the base here at the rounds' level: the head moved, not the runner (the judge's case): none
    assert ownrange.aged(stored, run, ab(100.0, 103.0), CONFIG) == []
    # the run at the rounds' level, only the base moved: the screen sent nothing, nothing to say
    assert ownrange.aged(stored, round_on(HOST_B, 100.0, 5), ab(103.0, 103.0), CONFIG) == []
    # a move the screen lets go (under its limit: 1.25 % of 2.5 %, plus the own-range margin): none
    assert ownrange.aged(stored, round_on(HOST_B, 101.0, 5), ab(101.0, 101.0), CONFIG) == []
    # the base moved the other way from the run: not the runner's level either
    assert ownrange.aged(stored, run, ab(97.0, 97.0), CONFIG) == []
    # rounds of another host: its offset is the screen's business, not an aged round of this runner
    assert ownrange.aged(own_rounds(host=HOST_A), run, ab(103.0, 103.0), CONFIG) == []


def test_a_host_coupled_layer_is_never_named() -> None:
    """The input copy and pre/post-processing follow the host: the screen's loop and host speed judge
    them, not a round of the device's level."""
    stored, run = own_rounds(100.0), round_on(HOST_B, 130.0, 5)  # +30 %: over the 20 % host threshold

    def as_input(m: Measurement) -> Measurement:
        return replace(
            m, layers=tuple(replace(lay, name="input") if lay.name == "model.0" else lay for lay in m.layers)
        )

    both = ab(130.0, 130.0)
    both = replace(
        both, deltas=tuple(replace(d, name="input") if d.name == "model.0" else d for d in both.deltas)
    )
    assert ownrange.aged(stored, run, ab(130.0, 130.0), CONFIG)  # as a device layer: named
    assert ownrange.aged(as_input(stored), as_input(run), both, CONFIG) == []


def test_only_rounds_this_runner_recorded_are_its_own() -> None:
    run = round_on(HOST_B, 103.0, 5)
    assert ownrange.recorded_here(own_rounds(host=HOST_B), run)
    assert not ownrange.recorded_here(own_rounds(host=HOST_A), run)  # another host's offset
    mixed = combine([round_on(HOST_A, 100.0, 0), round_on(HOST_B, 100.0, 1), round_on(HOST_B, 100.0, 2)])
    assert not ownrange.recorded_here(mixed, run)  # the whole entry, as stored
    # what the screen keeps of it for this runner (plugin/screen.gate): its own rounds
    assert ownrange.recorded_here(ownrounds.screened_against(mixed, HOST_B)[0], run)
    assert not ownrange.recorded_here(replace(own_rounds(), hosts=()), run)  # no fingerprints


def test_the_note_names_the_layers_and_the_command_that_appends_two_rounds() -> None:
    found = {"yolo26n-fp16-bs1-640": [f"model.{i} 100.0 -> 103.0 µs (+3.0 %)" for i in range(6)]}
    command = record_rounds_command(
        "benchmarks/test_yolo.py::test_yolo[yolo26n-fp16-bs1-640]", rounds=2, append=True
    )
    target = "benchmarks/test_yolo.py::test_yolo[yolo26n-fp16-bs1-640]"
    assert command == f"kernelgate record --rounds 2 --append -- '{target}'"
    note = ownrange.aged_note(found, command)
    assert note.startswith(
        "kernelgate: this runner's own rounds no longer match it (yolo26n-fp16-bs1-640: model.0 100.0 -> "
        "103.0 µs (+3.0 %), model.1"
    )
    assert (
        "model.3 100.0 -> 103.0 µs (+3.0 %) and 2 more: its own rounds -> the base measured here now" in note
    )
    assert note.endswith(
        f"aside as the outlier among three): {command}, and commit the baseline (docs/fleet.md)."
    )
    assert ownrange.aged_note({}, command) == ""
    assert append_command() == "pytest benchmarks --kernelgate-save --kernelgate-append"


def test_the_offset_beside_a_pass_says_what_it_is_measured_from() -> None:
    """The judge's note on a figure it cleared gives this runner's offset: from the baseline's host, or
    from this runner's own rounds where it recorded them (not "the baseline's host", which it is)."""
    head = round_on(HOST_B, 103.0, 5)
    base_here = [round_on(HOST_B, 103.0, 10 + s) for s in range(3)]
    head_here = [round_on(HOST_B, 103.0, 20 + s) for s in range(3)]
    for stored, said in (
        (own_rounds(host=HOST_B), "its own rounds"),
        (own_rounds(host=HOST_A), "the baseline's host"),
    ):
        screen = compare(stored, head, CONFIG)
        decision = samehost.decide(screen, stored, base_here, head_here, CONFIG, final=True)
        assert decision is not None and decision.outcome is samehost.Outcome.PASS, decision
        assert decision.offset_from == said
        (row,) = [d for d in reported.merged(screen, decision).deltas if d.name == "model.0"]
        assert f"; this runner vs {said}: +" in row.note, row.note


class _Judge:
    """plugin/samehost.Judge without child processes: the decisions given."""

    decisions: ClassVar[dict[str, samehost.Decision]] = {}

    def __init__(self, config: object, state: object, log: Callable[[str], None]) -> None:
        self.log = log
        self.args: list[str] = []
        self.orders: list[list[str]] = []
        self.changed: dict[str, bool] = {}

    def run(self, *_: object) -> dict[str, samehost.Decision]:
        return dict(self.decisions)

    def close(self) -> None:
        pass


def test_a_run_that_passed_says_its_own_rounds_aged_and_one_that_failed_does_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """plugin/judgement.judge_session with the judge's decisions given: the note comes once, after the
    decisions as the run ends, and never in a run that failed (the rounds would record its change)."""
    stored, run = own_rounds(100.0), round_on(HOST_B, 103.0, 5)
    screen = compare(stored, run, CONFIG)
    nodeid = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
    suspect = judge.Suspect(nodeid, judge.KERNEL, screen, stored.to_json(), "model.0 +3.0 %", run.to_json())
    passed = samehost.Decision(
        screen.benchmark, samehost.Outcome.PASS, "base and head agree", ab(103.0, 103.0), 3
    )
    config = SimpleNamespace(
        pluginmanager=SimpleNamespace(get_plugin=lambda _: None),
        rootpath=tmp_path,
        invocation_params=SimpleNamespace(dir=tmp_path),
    )
    monkeypatch.setattr(judgement, "Judge", _Judge)

    other = replace(suspect, nodeid=nodeid.replace("yolov8n", "yolo11n"))

    def session(*decided: tuple[judge.Suspect, samehost.Decision]) -> State:
        state = State(CONFIG, Options(out_dir=tmp_path / "kg"))
        for s, _ in decided:
            state.add_suspect(s)
        _Judge.decisions = {s.nodeid: d for s, d in decided}
        judgement.judge_session(config, state)  # type: ignore[arg-type]
        return state

    (note,) = [n for n in session((suspect, passed)).notes if "own rounds no longer match" in n]
    assert "(yolov8n-fp16-bs1-640: model.0 100.0 -> 103." in note
    assert f"kernelgate record --rounds 2 --append -- '{nodeid}'" in note
    # another configuration regressed in the same run: appending now would record its change
    failed = replace(passed, outcome=samehost.Outcome.REGRESSION, ab=ab(100.0, 103.0))
    state = session((suspect, passed), (other, failed))
    assert state.judge_failures and not any("own rounds no longer match" in n for n in state.notes)
