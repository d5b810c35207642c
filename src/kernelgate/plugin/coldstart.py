"""The fixture's ``coldstart(...)``: measure a cold-start scenario, keep it for the baseline file, gate it
(:mod:`kernelgate.coldstart.verdict`); where its stored runs are another host's, have the same-host
judge measure base and head at once instead (:func:`judged_now`), or skip a warm-cache scenario whose
processes would repeat those of its empty twin judged so just before (:func:`repeats_twin`)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelgate.coldstart.phases import COMPILE, PTX_PROBE, TOTAL, ChildSpec, ColdStart
from kernelgate.coldstart.ptxprobe.build import ProbeUnavailable
from kernelgate.coldstart.runner import Runner
from kernelgate.coldstart.scenarios import SCENARIOS, Scenario, cold_twin, nothing_compiled
from kernelgate.coldstart.verdict import (
    EXTRA_KEY,
    bench_fields,
    carrier,
    compare_scenario,
    own_record,
    ptx_unavailable,
    record_of,
    scenario_failure,
    summary,
)
from kernelgate.config import record_command
from kernelgate.machine import envdiff, fingerprint, identity, threads
from kernelgate.measure import timing
from kernelgate.plugin import standby

if TYPE_CHECKING:
    from kernelgate.baseline.reading import Entry
    from kernelgate.machine.fingerprint import HostFingerprint
    from kernelgate.plugin.fixture import KernelGate

# timed runs of a cold start in each process of a same-host round whose sides run one after the
# other: the judge decides a cold start after a round in each order (COLDSTART_MIN_ROUNDS), so 4 runs
# a side at least; a pass needs no more, a regression (a Mann-Whitney test at alpha 0.01 needs 6 runs a
# side) a third round. Where the sides take turns run by run (plugin/standby.py), one round holds both
# orders: confirm_min_rounds runs a side (3 by default) decide a pass, a second round a regression
JUDGE_RUNS = 2
# timed runs of the screen where the stored baseline is another host's and the judge cannot measure
# it at once (a pytest-xdist worker; no base to check out): a cold start is host-coupled (`import
# torch` +35 ... +82 % on other H200 hosts, -41 % on another H100 host), so its numbers are kept only
# as this runner's offset, and base and head on this runner decide (judged_now, where they can at once)
FOREIGN_RUNS = 1


def child_spec(
    device: str,
    model: str,
    precision: str,
    batch: int,
    imgsz: int,
    mode: str,
    compile_options: Mapping[str, Any] | None,
    probe_kernels: int,
) -> ChildSpec:
    """What the fixture's ``coldstart(...)`` asks for, as the children's spec."""
    iterations = 50 if device.startswith("cuda") else 20  # forwards after the first
    options = json.dumps(dict(compile_options), sort_keys=True) if compile_options else ""
    kernels = probe_kernels if model == PTX_PROBE else 0
    return ChildSpec(model, precision, batch, imgsz, device, iterations, False, mode, options, kernels)


def run(
    kg: KernelGate, spec: ChildSpec, scenario: str, runs: int, prime: bool, env: Mapping[str, str]
) -> ColdStart:
    """``kernelgate.coldstart(...)``: measure, keep for the baseline file, gate."""
    import pytest

    from kernelgate.baseline.names import shown
    from kernelgate.baseline.reading import Entry

    if scenario not in SCENARIOS:
        raise ValueError(f"scenario {scenario!r}: use one of {sorted(SCENARIOS)}")
    chosen = SCENARIOS[scenario]
    if chosen.compile_only and spec.mode != COMPILE:
        raise ValueError(f"scenario {scenario!r} changes a compile option: it needs mode='compile'")
    if chosen.force_ptx:
        reason = ptx_unavailable(spec.device)
        if reason:
            pytest.skip(reason)
    gpu = spec.device.startswith("cuda")
    turns = None  # where this process takes turns with the other side's (plugin/standby.py)
    now: tuple[Entry, str] | None = None  # the stored entry and its host, where judged at once
    if kg.state.options.confirm_out is not None:  # a process of a same-host round
        turns = standby.turns_folder()
        runs = min(runs, JUDGE_RUNS if turns is None else max(JUDGE_RUNS, kg.state.config.confirm_min_rounds))
    elif kg.state.config.confirm and not kg.state.options.save:
        stored = _stored_entry(kg, spec)
        foreign = screened_against(stored, gpu)[1] if stored is not None else None
        if stored is not None and foreign is not None:
            # judged at once where this process judges (not a pytest-xdist worker: the controller
            # does) and a base can be checked out (judged_now); else one run, the judge at the end
            runs = min(runs, FOREIGN_RUNS)
            now = None if hasattr(kg.node.config, "workerinput") else (stored, foreign)
    # the children's OMP_NUM_THREADS is the run's as it was configured, never what `import ultralytics`
    # set in this process since (a kernel benchmark before this one); on a GPU host shared among its
    # GPUs' jobs, where the run set none, this job's share (recorded with the scenario's variables);
    # the caller's wins
    at_start = kg.state.options.threads_env
    env = threads.for_coldstart(spec.device, at_start, os.environ) | dict(env)
    unset = [threads.VARIABLE] if at_start is None else []
    with tempfile.TemporaryDirectory(prefix="kernelgate-coldstart-") as work:
        runner = Runner(spec, chosen, Path(work), env, unset=unset)
        try:
            runner.prepare()
        except ProbeUnavailable as exc:
            pytest.skip(str(exc))
        if now is not None:
            repeated = repeats_twin(kg, spec, chosen, runner.env)
            if repeated is not None:  # skipped, and said in the kernelgate section and the report too
                name = spec.benchmark(chosen.name)
                kg.state.note(f"kernelgate: {name}: {repeated}")
                kg.state.add_unmeasured(name, repeated)
                pytest.skip(f"{name}: {repeated}")
        judged = judged_now(kg, *now) if now is not None else None
        if judged is not None:
            return judged
        if prime:
            with standby.turn(turns) if turns is not None else contextlib.nullcontext():
                first = runner.prime()
            if not first.ok:
                pytest.fail(
                    f"kernelgate: cold start {spec.id} {scenario}: the priming run failed {first.failure}",
                    pytrace=False,
                )
        if turns is not None:  # each run when the judge grants it; its parent reads the record only
            for _ in range(runs):
                with standby.turn(turns):
                    runner.run_or_raise()
            stats = None
        else:
            stats = timing.pedantic(
                kg.benchmark, kg.node.config, runner.run_or_raise, rounds=runs, warmup_rounds=0
            )
    record = runner.record(fallback_arch=identity.detect_arch_key(force_cpu=spec.device == "cpu"))
    if kg.state.options.confirm_out is not None:  # a same-host round: the parent judges
        from kernelgate.plugin.samehost import record_file

        out = record_file(kg.state.options.confirm_out, kg.node.nodeid)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record.to_json()), encoding="utf-8")
        return record
    kg.benchmark.extra_info[EXTRA_KEY] = record.to_json()
    result = carrier(record, fingerprint.this_round(record.environment, gpu))
    if stats is not None:
        # a round appended to a baseline keeps this runner's own runs beside the first round's
        appended = fingerprint.this_round({}, gpu).id if kg.state.options.append else None
        fields = bench_fields(stats, kg.benchmark.fullname, record, appended)
        kg.state.add_measured(Entry(kg.benchmark.fullname, result, fields))
    elif kg.state.options.save:
        pytest.fail(
            "kernelgate: --kernelgate-save needs pytest-benchmark's timings, but benchmarking is "
            "disabled. Run without --benchmark-disable / --benchmark-skip.",
            pytrace=False,
        )
    if kg.state.options.save:
        return record
    found = kg.baseline_entry(result)
    if found is None:
        return record
    entry, path = found
    base, foreign, own = screened_against(entry, gpu)
    if base is None:
        pytest.fail(
            f"kernelgate: {shown(path)} has an entry {kg.benchmark.fullname!r} without a cold-start record; "
            f"re-record it: {record_command(kg.target)}",
            pytrace=False,
        )
    comparison = compare_scenario(base, record, kg.state.config)
    if own:
        comparison = replace(comparison, notes=(*comparison.notes, own))
        kg.state.note(f"kernelgate: cold starts: {own}")
    # the entry compared with, this GPU's or another's (--kernelgate-allow-other-gpu)
    foreign = foreign if kg.state.config.confirm else None
    if foreign is not None:
        comparison = replace(comparison, notes=(*comparison.notes, foreign_note(foreign)))
        kg.state.note(f"kernelgate: cold starts: {foreign_note(foreign)}")
    if (comparison.failed or foreign is not None) and kg.state.config.confirm:
        # the same-host judge decides at the session's end
        from kernelgate.plugin.samehost import COLDSTART, Suspect

        why = ANOTHER_HOST if foreign is not None else ""
        if comparison.failed:
            from kernelgate.verdict.settled import names

            why = "; ".join(filter(None, [names(comparison.failures, roles=False), why]))
        flagged = tuple((d.scope, d.name) for d in comparison.failures)
        kg.state.add_suspect(
            Suspect(kg.node.nodeid, COLDSTART, comparison, base.to_json(), why, flagged=flagged)
        )
        return record
    kg.state.add_comparison(comparison)
    kg.state.note(summary(comparison))
    if comparison.failed:
        changes = envdiff.changes(base.environment, record.environment)
        text = scenario_failure(comparison, base, record, shown(path), changes, target=kg.target)
        pytest.fail(text, pytrace=False)
    return record


def _on_terminal(kg: KernelGate) -> contextlib.AbstractContextManager[None]:
    """The judge's lines go to the terminal as it works, not into the running test's captured output."""
    capture = kg.node.config.pluginmanager.getplugin("capturemanager")
    return capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()


def judged_now(kg: KernelGate, stored: Entry, foreign: str) -> ColdStart | None:
    """A cold start whose stored runs are another host's, judged at its test's own time: its runs
    there would show only this runner's offset, so none are taken in this process; the same-host
    judge measures base and head in turns now (the processes it would start after the last test),
    and the head's runs are the test's record. Its reports wait for the run's end like any suspect's
    (:mod:`kernelgate.plugin.outcome`). None where no base can be checked out (no git repository, no
    base ref): then the screen takes its one run, and the judge's reason comes after the last test."""
    import pytest

    from kernelgate.baseline.names import shown
    from kernelgate.baseline.reading import Entry
    from kernelgate.plugin.deciders import decide_coldstart
    from kernelgate.plugin.judgement import judge_of
    from kernelgate.plugin.samehost import COLDSTART, LOGS, Suspect
    from kernelgate.verdict.settled import names

    base = record_of(stored)
    if base is None:
        pytest.fail(
            f"kernelgate: the baseline entry {kg.benchmark.fullname!r} has no cold-start record; "
            f"re-record it: {record_command(kg.target)}",
            pytrace=False,
        )
    cfg, nodeid = kg.state.config, kg.node.nodeid
    judge = judge_of(kg.node.config, kg.state)
    # until the head's runs exist, the suspect names the stored runs alone (only its name is read)
    waiting = Suspect(nodeid, COLDSTART, compare_scenario(base, base, cfg), base.to_json(), ANOTHER_HOST)
    with _on_terminal(kg):
        judge.log("")
        judge.log(f"kernelgate: {base.id}: {foreign_note(foreign, now=True)}")
        unready = judge.prepare()
        if isinstance(unready, str):
            judge.log(f"kernelgate: {base.id}: no base to measure against now ({unready}): one run here")
            return None
        decision = judge.run([waiting], {COLDSTART: decide_coldstart(kg.state)})[nodeid]
    heads = [ColdStart.from_json(raw) for raw in judge.records(nodeid)[1]]
    if not heads or not any(h.runs for h in heads):
        kg.state.add_early(waiting, decision)
        logs = shown(kg.state.options.out_dir / LOGS)
        pytest.fail(
            f"kernelgate: cold start {base.id}: the same-host judge has no run of the head on this runner "
            f"({decision.reason}); each process's output: {logs}/",
            pytrace=False,
        )
    record = replace(heads[0], runs=tuple(run for h in heads for run in h.runs))
    comparison = compare_scenario(base, record, cfg)
    comparison = replace(comparison, notes=(*comparison.notes, foreign_note(foreign, now=True)))
    why = "; ".join(filter(None, [names(comparison.failures, roles=False), ANOTHER_HOST]))
    # the launch-to-steady-state total always, then each phase off the stored runs: the judge's
    # answer names them base -> head, so that a pass says what it measured
    total = [(d.scope, d.name) for d in comparison.deltas if d.name == TOTAL]
    flagged = tuple(dict.fromkeys([*total, *((d.scope, d.name) for d in comparison.failures)]))
    suspect = Suspect(nodeid, COLDSTART, comparison, base.to_json(), why, flagged=flagged)
    kg.state.add_early(suspect, decision)
    judge.amend(suspect)
    kg.state.note(f"kernelgate: cold starts: {foreign_note(foreign, now=True)}")
    kg.benchmark.extra_info[EXTRA_KEY] = record.to_json()
    stats = timing.timed_elsewhere(kg.benchmark, [r.process_ms / 1000.0 for r in record.ok_runs])
    gpu = record.spec.device.startswith("cuda")
    result = carrier(record, fingerprint.this_round(record.environment, gpu))
    fields = bench_fields(stats, kg.benchmark.fullname, record)
    kg.state.add_measured(Entry(kg.benchmark.fullname, result, fields))
    return record


