"""The end of a session, in one place: write the results (and, with ``--kernelgate-save``, the
baseline), publish the report, decide whether the run failed as a whole, print the summary."""

from __future__ import annotations

import datetime
import shlex
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernelgate import config as cfg
from kernelgate.baseline.store import path_for
from kernelgate.plugin.session import RECEIVED_KEY, REPORT_KEY, SLOTS_KEY, STATE_KEY, State
from kernelgate.verdict import policy

NOT_COMPARED = frozenset({policy.Status.NO_BASELINE, policy.Status.UNRELIABLE, policy.Status.NOT_COMPARED})

if TYPE_CHECKING:
    from kernelgate.baseline.store import Entry


def _traced(config: pytest.Config, benchmarks: list[str], gpu: bool) -> list[str]:
    """Of the benchmarks saved as a baseline, those whose trace it keeps
    (:func:`kernelgate.report.trace_store.worth_keeping`)."""
    from kernelgate.models import matrix
    from kernelgate.report.trace_store import worth_keeping

    try:
        table = matrix.load(Path(config.rootpath) / "pyproject.toml")
        default_set = frozenset(spec.id for spec in table.cases(None, gpu))
    except matrix.MatrixError:  # the run itself said so, if it used the matrix
        return benchmarks
    everything = frozenset(spec.id for specs in table.sets.values() for spec in specs)
    return worth_keeping(benchmarks, default_set, everything)


def write(
    config: pytest.Config, state: State, path: Path, entries: list[Entry], merge: bool, redact: bool = False
) -> bool:
    """Save ``entries`` to ``path`` under its lock, keeping the file's other benchmarks when ``merge``;
    with ``redact`` (the results file under --kernelgate-redact), names hashed and no host name."""
    from kernelgate.baseline import store as baseline

    hook = config.hook
    machine_info = hook.pytest_benchmark_generate_machine_info(config=config)
    if redact:
        from kernelgate.report import redact as redaction

        redactor = redaction.Redactor.from_environment()
        entries, machine_info = [redactor.entry(e) for e in entries], redaction.machine_info(machine_info)
    try:
        notes = baseline.save(
            path,
            entries,
            arch=entries[0].measurement.arch,
            machine_info=machine_info,
            commit_info=hook.pytest_benchmark_generate_commit_info(config=config),
            created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            pytest_benchmark_version=metadata.version("pytest-benchmark"),
            merge_existing=merge,
            replace_unreadable=state.options.replace_unreadable,
            append=merge and state.options.append,
            config=state.config,
            keep_round=state.options.keep_round,
        )
    except baseline.BaselineError as exc:
        state.add_error(f"NOT SAVED: {exc}")
        return False
    state.note(*notes)
    state.add_written(path)
    return True


def finish(session: pytest.Session) -> None:
    """``pytest_sessionfinish``: on a pytest-xdist worker, send the state to the controller; else
    write, report and set the exit status."""
    state = session.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # a pytest-xdist worker: the controller writes the files and reports
        from kernelgate.plugin import workers

        output[workers.KEY] = workers.send(state, session.config)
        return
    if not state.tests_done:  # the tests were cut short (Ctrl-C): no judge, the lists in order
        _settle_workers(session.config, state)
        _close_judge(state)  # made for a cold start at its test's time: its base checkout goes
    if state.measured:
        from kernelgate.offline import with_judgements

        arch = state.measured[0].measurement.arch
        results = with_judgements(state.measured, state.judged)  # what kernelgate report needs to agree
        out = path_for(state.options.out_dir / "results", arch)
        write(session.config, state, out, results, False, redact=_redacting(session.config))
        reliable = [e for e in state.measured if e.measurement.reliable]
        if state.options.save and reliable:
            write(session.config, state, path_for(state.config.baseline_dir, arch), reliable, True)
            from kernelgate.coldstart.verdict import EXTRA_KEY
            from kernelgate.report.trace_store import keep_for_baselines

            runs = [  # a cold start runs in child processes and has no trace to keep
                (e.fullname, e.measurement.arch, e.measurement.benchmark, e.measurement.total.samples)
                for e in reliable
                if EXTRA_KEY not in (e.benchmark.get("extra_info") or {})
            ]
            kept = set(_traced(session.config, [run[2] for run in runs], not arch.startswith("cpu-")))
            runs = [run for run in runs if run[2] in kept]
            state.note(*keep_for_baselines(runs, state.options.out_dir, state.config.baseline_dir))
        elif not state.options.save:
            _host_notes(state, arch)
    ran = not any(session.config.getoption(o, False) for o in ("collectonly", "setuponly", "setupplan"))
    decision = policy.decide(
        cases(session.config, state),
        policy.ExitPolicy.of(state.config),
        state.nothing_compared() if ran else None,
        state.errors,
    )
    state.set_decision(decision)
    if state.comparisons or state.missing or state.unreliable or state.failed:
        report(session.config, state)
    if decision.failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def after_tests(session: pytest.Session) -> None:
    """After the last test, in the process that prints (pytest-xdist's controller, once every worker
    is down): the same-host judge decides the suspects, then their tests' reports, held until now,
    are logged with its verdicts (:mod:`kernelgate.plugin.outcome`). A worker sends its held reports
    instead (:func:`finish`)."""
    config = session.config
    state = config.stash.get(STATE_KEY, None)
    if state is None or state.tests_done or hasattr(config, "workerinput"):
        return
    state.mark_tests_done()
    _settle_workers(config, state)
    from kernelgate.plugin import outcome

    try:
        if state.suspects:
            from kernelgate.plugin.judgement import judge_session

            judge_session(config, state)
    except Exception as exc:  # the held tests still get an outcome: failed, saying why
        why = (
            f"kernelgate: the same-host judge failed ({type(exc).__name__}: {exc}), so the suspects "
            "have no verdict. Rerun; if it persists, run one suspect alone with -v and report its output."
        )
        state.add_error(why)
        for s in state.suspects:
            if s.nodeid not in state.verdicts:
                state.add_verdict(outcome.TestVerdict(s.nodeid, True, why, why))
        outcome.release(config, state)
        raise
    finally:  # the judge, where a suspect or a cold start at its test's time made one
        _close_judge(state)
    outcome.release(config, state)


