"""Cold starts: the child's steady state, the parent's scenarios (on a fake child), records, verdicts."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from factories import bench_fields

from kernelgate import cli
from kernelgate.baseline import store as baseline
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.coldstart.child import MARK, steady_index
from kernelgate.coldstart.phases import ChildSpec, ColdStart, Run
from kernelgate.coldstart.runner import ColdStartError, Runner, measure
from kernelgate.coldstart.scenarios import SCENARIOS
from kernelgate.config import GateConfig, Rule, Scope
from kernelgate.verdict.compare import Verdict

# A stand-in child: reports what it was given and leaves FAKE_CACHE_BYTES bytes in its JIT cache folder.
FAKE_CHILD = f"""
import json, os, sys, time
args = json.loads(sys.argv[1])
cache = os.environ["CUDA_CACHE_PATH"]
if os.environ.get("FAKE_SLEEP"):
    time.sleep(float(os.environ["FAKE_SLEEP"]))
if os.environ.get("FAKE_SILENT"):
    sys.stderr.write("Traceback ...\\nImportError: libcudart.so.13: cannot open shared object file\\n")
    sys.exit(3)
previous = len(os.listdir(cache))
with open(os.path.join(cache, "jit-%d.bin" % time.perf_counter_ns()), "wb") as fh:
    fh.write(b"x" * int(os.environ.get("FAKE_CACHE_BYTES", "0")))
print("ultralytics says hello")
fail = os.environ.get("FAKE_FAIL")
phases = {{"startup": 10.0, "import_torch": 1000.0, "first_inference": 200.0 + 1000 * previous}}
out = {{"ok": not fail, "phases_ms": phases,
       "steady_ms": 4.0, "steady_after": 2, "arch": "sm90-nvidia-h200",
       "environment": {{"ptx": os.environ.get("CUDA_FORCE_PTX_JIT", "unset"), "cache": cache,
                        "x": os.environ.get("X", "unset"), "spec": args["spec"]["model"]}}}}
if fail:
    out.update(error="RuntimeError: CUDA error: no kernel image is available", failed_phase=fail)