def repeats_twin(kg: KernelGate, spec: ChildSpec, scenario: Scenario, env: Mapping[str, str]) -> str | None:
    """Why a warm-cache cold start, about to be judged on this runner, would only repeat its cold twin's
    processes (:func:`~kernelgate.coldstart.scenarios.cold_twin`): the twin of the same spec and
    variables was judged on this runner in this session, every run of base and head completed, and
    none left a JIT-compiled kernel in its cache. A warm cache then has nothing for the children to
    reuse (an eager model whose kernels all have native code for this GPU), so its children would run
    the twin's processes again, and the twin's verdict answers for both. None where that does not
    hold: under ``torch.compile`` (a warm start reuses Inductor's and Triton's caches), where the twin
    compiled something, or was not judged here."""
    from kernelgate.plugin.samehost import COLDSTART

    twin = cold_twin(scenario)
    judge = kg.state.judge
    if twin is None or spec.mode == COMPILE or judge is None:
        return None
    name = spec.benchmark(twin.name)
    judged = [s for s in kg.state.suspects if s.kind == COLDSTART and s.nodeid in kg.state.early
              and s.screen.benchmark == name]  # fmt: skip
    if not judged:
        return None
    base, head = judge.records(judged[-1].nodeid)
    records = [ColdStart.from_json(raw) for raw in (*base, *head)]
    if not base or not head or any(r.spec != spec or dict(r.env) != dict(env) for r in records):
        return None
    runs = [run for r in records for run in r.runs]
    most = nothing_compiled([run.cache_bytes for run in runs]) if all(run.ok for run in runs) else None
    if most is None:
        return None
    return (
        f"not measured: a warm cache holds nothing to reuse on this runner, so its processes would repeat "
        f"those of {name}, judged just before with the same model and variables, whose {len(runs)} runs "
        f"of base and head each left the CUDA JIT cache with no compiled kernel (at most {most} bytes); "
        f"that one's verdict answers for both. Run alone, this scenario is judged in full: pytest "
        f"'{kg.node.nodeid}'"
    )


