"""verdict/ownrange.aged: a runner's own rounds that no longer match it are said, with the command that
renews them. On 2 x H200 (2026-11-27) the same layers of 3-5 configurations were 1.4-5.2 % off the
rounds each GPU had appended 20-40 minutes before, in every A/A run, while base and head agreed within
0.3 % in the judge: each run went to the judge for them, and nothing said why."""

from __future__ import annotations

from dataclasses import replace

from test_own_rounds import HOST_A, HOST_B, round_on

from kernelgate.commands import append_command, record_rounds_command
from kernelgate.config import GateConfig
from kernelgate.machine.fingerprint import HostFingerprint
from kernelgate.measure.results import Measurement, combine
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
    stored = own_rounds(100.0)
    screen = compare(stored, round_on(HOST_B, 103.0, 5), CONFIG)  # the screen: +3 %
    # the base measured here now is +3 % too, and the head agrees with it: the rounds are off
    (said,) = ownrange.aged(screen, ab(103.0, 103.0), CONFIG.screen)
    assert said.startswith("model.0 100.0 -> 103.") and said.endswith("µs (+3.0 %)"), said
    # the base here at the rounds' level: the head moved, not the runner (the judge's case): none
    assert ownrange.aged(screen, ab(100.0, 103.0), CONFIG.screen) == []
    # a move under the screen's part of the limit (1.25 % of 2.5 %) is no aged round
    small = compare(stored, round_on(HOST_B, 101.0, 5), CONFIG)
    assert ownrange.aged(small, ab(101.0, 101.0), CONFIG.screen) == []
    # the base moved the other way from the screen: not the runner's level either
    assert ownrange.aged(screen, ab(97.0, 97.0), CONFIG.screen) == []


def test_only_rounds_this_runner_recorded_are_its_own() -> None:
    run = round_on(HOST_B, 103.0, 5)
    assert ownrange.recorded_here(own_rounds(host=HOST_B), run)
    assert not ownrange.recorded_here(own_rounds(host=HOST_A), run)  # another host's offset
    mixed = combine([round_on(HOST_A, 100.0, 0), round_on(HOST_B, 100.0, 1)])
    assert not ownrange.recorded_here(mixed, run)
    assert not ownrange.recorded_here(replace(own_rounds(), hosts=()), run)  # no fingerprints


def test_the_run_says_which_rounds_aged_and_how_to_renew_them() -> None:
    stored, head = own_rounds(100.0), round_on(HOST_B, 103.0, 5)
    screen = compare(stored, head, CONFIG)
    suspect = judge.Suspect("t::a", judge.KERNEL, screen, stored.to_json(), "model.0 +3.0 %", head.to_json())
    state = State(CONFIG, Options())
    state.add_suspect(suspect)
    passed = samehost.Decision(
        screen.benchmark, samehost.Outcome.PASS, "base and head agree", ab(103.0, 103.0), 3
    )
    note = judge.aged(state, {"t::a": passed})
    assert note.startswith(
        f"kernelgate: this runner's own rounds no longer match it ({screen.benchmark}: model.0 100.0 -> 103."
    )
    command = record_rounds_command(rounds=2, append=True)
    assert command == "kernelgate record --rounds 2 --append -- benchmarks"
    assert note.endswith(
        "append two rounds on this runner (one is set aside as an outlier among three) with "
        f"{command} and commit the baseline (docs/fleet.md)."
    )
    assert append_command() == "pytest benchmarks --kernelgate-save --kernelgate-append"
    # a regression, rounds of another host, or a decision without an A/B: nothing to say
    assert judge.aged(state, {"t::a": replace(passed, outcome=samehost.Outcome.REGRESSION)}) == ""
    assert judge.aged(state, {"t::a": replace(passed, ab=None)}) == ""
    foreign = State(CONFIG, Options())
    foreign.add_suspect(replace(suspect, baseline=own_rounds(host=HOST_A).to_json()))
    assert judge.aged(foreign, {"t::a": passed}) == ""


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