def _close_judge(state: State) -> None:
    """Remove the judge's base checkout and work folder, where the session made a judge."""
    if state.judge is not None:
        state.judge.close()
        state.set_judge(None)


def _settle_workers(config: pytest.Config, state: State) -> None:
    """pytest-xdist's controller: the workers' shares in the order of collection."""
    received = config.stash.get(RECEIVED_KEY, None)
    if received:
        from kernelgate.plugin import workers

        workers.settle(state, len(received), config.stash.get(SLOTS_KEY, None))


def _host_notes(state: State, arch: str) -> None:
    """A note where a host of this run is none of the hosts that recorded its baseline
    (:func:`kernelgate.baseline.hosts.runner_notes`): the stored-baseline screen then sees a host offset."""
    from kernelgate.baseline import hosts
    from kernelgate.baseline.store import BaselineError

    try:
        entries = state.baseline_entries(path_for(state.config.baseline_dir, arch), arch)
    except BaselineError:
        return  # the benchmarks that read it failed already, naming the fault
    where = hosts.where(state.config.baseline_dir, arch)
    state.note(*hosts.runner_notes(entries, (e.measurement for e in state.measured), where))


def _redacting(config: pytest.Config) -> bool:
    """--kernelgate-redact: the report folder and the results file hash names (report/redact.py)."""
    return bool(config.getoption("kernelgate_redact"))


def _targets(config: pytest.Config, state: State) -> dict[str, str]:
    """Each measured benchmark's test, as the argument that selects it from where pytest ran."""
    where = config.rootpath, config.invocation_params.dir
    return {e.measurement.benchmark: cfg.node_target(e.fullname, *where) for e in state.measured}


def cases(config: pytest.Config, state: State) -> list[policy.Case]:
    """One case per gate benchmark of the session: compared (with the judge's verdicts where it
    judged), without a baseline, unreliable, or failed before comparing."""
    where = path_for(state.config.baseline_dir, state.arch) if state.arch else state.config.baseline_dir
    tests = _targets(config, state)
    anywhere = cfg.default_target()  # a benchmark whose test is not known: the run's test paths
    found = [policy.Case.of(c, tests.get(c.benchmark, anywhere)) for c in state.comparisons]
    found += [
        policy.Case(name, policy.Status.NO_BASELINE, f"no baseline in {where}",
                    cfg.record_command(tests.get(name, anywhere)))
        for name in state.missing
    ]  # fmt: skip
    found += [
        policy.Case(name, policy.Status.UNRELIABLE, "the profile cannot be trusted (see the test's message)",
                    f"pytest {shlex.quote(tests.get(name, anywhere))} (run it again; docs/faults.md)")
        for name in state.unreliable
    ]  # fmt: skip
    found += [
        policy.Case(nodeid, policy.Status.NOT_COMPARED, why, f"pytest {shlex.quote(nodeid)}")
        for nodeid, why in state.failed
    ]
    return found