def _stored_entry(kg: KernelGate, spec: ChildSpec) -> Entry | None:
    """This cold start's entry in this machine's baseline file, read before measuring (it sets how
    many runs the screen takes), or None where there is none to go by."""
    from kernelgate.baseline import reading
    from kernelgate.baseline.errors import BaselineError

    arch = identity.detect_arch_key(force_cpu=spec.device == "cpu")
    path = reading.path_for(kg.state.config.baseline_dir, arch)
    if not path.is_file():
        return None
    try:
        return kg.state.baseline_entries(path, arch).get(kg.benchmark.fullname)
    except BaselineError:
        return None  # the measurement's own lookup fails the test with the reason


def screened_against(entry: Entry, gpu: bool) -> tuple[ColdStart | None, str | None, str]:
    """The record the screen compares this runner's cold start with, the other host whose runs those
    are (None: this runner's own) and a note where they are the runs this runner appended rather than
    the entry's first ones. A fleet whose runners each append their rounds (``kernelgate record
    --rounds 2 --append``) so screens each on its own runs, as exact as on the first host, and sends a
    cold start to the same-host judge only where it moved there."""
    host = fingerprint.this_round({}, gpu)
    foreign = recorded_elsewhere(entry, gpu, host)
    if foreign is None:
        return record_of(entry), None, ""
    own = own_record(entry, host.id)
    if own is None:
        return record_of(entry), foreign, ""
    return own, None, f"screened against this runner's own runs (host {host.id}, appended to the baseline)"


