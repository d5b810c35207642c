"""Cold starts under torch.compile: the spec and its id, the scenarios' cache folders (empty, warm,
changed), what a run's details say, the gate naming the `compile` phase with the caches beside it, the
command, and a real compiled child on the CPU (Inductor's C++ backend)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kernelgate import cli
from kernelgate.coldstart import command, compiled
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.coldstart.child import MARK
from kernelgate.coldstart.phases import ChildSpec, ColdStart, Run, explain
from kernelgate.coldstart.runner import Runner
from kernelgate.coldstart.scenarios import SCENARIOS
from kernelgate.config import GateConfig
from kernelgate.machine.compile_cache import triton_kernels

SPEC = ChildSpec("yolov8n", "fp16", 1, 640, "cuda", 50, mode="compile")

# a stand-in child: reports its cache folders and options, and leaves a file in each cache folder
CACHE_CHILD = f"""
import json, os, sys, time
args = json.loads(sys.argv[1])
seen = {{}}
for var in ("CUDA_CACHE_PATH", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
    os.makedirs(os.environ[var], exist_ok=True)
    seen[var] = sorted(os.listdir(os.environ[var]))
    open(os.path.join(os.environ[var], "entry-%d" % time.perf_counter_ns()), "w").write("x")
phases = {{"startup": 5.0, "import_torch": 900.0, "build": 50.0, "compile": 20000.0, "first_inference": 9.0}}
out = {{"ok": True, "phases_ms": phases, "arch": "sm90-nvidia-h100-80gb-hbm3",
       "environment": {{"paths": json.dumps({{k: os.environ[k] for k in seen}}), "seen": json.dumps(seen),
                        "options": args["spec"]["compile_options"]}},
       "details": {{"inductor.fxgraph_cache_hit": 1.0}}}}
print({MARK!r} + json.dumps(out))
"""


def runner(tmp_path: Path, scenario: str, spec: ChildSpec = SPEC, **kwargs: Any) -> Runner:
    return Runner(spec, SCENARIOS[scenario], tmp_path, command=(sys.executable, "-c", CACHE_CHILD), **kwargs)


def seen(run_env: dict[str, str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    return json.loads(run_env["paths"]), json.loads(run_env["seen"])


def test_the_spec_names_its_mode_and_keeps_its_options_out_of_the_id() -> None:
    assert SPEC.id == "yolov8n-fp16-bs1-640-compile"
    with_options = replace(SPEC, compile_options='{"fx_graph_cache": false}')
    assert with_options.id == SPEC.id and with_options.options == {"fx_graph_cache": False}
    data = SPEC.to_json()
    assert data["mode"] == "compile" and "compile_options" not in data and "probe_kernels" not in data
    eager = ChildSpec().to_json()  # an eager spec reads as before these fields existed
    assert set(eager) == {"model", "precision", "batch", "imgsz", "device", "iterations", "cudnn_benchmark"}
    assert ChildSpec(**eager) == ChildSpec() and ChildSpec(**data) == SPEC


def test_empty_gives_every_run_fresh_compile_caches_and_warm_shares_the_primed_ones(tmp_path: Path) -> None:
    empty = runner(tmp_path / "e", "empty")
    empty.prime()
    empty.run()
    empty.run()
    paths, found = seen(empty._reports[-1]["environment"])
    assert found == {"CUDA_CACHE_PATH": [], "TORCHINDUCTOR_CACHE_DIR": [], "TRITON_CACHE_DIR": []}
    assert Path(paths["TORCHINDUCTOR_CACHE_DIR"]).name == "inductor"
    assert Path(paths["TRITON_CACHE_DIR"]).name == "triton" and Path(paths["CUDA_CACHE_PATH"]).name == "cuda"
    warm = runner(tmp_path / "w", "warm")
    warm.prime()
    warm.run()
    warm.run()
    _, found = seen(warm._reports[-1]["environment"])
    assert all(len(entries) == 2 for entries in found.values())  # the priming run's and run 1's


def test_changed_starts_each_run_from_a_copy_of_the_primed_caches_with_the_option_changed(
    tmp_path: Path,
) -> None:
    r = runner(tmp_path, "changed")
    r.prime()
    assert r._reports[0]["environment"]["options"] == ""  # the priming run: the spec's own options
    r.run()
    r.run()
    for report in r._reports[1:]:
        _, found = seen(report["environment"])
        assert all(len(entries) == 1 for entries in found.values())  # only the priming run's entries
        assert json.loads(report["environment"]["options"]) == {"size_asserts": False}
    assert len(os.listdir(r.primed / "inductor")) == 1  # the primed folder itself is not written to
    assert r.record().spec == SPEC  # the record keeps the spec's options


def test_a_given_cache_folder_is_used_and_kept(tmp_path: Path) -> None:
    kept = tmp_path / "ci-cache"
    r = runner(tmp_path / "work", "warm", cache_dir=kept)
    r.prime()
    r.run()
    assert len(list((kept / "inductor").iterdir())) == 2 and len(list((kept / "triton").iterdir())) == 2


def test_the_details_of_a_run_and_what_they_say(tmp_path: Path) -> None:
    run = Run({"compile": 20000.0}, 21000.0, 0, details={"inductor.fxgraph_cache_hit": 1.0})
    assert Run.from_json(json.loads(json.dumps(run.to_json()))) == run
    assert "details" not in Run({"build": 1.0}, 2.0, 0).to_json()  # as records before details existed
    words = explain(
        {
            "inductor.fxgraph_cache_hit": 1.0,
            "aot_autograd.autograd_cache_miss": 1.0,
            "triton.kernels_compiled": 0.0,
            "triton.kernels_after": 412.0,
            "time._compile.compile_inner": 12.5,
            "time.bytecode_tracing": 3.25,
            "time.async_compile.wait": 0.5,
        },
        steps=2,
    )
    assert words == (
        "FX-graph cache 1 hit / 0 miss / 0 bypass; AOTAutograd cache 0 hit / 1 miss / 0 bypass; "
        "Triton compiled 0 kernel(s), 412 in its cache after; "
        "slowest steps: _compile.compile_inner 12.5 s, bytecode_tracing 3.2 s"
    )
    assert explain({}) == ""


def test_the_triton_kernels_a_run_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    triton = tmp_path / "triton"
    for name, files in {"a": ["k.cubin", "k.ptx"], "b": ["k.json"], "c": ["k.cubin"]}.items():
        (triton / name).mkdir(parents=True)
        for f in files:
            (triton / name / f).write_bytes(b"x" * 10)
    assert triton_kernels(triton) == 2  # entries without a cubin (launcher, autotune json) do not count
    monkeypatch.setenv("TRITON_CACHE_DIR", str(triton))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    before = compiled.cache_state()
    (triton / "d").mkdir()
    (triton / "d" / "k.cubin").write_bytes(b"x")
    pytest.importorskip("torch")
    found = compiled.details(before)
    assert (
        found["triton.kernels_before"],
        found["triton.kernels_after"],
        found["triton.kernels_compiled"],
    ) == (
        2.0,
        3.0,
        1.0,
    )
    assert found["triton.cache_bytes"] == 41.0 and found["inductor.cache_bytes"] == 0.0


def compiled_record(compile_ms: list[float], details: dict[str, float], options: str = "") -> ColdStart:
    runs = tuple(
        Run(
            {
                "startup": 40.0,
                "import_torch": 4500.0,
                "import_model": 900.0,
                "cuda_init": 600.0,
                "build": 300.0,
                "compile": c,
                "first_inference": 9.0,
                "to_steady": 30.0,
            },
            c + 6500.0,
            0,
            details=details,
        )
        for c in compile_ms
    )
    spec = replace(SPEC, compile_options=options)
    return ColdStart(spec, "warm", "sm90-nvidia-h100-80gb-hbm3", {}, runs, {"torch": "2.11.0+cu130"})


def test_a_head_that_stops_the_fx_graph_cache_fails_in_the_compile_phase() -> None:
    warm = {"inductor.fxgraph_cache_hit": 1.0, "triton.kernels_compiled": 0.0, "triton.kernels_after": 400.0}
    base = compiled_record([19500.0, 20100.0, 19800.0], warm)
    missed = {
        "inductor.fxgraph_cache_miss": 1.0,
        "triton.kernels_compiled": 0.0,
        "triton.kernels_after": 400.0,
    }
    head = compiled_record(
        [41000.0, 40500.0, 42000.0], missed | {"time.compile_fx_inner": 22.0}, '{"fx_graph_cache": false}'
    )
    comparison = coldverdict.compare_scenario(base, head, GateConfig())
    assert [d.name for d in comparison.failures] == ["to_steady_state", "compile"]
    text = coldverdict.scenario_failure(
        comparison, base, head, "baselines/x.json", target="benchmarks/test_coldstart.py::test_coldstart[x]"
    )
    lines = text.splitlines()
    assert lines[2].startswith("  REGRESSED compile (first call of the torch.compile'd model")
    assert "19.80 s -> 41.00 s" in lines[2]
    assert '  compile options: (none) -> {"fx_graph_cache": false}' in lines
    assert (
        "  caches, baseline: FX-graph cache 1 hit / 0 miss / 0 bypass; Triton compiled 0 kernel(s), "
        "400 in its cache after" in lines
    )
    assert any(
        line.startswith("  caches, now: FX-graph cache 0 hit / 1 miss") and "compile_fx_inner 22.0 s" in line
        for line in lines
    )
    assert not coldverdict.compare_scenario(base, compiled_record([20500.0] * 3, warm), GateConfig()).failed
    table = coldverdict.table([base, head])
    assert "compile" in table and "load_driver" not in table  # only the phases some record has
    assert "coldstart-yolov8n-fp16-bs1-640-compile-warm: FX-graph cache 0 hit / 1 miss" in table


def test_the_command_picks_the_scenarios_of_its_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert command.default_scenarios(SPEC) == "empty,warm,changed"
    assert command.default_scenarios(replace(SPEC, mode="eager")) == "empty,warm,ptx-jit"
    assert command.default_scenarios(ChildSpec("ptxprobe", probe_kernels=8)) == "empty,warm,small-cache"
    assert command.default_scenarios(replace(SPEC, device="cpu")) == "empty"
    assert cli.main(["coldstart", "--device", "cpu", "--scenarios", "changed"]) == 2
    assert "add --mode compile" in capsys.readouterr().out
    # bad input: exit 2 with one line (kernelgate.exits)
    assert cli.main(["coldstart", "--device", "cpu", "--mode", "compile", "--compile-options", "[1]"]) == 2
    assert "--compile-options '[1]': no JSON object" in capsys.readouterr().err


def test_the_fixture_refuses_changed_without_compile() -> None:
    from kernelgate.plugin.coldstart import child_spec, run

    eager = child_spec("cuda", "yolov8n", "fp16", 1, 640, "eager", None, 8)
    with pytest.raises(
        ValueError, match="scenario 'changed' changes a compile option: it needs mode='compile'"
    ):
        run(None, eager, "changed", 1, True, {})  # type: ignore[arg-type]

    spec = child_spec("cuda", "yolov8n", "fp16", 1, 640, "compile", {"b": 1, "a": 2}, 8)
    assert spec.compile_options == '{"a": 2, "b": 1}' and spec.probe_kernels == 0
    assert child_spec("cuda", "ptxprobe", "fp16", 1, 640, "eager", None, 8).id == "ptxprobe-8k"


# --- a real compiled child on the CPU --------------------------------------------------------------

TINY = """
import torch


def net():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.SiLU(), torch.nn.Conv2d(8, 4, 1))
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not any(shutil.which(c) for c in ("g++", "c++", "clang++")),
    reason="Inductor's CPU backend compiles C++: no C++ compiler on this machine",
)
def test_a_real_compiled_child_misses_then_hits_the_fx_graph_cache(tmp_path: Path) -> None:
    """The priming run of `warm` compiles with empty caches (FX-graph cache miss); the timed run
    finds the primed caches (hit) and its `compile` phase is shorter."""
    pytest.importorskip("ultralytics")
    (tmp_path / "tinynet.py").write_text(TINY)
    src = Path(compiled.__file__).parents[2]
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(src), os.environ.get("PYTHONPATH", "")])}
    spec = ChildSpec("tinynet:net", "fp32", 1, 32, "cpu", iterations=3, mode="compile")
    r = Runner(spec, SCENARIOS["warm"], tmp_path / "work", env)
    first = r.prime()
    assert first.ok, first.error
    second = r.run()
    assert second.ok, second.error
    for run in (first, second):
        assert list(run.phases_ms) == [
            "startup",
            "import_torch",
            "import_model",
            "build",
            "compile",
            "first_inference",
            "to_steady",
        ]
        assert run.details["time.import_compiler"] > 0 and run.details["inductor.cache_bytes"] > 0
    assert first.details.get("inductor.fxgraph_cache_miss") == 1.0, first.details
    assert second.details.get("inductor.fxgraph_cache_hit") == 1.0, second.details
    assert second.phases_ms["compile"] < first.phases_ms["compile"]
    assert r.record().environment["triton"]  # the Triton version, recorded with compiled cold starts


