"""The fixture's ``coldstart(...)``: measure a cold-start scenario, keep it for the baseline file, gate it
(:mod:`kernelgate.coldstart.verdict`)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelgate.coldstart.phases import COMPILE, PTX_PROBE, ChildSpec, ColdStart
from kernelgate.coldstart.ptxprobe.build import ProbeUnavailable
from kernelgate.coldstart.runner import Runner
from kernelgate.coldstart.scenarios import SCENARIOS
from kernelgate.coldstart.verdict import (
    EXTRA_KEY,
    bench_fields,
    carrier,
    compare_scenario,
    ptx_unavailable,
    record_of,
    scenario_failure,
    summary,
)
from kernelgate.config import record_command
from kernelgate.machine import envdiff, fingerprint, identity
from kernelgate.measure import timing

if TYPE_CHECKING:
    from kernelgate.plugin.fixture import KernelGate


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
    from kernelgate.baseline.store import Entry

    if scenario not in SCENARIOS:
        raise ValueError(f"scenario {scenario!r}: use one of {sorted(SCENARIOS)}")
    chosen = SCENARIOS[scenario]
    if chosen.compile_only and spec.mode != COMPILE:
        raise ValueError(f"scenario {scenario!r} changes a compile option: it needs mode='compile'")
    if chosen.force_ptx:
        reason = ptx_unavailable(spec.device)
        if reason:
            pytest.skip(reason)
    with tempfile.TemporaryDirectory(prefix="kernelgate-coldstart-") as work:
        runner = Runner(spec, chosen, Path(work), env)
        try:
            runner.prepare()
        except ProbeUnavailable as exc:
            pytest.skip(str(exc))
        if prime:
            first = runner.prime()
            if not first.ok:
                pytest.fail(
                    f"kernelgate: cold start {spec.id} {scenario}: the priming run failed {first.failure}",
                    pytrace=False,
                )
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
    result = carrier(record, fingerprint.this_round(record.environment, spec.device.startswith("cuda")))
    if stats is not None:
        kg.state.add_measured(
            Entry(kg.benchmark.fullname, result, bench_fields(stats, kg.benchmark.fullname, record))
        )
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
    base = record_of(entry)
    if base is None:
        pytest.fail(
            f"kernelgate: {shown(path)} has an entry {kg.benchmark.fullname!r} without a cold-start record; "
            f"re-record it: {record_command(kg.target)}",
            pytrace=False,
        )
    comparison = compare_scenario(base, record, kg.state.config)
    if comparison.failed and kg.state.config.confirm:  # the same-host judge decides at session end
        from kernelgate.plugin.samehost import COLDSTART, Suspect

        kg.state.add_suspect(Suspect(kg.node.nodeid, COLDSTART, comparison, base.to_json()))
        return record
    kg.state.add_comparison(comparison)
    kg.state.note(summary(comparison))
    if comparison.failed:
        changes = envdiff.changes(base.environment, record.environment)
        text = scenario_failure(comparison, base, record, shown(path), changes, target=kg.target)
        pytest.fail(text, pytrace=False)
    return record
