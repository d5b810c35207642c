"""The session's suspects judged on this runner, and each one's verdict as its test reports it.

After the last test (:func:`kernelgate.plugin.finish.after_tests`), :func:`judge_session` runs the
same-host judge (:class:`kernelgate.plugin.samehost.Judge`) over every suspect, merges each decision
into the screen's comparison (:mod:`kernelgate.verdict.reported`), and makes the test's verdict: its
headline, every figure the screen flagged answered base -> head, and for a failure the message that
names what got slower (:class:`kernelgate.plugin.outcome.TestVerdict`).
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from kernelgate.config import node_target, record_rounds_command
from kernelgate.machine.fingerprint import OWN_ROUNDS
from kernelgate.measure.results import Measurement
from kernelgate.plugin import evidence, outcome
from kernelgate.plugin.deciders import decide_coldstart, decide_kernel
from kernelgate.plugin.samehost import COLDSTART, KERNEL, LOGS, Judge
from kernelgate.verdict import neighbours, ownrange, reported, samehost

if TYPE_CHECKING:
    import pytest

    from kernelgate.plugin.session import State


def judge_of(config: pytest.Config, state: State) -> Judge:
    """The session's same-host judge, made on first need; its lines go to the terminal."""
    if state.judge is None:
        reporter = config.pluginmanager.get_plugin("terminalreporter")

        def log(line: str) -> None:
            if reporter is not None:
                reporter.write_line(line)

        state.set_judge(Judge(config, state, log))
        weak = samehost.few_processes(state.config.confirm_max_rounds)
        if weak:
            state.note(weak)
    assert state.judge is not None
    return state.judge


def judge_session(config: pytest.Config, state: State) -> None:
    """Decide every suspect of the session on this runner; its comparison joins the session's with
    the judge's verdicts, and a regression or (by default) a doubt fails the run with its message.
    Suspects decided at their test's own time (:data:`State.early`) keep that decision."""
    if not state.suspects:
        return
    from kernelgate.baseline.names import shown
    from kernelgate.baseline.store import path_for
    from kernelgate.machine.envdiff import changes
    from kernelgate.offline import Judged, digest
    from kernelgate.report.terminal import failure_message

    judge = judge_of(config, state)
    log = judge.log
    pending = [s for s in state.suspects if s.nodeid not in state.early]
    decisions = dict(state.early)
    if pending:  # the judge's base checkout is removed by the session's end (plugin/finish.py)
        log(f"kernelgate: {len(pending)} suspect(s) against the stored baseline; measuring base and "
            "head on this runner")  # fmt: skip
        for s in pending:
            log(f"kernelgate:   {s.screen.benchmark}: {s.why or 'over its screen threshold'}")
        deciders = {KERNEL: decide_kernel(state), COLDSTART: decide_coldstart(state)}
        decisions |= judge.run(pending, deciders)
    out = state.options.out_dir
    if (out / evidence.FILE).is_file():
        log(
            f"kernelgate: what the judge decided from: {shown(out / evidence.FILE)} (each process's "
            f"figures), {shown(out / evidence.RECORDS)} (every record), {shown(out / LOGS)}/ (each "
            "process's output)"
        )
    # by test: the configurations passed on layers whose own rounds no longer match this runner
    renew: dict[str, tuple[str, list[str]]] = {}
    for suspect in state.suspects:
        decision = decisions[suspect.nodeid]
        # a pass over a kernel row that still fails the run is a regression, its line says so
        decision = reported.as_run_ends(decision, reported.merged(suspect.screen, decision))
        target = node_target(suspect.nodeid, config.rootpath, config.invocation_params.dir)
        if suspect.kind == KERNEL:  # measured after another configuration's change in its processes
            alone = shlex.join(["pytest", *judge.args, target])  # the whole invocation, this test alone
            name = suspect.screen.benchmark
            decision = neighbours.neighboured(decision, name, judge.orders, judge.changed, alone)
        merged = reported.merged(suspect.screen, decision)
        judged = Judged(
            merged.benchmark, digest(suspect.baseline), decision.outcome.value, decision.reason, merged
        )
        state.add_decision(decision, merged, judged)
        log(f"kernelgate: {suspect.screen.benchmark}: {decision.outcome.value}: {decision.reason}")
        said = reported.answers(suspect.flagged, suspect.screen, decision)
        headline = (
            f"kernelgate: {merged.benchmark}: {decision.outcome.value.upper()} (same-host A/B, "
            f"{decision.rounds} process(es) a side): {decision.reason}"
        )
        if not merged.failed:
            state.add_verdict(
                outcome.TestVerdict(suspect.nodeid, False, headline, "\n".join([headline, *said]))
            )
            # own rounds that no longer match this runner (verdict/ownrange.aged)
            if decision.outcome is samehost.Outcome.PASS and decision.ab is not None and suspect.measured:
                stored, run = Measurement.from_json(suspect.baseline), Measurement.from_json(suspect.measured)
                if layers := ownrange.aged(stored, run, decision.ab, state.config):
                    renew[target] = (suspect.screen.benchmark, layers)
            continue
        path = shown(path_for(state.config.baseline_dir, merged.arch))
        if suspect.kind == KERNEL:
            base = Measurement.from_json(suspect.baseline)
            types = {lay.name: lay.type for lay in base.layers}
            head = next(
                (e.measurement for e in state.measured if e.measurement.benchmark == merged.benchmark), None
            )
            found = changes(base.environment, head.environment) if head is not None else []
            text = failure_message(merged, types, path, found, target=target)
        else:
            text = "\n".join(
                [f"kernelgate: cold start {merged.benchmark} on {merged.arch}:"]
                + [f"  {d.verdict.value.upper()} {d.name}: {d.note}" for d in merged.failures]
            )
        # the terminal's message; the run fails on the merged comparison (kernelgate.verdict.policy)
        state.add_judge_failure(
            f"{decision.outcome.value.upper()} (same-host A/B): {decision.reason}\n{text}"
        )
        state.add_verdict(
            outcome.TestVerdict(suspect.nodeid, True, headline, "\n".join([headline, *said, text]))
        )
    if renew and not state.judge_failures:  # rounds of a run that failed would record its regression
        command = record_rounds_command(*renew, rounds=OWN_ROUNDS, append=True)
        state.note(ownrange.aged_note(dict(renew.values()), command))