def test_the_mega_cache_hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    torch = pytest.importorskip("torch")
    assert compiled.save_artifacts() == {} and compiled.load_artifacts() == {}  # neither variable set
    monkeypatch.setenv("KERNELGATE_SAVE_COMPILE_ARTIFACTS", str(tmp_path / "a" / "mega.bin"))
    monkeypatch.setattr(torch.compiler, "save_cache_artifacts", lambda: (b"12345", object()))
    assert compiled.save_artifacts() == {"artifacts.saved_bytes": 5.0}
    assert (tmp_path / "a" / "mega.bin").read_bytes() == b"12345"

    def broken() -> None:
        raise RuntimeError("no precompile entry")

    monkeypatch.setattr(torch.compiler, "save_cache_artifacts", broken)
    assert compiled.save_artifacts() == {"artifacts.saved_bytes": -1.0}  # after the timed phases: kept
    assert "save_cache_artifacts() failed: RuntimeError: no precompile entry" in capsys.readouterr().err
    loaded: list[bytes] = []
    monkeypatch.setenv("KERNELGATE_LOAD_COMPILE_ARTIFACTS", str(tmp_path / "a" / "mega.bin"))
    monkeypatch.setattr(torch.compiler, "load_cache_artifacts", lambda data: loaded.append(data) or object())
    assert compiled.load_artifacts() == {"artifacts.loaded_bytes": 5.0, "artifacts.loaded": 1.0}
    assert loaded == [b"12345"]