print({MARK!r} + json.dumps(out))
"""
SPEC = ChildSpec("yolov8n", "fp16", 1, 640, "cuda", 50)


def runner(tmp_path: Path, scenario: str = "empty", **kwargs: Any) -> Runner:
    return Runner(SPEC, SCENARIOS[scenario], tmp_path, command=(sys.executable, "-c", FAKE_CHILD), **kwargs)


# --- steady state -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("durations", "index"),
    [
        ([], 0),
        ([4.0] * 10, 0),
        ([40.0, 9.0, 4.0, 4.1, 3.9, 4.0, 4.2, 4.0, 4.0, 4.1], 2),
        ([4.0, 4.0, 30.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0], 3),  # one late spike: steady after it
        ([9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 4.0, 4.0, 4.0, 4.0], 3),  # within 50 % of the late median from 6.0
        ([9.0, 8.0, 7.0, 6.0, 5.0, 4.0], 6),  # never five in a row within it
    ],
)
def test_steady_index(durations: list[float], index: int) -> None:
    assert steady_index(durations) == index


# --- the parent, on a fake child ----------------------------------------------------------------------


def test_empty_cache_scenario_gives_every_run_a_fresh_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CACHE_BYTES", "1000")
    monkeypatch.setenv("CUDA_FORCE_PTX_JIT", "1")  # the caller's: the scenario decides
    r = runner(tmp_path)
    first, second = r.run(), r.run()
    assert first.ok and second.ok
    assert first.phases_ms == {"startup": 10.0, "import_torch": 1000.0, "first_inference": 200.0}
    assert second.phases_ms["first_inference"] == 200.0  # nothing left by the first run
    assert first.cache_bytes == second.cache_bytes == 1000
    assert first.process_ms > 0 and first.steady_ms == 4.0 and first.steady_after == 2
    record = r.record()
    assert record.environment["ptx"] == "unset"
    assert record.env == {}
    assert record.arch == "sm90-nvidia-h200"
    assert record.id == "coldstart-yolov8n-fp16-bs1-640-empty"


def test_warm_scenario_reuses_its_folder_and_ptx_is_forced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CACHE_BYTES", "500")
    r = runner(tmp_path, "ptx-jit-warm", extra_env={"X": "1"})
    r.spawn()  # priming: not kept
    run = r.run()
    assert len(r.runs) == 1
    assert run.phases_ms["first_inference"] == 1200.0  # the priming run's cache file was there
    assert run.cache_bytes == 1000
    record = r.record()
    assert record.environment["ptx"] == "1" and record.environment["x"] == "1"
    assert record.env == {"CUDA_FORCE_PTX_JIT": "1", "X": "1"}


def test_a_child_that_fails_reports_its_phase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_FAIL", "cuda_init")
    r = runner(tmp_path, "ptx-jit")
    with pytest.raises(
        ColdStartError, match="ptx-jit: in phase cuda_init: RuntimeError: CUDA error: no kernel image"
    ):
        r.run_or_raise()
    record = r.record(fallback_arch="sm90-fallback")
    assert record.error == "in phase cuda_init: RuntimeError: CUDA error: no kernel image is available"
    assert record.ok_runs == () and record.arch == "sm90-fallback"


def test_a_child_without_a_result_line_or_too_slow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SILENT", "1")
    silent = runner(tmp_path).run()
    assert silent.error is not None
    assert silent.error.startswith("child exited 3 without a result: Traceback ... | ImportError: libcudart")
    monkeypatch.delenv("FAKE_SILENT")
    monkeypatch.setenv("FAKE_SLEEP", "5")
    slow = runner(tmp_path, timeout_s=0.5).run()
    assert slow.error == "timed out after 0.5 s"


def test_measure_primes_then_stops_at_the_first_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_spawn(self: Runner, priming: bool = False) -> Run:
        calls.append("prime" if priming else "spawn")
        ok = len(calls) < 3
        return Run(
            {"import_torch": 1.0}, 2.0, 0, error=None if ok else "boom", failed_phase=None if ok else "build"
        )

    monkeypatch.setattr(Runner, "spawn", fake_spawn)
    lines: list[str] = []
    record = measure(SPEC, SCENARIOS["warm"], runs=5, progress=lines.append)
    assert calls == ["prime", "spawn", "spawn"]  # prime, run 1, run 2 (failed): no runs 3 to 5
    assert [r.ok for r in record.runs] == [True, False]
    assert (
        lines[0].startswith("warm: priming run") and lines[-1] == "warm: run 2/5 failed in phase build: boom"
    )


# --- records ----------------------------------------------------------------------------------------


def cold(scenario: str = "warm", **phases: list[float]) -> ColdStart:
    """A record with runs whose phases (ms) are given per run; defaults for the rest."""
    base = {
        "startup": [50.0] * 3,
        "import_torch": [2000.0] * 3,
        "cuda_init": [400.0] * 3,
        "build": [300.0] * 3,
    }
    base |= {"first_inference": [900.0] * 3, "to_steady": [10.0] * 3}
    base |= phases
    n = len(next(iter(base.values())))
    runs = tuple(Run({p: v[i] for p, v in base.items()}, 4000.0, 1024, 4.0, 2) for i in range(n))
    env = {"gpu": "NVIDIA H200", "torch": "2.11.0+cu130", "driver": "580.159.04"}
    return ColdStart(SPEC, scenario, "sm90-nvidia-h200", {}, runs, env)


def test_record_json_round_trip_and_medians() -> None:
    record = cold(first_inference=[900.0, 950.0, 1000.0])
    data = record.to_json()
    assert data["benchmark"] == "coldstart-yolov8n-fp16-bs1-640-warm"
    assert data["median_ms"]["first_inference"] == 950.0
    assert data["median_ms"]["to_steady_state"] == 3710.0  # 50+2000+400+300+950+10
    assert data["jit_cache_bytes"] == 1024
    assert ColdStart.from_json(json.loads(json.dumps(data))) == record
    first = record.phase("first_inference")
    assert first is not None and first.samples == (900000.0, 950000.0, 1000000.0)  # µs
    assert record.phase("nonexistent") is None


def test_a_cold_start_entry_survives_the_baseline_file(tmp_path: Path) -> None:
    record = cold()
    fullname = "benchmarks/test_coldstart.py::test_coldstart[yolov8n-fp16-bs1-640-warm]"
    entry = baseline.Entry(
        fullname, coldverdict.carrier(record), coldverdict.bench_fields(None, fullname, record)
    )
    path = tmp_path / "0001_kernelgate.json"
    doc = baseline.document([entry], record.arch, {}, {}, "2026-11-21T00:00:00+00:00", "5.2.3")
    baseline.write_atomic(path, baseline.dumps(doc))
    (loaded,) = baseline.load(path).values()
    assert coldverdict.record_of(loaded) == record
    assert loaded.measurement.environment == record.environment
    assert loaded.measurement.total.median == pytest.approx(3660000.0)
    assert loaded.measurement.layers == () and loaded.measurement.kernels == ()
    kernel_entry = baseline.Entry("t::k", loaded.measurement, bench_fields("t::k"))
    assert coldverdict.record_of(kernel_entry) is None


# --- verdicts ----------------------------------------------------------------------------------------


def verdicts(base: ColdStart, current: ColdStart, config: GateConfig | None = None) -> dict[str, Verdict]:
    comparison = coldverdict.compare_scenario(base, current, config or GateConfig())
    return {d.name: d.verdict for d in comparison.deltas}


def test_an_unchanged_cold_start_passes() -> None:
    noisy = cold(import_torch=[2100.0, 1950.0, 2200.0], first_inference=[1000.0, 850.0, 990.0])
    found = verdicts(cold(), noisy)
    assert set(found.values()) == {Verdict.UNCHANGED}
    assert list(found) == ["to_steady_state", *[p for p in cold().runs[0].phases_ms]]


def test_the_jit_cache_disabled_regression_names_first_inference() -> None:
    """The seed case as a regression: PTX-JIT kernels, a warm cache in the baseline, none now."""
    base = cold("ptx-jit-warm", first_inference=[2500.0, 2400.0, 2600.0])
    disabled = cold("ptx-jit-warm", first_inference=[95000.0, 97000.0, 96000.0])
    disabled = replace(disabled, env={"CUDA_FORCE_PTX_JIT": "1", "CUDA_CACHE_DISABLE": "1"})
    disabled = replace(disabled, environment={**disabled.environment, "env.CUDA_CACHE_DISABLE": "1"})
    comparison = coldverdict.compare_scenario(base, disabled, GateConfig())
    assert comparison.failed
    assert [d.name for d in comparison.failures] == ["to_steady_state", "first_inference"]
    from kernelgate.machine.envdiff import changes

    message = coldverdict.scenario_failure(
        comparison,
        base,
        disabled,
        "baselines/sm90-nvidia-h200/0001_kernelgate.json",
        changes(base.environment, disabled.environment),
        target="benchmarks/test_coldstart.py::test_coldstart[yolov8n-fp16-bs1-640-ptx-jit-warm]",
    )
    lines = message.splitlines()
    assert lines[0] == (
        "kernelgate: cold start coldstart-yolov8n-fp16-bs1-640-ptx-jit-warm on sm90-nvidia-h200: "
        "1 phase(s) and the total over threshold"
    )
    assert "CUDA_CACHE_DISABLE=1 CUDA_FORCE_PTX_JIT=1" in lines[1]
    assert lines[2].startswith("  REGRESSED first_inference (first forward: kernel loading (PTX JIT)")
    assert "2.500 s -> 96.00 s (+3740.0 %, +93.50 s; threshold 25 %, floor 250 ms)" in lines[2]
    assert lines[3].startswith("  launch to steady state: 5.260 s -> 98.76 s")
    assert (
        "environment changed since the baseline (may explain it): CUDA_CACHE_DISABLE (unset) -> 1" in message
    )
    assert lines[-1] == (
        "  if this change is intended, re-record: "
        "pytest 'benchmarks/test_coldstart.py::test_coldstart[yolov8n-fp16-bs1-640-ptx-jit-warm]' "
        "--kernelgate-save"
    )
    assert "REGRESSED: to_steady_state, first_inference" in coldverdict.summary(comparison)


def test_the_floor_keeps_small_phases_from_failing() -> None:
    # build +67 % but only +200 ms: under the 250 ms floor
    assert verdicts(cold(), cold(build=[500.0] * 3))["build"] is Verdict.UNCHANGED
    assert verdicts(cold(), cold(build=[1000.0] * 3))["build"] is Verdict.REGRESSED
    assert verdicts(cold(), cold(build=[10.0] * 3))["build"] is Verdict.IMPROVED


def test_phases_new_or_missing_do_not_fail() -> None:
    cpu = cold()
    cpu = replace(
        cpu,
        runs=tuple(
            replace(r, phases_ms={k: v for k, v in r.phases_ms.items() if k != "cuda_init"}) for r in cpu.runs
        ),
    )
    found = verdicts(cpu, cold())
    assert found["cuda_init"] is Verdict.NEW
    assert verdicts(cold(), cpu)["cuda_init"] is Verdict.MISSING
    assert not coldverdict.compare_scenario(cpu, cold(), GateConfig()).failed


def test_phase_thresholds_come_from_the_coldstart_keys_and_phase_rules_only() -> None:
    config = GateConfig(
        coldstart_threshold=0.5,
        coldstart_floor_ms=100.0,
        rules=(Rule(threshold=0.01, floor_us=0.0), Rule(scope="phase", name="build", threshold=2.0)),
    )
    assert config.threshold("sm90-x", "b", Scope.PHASE, "import_torch").rel == 0.5
    assert config.threshold("sm90-x", "b", Scope.PHASE, "import_torch").floor_us == 100000.0
    assert config.threshold("sm90-x", "b", Scope.PHASE, "build").rel == 2.0
    assert config.threshold("sm90-x", "b", Scope.LAYER, "model.1").rel == 0.01  # the '*' rule, not phases
    assert verdicts(cold(), cold(build=[800.0] * 3), config)["build"] is Verdict.UNCHANGED


def test_kernelgate_compare_command_gates_cold_start_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def write(path: Path, record: ColdStart) -> None:
        fullname = "benchmarks/test_coldstart.py::test_coldstart[x]"
        entry = baseline.Entry(
            fullname, coldverdict.carrier(record), coldverdict.bench_fields(None, fullname, record)
        )
        doc = baseline.document([entry], record.arch, {}, {}, "2026-11-21T00:00:00+00:00", "5.2.3")
        baseline.write_atomic(path, baseline.dumps(doc))

    write(tmp_path / "base.json", cold())
    write(tmp_path / "same.json", cold())
    write(tmp_path / "slow.json", cold(cuda_init=[9000.0] * 3))
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.kernelgate]\ncoldstart_threshold = '25%'\n")
    args = ["compare", "--config", str(config), str(tmp_path / "base.json")]
    assert cli.main([*args, str(tmp_path / "same.json")]) == 0
    assert "to steady state, pass" in capsys.readouterr().out
    assert cli.main([*args, str(tmp_path / "slow.json")]) == 1
    assert "REGRESSED cuda_init (CUDA context and first kernel" in capsys.readouterr().out
    # the coldstart command reads the same file as its --compare baseline
    out = tmp_path / "records.json"
    out.write_text(json.dumps({coldverdict.EXTRA_KEY: [cold().to_json()]}))
    assert (
        coldverdict.read_records(tmp_path / "base.json").keys()
        == coldverdict.read_records(out).keys()
        == {cold().id}
    )


# --- the real child -----------------------------------------------------------------------------------


def test_a_real_child_on_the_cpu(tmp_path: Path) -> None:
    pytest.importorskip("ultralytics")
    spec = ChildSpec("yolov8n", "fp32", 1, 32, "cpu", iterations=5)
    env = {"KERNELGATE_SLOW_PHASE": "import_model:0.3"}
    record = measure(spec, SCENARIOS["empty"], runs=1, extra_env=env, prime=False)
    assert record.error is None, record.error
    (run,) = record.runs
    assert list(run.phases_ms) == [
        "startup",
        "import_torch",
        "import_model",
        "build",
        "first_inference",
        "to_steady",
    ]
    assert run.phases_ms["import_model"] >= 300.0  # the deliberate fault lands in its phase
    assert run.process_ms > run.total_ms - run.phases_ms["startup"]
    assert record.arch.startswith("cpu-")
    assert record.environment["device"] == "cpu"
    assert record.environment["env.KERNELGATE_SLOW_PHASE"] == "import_model:0.3"
    assert record.environment["env.CUDA_CACHE_PATH"] == "(kernelgate scenario folder)"
    assert (
        "torch" in record.environment
        and os.environ.get("CUDA_CACHE_PATH") != record.environment["env.CUDA_CACHE_PATH"]
    )


def test_a_warm_scenario_has_the_empty_one_of_its_kind_as_its_cold_twin() -> None:
    from kernelgate.coldstart.scenarios import cold_twin

    twins = {name: getattr(cold_twin(s), "name", None) for name, s in SCENARIOS.items()}
    assert twins == {
        "empty": None,  # starts empty itself
        "warm": "empty",
        "changed": None,  # changes a compile option too
        "small-cache": None,  # sets CUDA_CACHE_MAXSIZE too
        "ptx-jit": None,
        "ptx-jit-warm": "ptx-jit",
    }


def test_a_jit_cache_holding_its_index_alone_compiled_nothing() -> None:
    from kernelgate.coldstart.scenarios import NOTHING_COMPILED_BYTES, nothing_compiled

    assert nothing_compiled([3988, 3988, 0]) == 3988  # the index of an H100's runs, a CPU's none
    assert nothing_compiled([3988, NOTHING_COMPILED_BYTES + 1]) is None  # one run compiled a kernel
    assert nothing_compiled([393 * 1024]) is None  # the PTX probe's 4 kernels
    assert nothing_compiled([]) is None  # no runs: nothing shown