def recorded_elsewhere(entry: Entry, gpu: bool, host: HostFingerprint | None = None) -> str | None:
    """The host that recorded the runs of ``entry``'s cold-start record, where this runner is not it
    (or it is unknown: a baseline recorded without host fingerprints); None where this runner recorded
    them. A round appended later (``--kernelgate-append``, another runner's too) adds its host to the
    entry but not its runs to the record, which stays the first round's (pytest-benchmark's fields);
    its runs go beside it, by host (:func:`screened_against` reads them). ``host``: this runner's
    fingerprint, where the caller read it already."""
    first = entry.measurement.round_hosts[0] if entry.measurement.round_hosts else None
    if first is None:
        return "an unknown host: its rounds carry no fingerprint"
    if first.id == (host or fingerprint.this_round({}, gpu)).id:
        return None
    others = len({h.id for h in entry.hosts.hosts} - {first.id})
    more = f"; {others} other host(s) appended rounds, but no runs of this runner" if others else ""
    return f"{first.short()}, whose runs the record holds{more}"


ANOTHER_HOST = "another host's baseline"


def foreign_note(hosts: str, now: bool = False) -> str:
    """Why a cold start went to the same-host judge: at once (``now``: :func:`judged_now`), or after
    one run of the screen (a pytest-xdist worker's, or where no base could be checked out)."""
    head = (
        f"this runner is not the host that recorded this cold start's baseline ({hosts}): a cold start "
        "depends on the host (its disk, CPU and page cache) more than on the code, so "
    )
    if now:
        return head + (
            "base and head are measured on this runner at the test's own time, in turns, and decide; the "
            "stored numbers show this runner's offset only"
        )
    return head + (
        f"the stored numbers show this runner's offset only ({FOREIGN_RUNS} run), and base and head "
        "measured on this runner decide"
    )