def report(config: pytest.Config, state: State) -> None:
    from kernelgate.config import Scope
    from kernelgate.report.publish import publish, session_items
    from kernelgate.report.sections import Judged, RunOutcome

    history = config.getoption("kernelgate_history")
    folders = state.config.baseline_dir, state.options.out_dir
    found = state.measured, state.comparisons, state.baselines, folders
    items, notes = session_items(*found, Path(history) if history else None)
    state.note(*notes)
    assert state.decision is not None
    why = {s.screen.benchmark: s.why for s in state.suspects}
    run = RunOutcome(
        state.decision,
        tuple(c for c in cases(config, state) if c.status in NOT_COMPARED),
        tuple(c for c in state.comparisons if not c.of(Scope.TOTAL)),
        state.arch,
        tuple(
            Judged(d.benchmark, why.get(d.benchmark, ""), d.outcome.value, d.reason, d.rounds)
            for d in state.decisions
        ),
        tuple(state.unmeasured),
    )
    if not (items or run.not_compared or run.coldstarts or run.unmeasured):
        return
    folder = Path(config.getoption("kernelgate_report_dir")).resolve()
    try:
        config.stash[REPORT_KEY] = publish(items, folder, redact=_redacting(config), run=run)
    except Exception as exc:  # a broken report must not hide the gate's verdict, which stands
        state.note(
            f"kernelgate: the report in {folder} could not be written ({type(exc).__name__}: {exc}); "
            "the verdicts above stand. Rerun offline: kernelgate report BASELINE.json "
            f"{state.options.out_dir}/results/<arch>/0001_kernelgate.json --out {folder}"
        )


def summary(terminalreporter: Any, config: pytest.Config) -> None:
    """``pytest_terminal_summary``: the kernelgate section."""
    state = config.stash.get(STATE_KEY, None)
    decided = (
        state is not None and state.decision is not None and state.decision != policy.ExitDecision(False)
    )
    if state is None or not (state.measured or state.missing or state.errors or state.notes or decided):
        return
    if hasattr(config, "workeroutput"):
        return  # a pytest-xdist worker: the controller prints the summary
    from kernelgate.report.terminal import (
        UNWRAPPED,
        layer_table,
        let_go_lines,
        summary_table,
        time_split_lines,
        unsettled_lines,
    )

    terminalreporter.section("kernelgate")
    measured = {e.measurement.benchmark: e.measurement for e in state.measured}
    writer = config.get_terminal_writer()
    color = bool(getattr(writer, "hasmarkup", False))  # a terminal (or --color=yes): its width, colours
    width, verbosity = writer.fullwidth if color else UNWRAPPED, config.get_verbosity()
    if state.comparisons:
        table = summary_table(state.comparisons, width, measured, color=color, quiet=verbosity < 0)
        terminalreporter.write(table)
        for line in unsettled_lines(state.comparisons) + let_go_lines(state.comparisons):
            terminalreporter.write_line(line)
        for comparison in state.comparisons if verbosity > 0 else ():  # -v: every layer of each
            known = measured.get(comparison.benchmark)
            types = {lay.name: lay.type for lay in known.layers} if known else {}
            terminalreporter.write(layer_table(comparison, types, width, color))
    elif measured and verbosity >= 0:
        terminalreporter.write(time_split_lines(measured.values()))
    for name in state.missing:
        terminalreporter.write_line(f"no baseline: {name}")
    if state.missing:
        tests = _targets(config, state)
        targets = [tests[n] for n in state.missing if n in tests]
        terminalreporter.write_line(
            f"record {'them' if len(targets) > 1 else 'it'} with: {cfg.record_command(*targets)}"
        )
    for name in state.unreliable:
        terminalreporter.write_line(f"unreliable profile, not compared: {name}")
    published = config.stash.get(REPORT_KEY, None)
    if published is not None:
        for line in published.lines():
            terminalreporter.write_line(line)
    for path in state.written:
        terminalreporter.write_line(f"wrote {path}")
    for note in state.notes:
        terminalreporter.write_line(note)
    decision = state.decision or policy.decide((), policy.ExitPolicy(), None, state.errors)
    for warning in decision.warnings:
        terminalreporter.write_line(f"warning: {warning}")
    for reason in [*state.judge_failures, *decision.reasons]:
        terminalreporter.write_line(f"FAILED {reason}", red=True, bold=True)
