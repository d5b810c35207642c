"""The PTX probe on the CPU: its source and nvcc command, why it skips, the build (on a fake nvcc, and
on the real one where the machine has it), the driver calls of its child on a fake libcuda, and its
gate failing when the JIT cache stops keeping it. The GPU run is tools/jit-coldstart."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelgate.coldstart import verdict as coldverdict
from kernelgate.coldstart.child import MARK
from kernelgate.coldstart.phases import ChildSpec, ColdStart, Run
from kernelgate.coldstart.ptxprobe import build, driver
from kernelgate.coldstart.runner import Runner, measure
from kernelgate.coldstart.scenarios import SCENARIOS, SMALL_CACHE_BYTES
from kernelgate.config import GateConfig
from kernelgate.verdict.compare import Verdict

PROBE = ChildSpec("ptxprobe", device="cuda", probe_kernels=4)
FAKE_PTX = "//\n.version 9.0\n.target sm_90\n.address_size 64\n.visible .entry kg_probe_0(\n)\n{\n}\n"


# --- source, command, reasons -----------------------------------------------------------------------


def test_the_source_instantiates_the_kernels_and_nvcc_emits_ptx_only(tmp_path: Path) -> None:
    text = build.wrapper_source(3)
    assert text.splitlines() == [
        f'#include "{build.SOURCE.resolve()}"',
        "KG_PROBE_KERNEL(0)",
        "KG_PROBE_KERNEL(1)",
        "KG_PROBE_KERNEL(2)",
    ]
    assert "#define KG_PROBE_KERNEL(I)" in build.SOURCE.read_text()
    with pytest.raises(ValueError, match="1 to 256 kernels, not 0"):
        build.wrapper_source(0)
    command = build.nvcc_command("/cuda/bin/nvcc", tmp_path / "p.cu", tmp_path / "p.ptx", (9, 0))
    assert command == [
        "/cuda/bin/nvcc",
        "-ptx",
        "-arch=compute_90",
        "-o",
        str(tmp_path / "p.ptx"),
        str(tmp_path / "p.cu"),
    ]
    assert build.kernel_names(2) == ["kg_probe_0", "kg_probe_1"]
    assert PROBE.id == "ptxprobe-4k" and ChildSpec("ptxprobe", probe_kernels=8).id == "ptxprobe-8k"


def test_why_the_probe_does_not_run() -> None:
    assert "GPU scenario (the device is the CPU)" in str(build.unavailable("cpu", (9, 0), "/bin/nvcc"))
    assert "NVML sees none" in str(build.unavailable("cuda", None, "/bin/nvcc"))
    no_nvcc = build.unavailable("cuda", (9, 0), None)
    assert no_nvcc is not None and "nvcc" in no_nvcc and "CUDA_HOME" in no_nvcc
    assert build.unavailable("cuda", (9, 0), "/bin/nvcc") is None


def test_nvcc_is_found_on_path_then_in_cuda_home(tmp_path: Path) -> None:
    assert build.find_nvcc({}, which=lambda _: "/usr/bin/nvcc") == "/usr/bin/nvcc"
    (tmp_path / "bin").mkdir()
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    assert build.find_nvcc({"CUDA_HOME": str(tmp_path)}, which=lambda _: None) == str(nvcc)
    found = build.find_nvcc({"CUDA_HOME": str(tmp_path / "none")}, which=lambda _: None)
    assert found in (None, "/usr/local/cuda/bin/nvcc")


def completed(code: int, out: str = "", err: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess([], code, out, err)


def test_build_on_a_fake_nvcc(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        if command[-1] == "--version":
            return completed(0, "nvcc: NVIDIA\nCuda compilation tools, release 13.0, V13.0.88\n")
        Path(command[command.index("-o") + 1]).write_text(FAKE_PTX)
        return completed(0)

    built = build.build(2, tmp_path, (9, 0), "nvcc", run=run)
    assert built.path == tmp_path / build.PTX_FILE and built.bytes == len(FAKE_PTX)
    assert built.nvcc_version == "Cuda compilation tools, release 13.0, V13.0.88"
    assert "KG_PROBE_KERNEL(1)" in (tmp_path / "ptxprobe.cu").read_text()
    assert calls[0][:3] == ["nvcc", "-ptx", "-arch=compute_90"]

    def fails(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        return completed(1, err="ptxprobe.cu(3): error: identifier undefined\n1 error detected\n")

    with pytest.raises(build.ProbeBuildError, match=r"exit 1\): .*1 error detected; command: nvcc -ptx"):
        build.build(2, tmp_path, (9, 0), "nvcc", run=fails)

    def cubin(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        Path(command[command.index("-o") + 1]).write_bytes(b"\x7fELF\x02\x01\x01\x00" * 8)
        return completed(0)

    with pytest.raises(build.ProbeBuildError, match="not PTX for sm_90"):
        build.build(2, tmp_path, (9, 0), "nvcc", run=cubin)


NVCC = build.find_nvcc()


@pytest.mark.skipif(NVCC is None, reason="no nvcc on this machine (the GPU machines have it)")
def test_the_real_nvcc_builds_ptx_that_ptxas_compiles_to_more_than_the_small_cache(tmp_path: Path) -> None:
    assert NVCC is not None
    built = build.build(build.DEFAULT_KERNELS, tmp_path, (9, 0), NVCC)
    text = built.path.read_text()
    assert text.count(".visible .entry kg_probe_") == build.DEFAULT_KERNELS
    assert text.count("fma.rn.f32") >= 1000 * build.DEFAULT_KERNELS  # unrolled: the JIT has work to do
    ptxas = shutil.which("ptxas") or str(Path(NVCC).with_name("ptxas"))
    if not os.access(ptxas, os.X_OK):
        pytest.skip("no ptxas beside nvcc")
    cubin = tmp_path / "probe.cubin"
    subprocess.run([ptxas, "-arch=sm_90", str(built.path), "-o", str(cubin)], check=True, timeout=600)
    # what the driver's JIT cache would have to keep is far over the small-cache scenario's limit
    assert cubin.stat().st_size > 4 * SMALL_CACHE_BYTES


# --- the child's driver calls, on a fake libcuda ----------------------------------------------------


class FakeCuda(SimpleNamespace):
    """libcuda's calls as plain functions (ctypes sets argtypes on them), recording what was called."""

    def __init__(self, fail: str | None = None, jit_ms: float = 812.5) -> None:
        super().__init__()
        self.called: list[str] = []
        self.launched: list[int] = []

        def call(name: str, effect: Any = None) -> Any:
            def fn(*args: Any) -> int:
                self.called.append(name)
                if name == fail:
                    if name == "cuModuleLoadDataEx":
                        message = b"ptxas application ptx input, line 9; error: Unknown symbol"
                        ctypes.memmove(args[4][1], message, len(message))
                    return 218
                if effect:
                    effect(*args)
                return 0

            fn.__name__ = name
            return fn

        def out(value: Any) -> Any:
            return lambda ptr, *_: setattr(ptr._obj, "value", value)

        def loaded(module: Any, image: bytes, n: int, options: Any, values: Any) -> None:
            assert image.endswith(b"\0") and n == 3 and list(options) == [2, 5, 6]
            module._obj.value = 0x1000
            values[0] = int.from_bytes(struct.pack("<f", jit_ms) + b"\0" * 4, "little")

        def function(fn: Any, module: Any, name: bytes) -> None:
            fn._obj.value = 0x2000 + int(name.decode().rsplit("_", 1)[1])

        def launch(fn: Any, *rest: Any) -> None:
            self.launched.append(fn.value if hasattr(fn, "value") else fn)

        def name(buffer: Any, size: int, device: int) -> None:
            ctypes.memmove(buffer, b"NVIDIA H100 80GB HBM3\0", 22)

        attributes = {driver.CC_MAJOR: 9, driver.CC_MINOR: 0}
        effects: dict[str, Any] = {
            "cuInit": None,
            "cuDriverGetVersion": out(13000),
            "cuDeviceGet": out(0),
            "cuDeviceGetName": name,
            "cuDeviceGetAttribute": lambda ptr, attr, dev: setattr(ptr._obj, "value", attributes[attr]),
            "cuDevicePrimaryCtxRetain": out(0x10),
            "cuCtxSetCurrent": None,
            "cuCtxSynchronize": None,
            "cuModuleLoadDataEx": loaded,
            "cuModuleGetFunction": function,
            "cuMemAlloc_v2": out(0x7000),
            "cuMemsetD32_v2": None,
            "cuLaunchKernel": launch,
        }
        for key, effect in effects.items():
            setattr(self, key, call(key, effect))

        def error_name(code: int, ptr: Any) -> int:
            ptr._obj.value = b"CUDA_ERROR_INVALID_PTX"
            return 0

        def error_string(code: int, ptr: Any) -> int:
            ptr._obj.value = b"a PTX JIT compilation failed"
            return 0

        self.cuGetErrorName, self.cuGetErrorString = error_name, error_string


@contextmanager
def recorder(names: list[str], name: str) -> Iterator[None]:
    names.append(name)
    yield


def test_the_child_loads_the_ptx_through_the_driver_and_launches_every_kernel(tmp_path: Path) -> None:
    ptx = tmp_path / "p.ptx"
    ptx.write_text(FAKE_PTX)
    fake, phases = FakeCuda(), []  # type: ignore[var-annotated]
    loaded, env, arch = driver.run(ptx, ["kg_probe_0", "kg_probe_1"], lambda n: recorder(phases, n), fake)
    assert phases == ["load_driver", "cuda_init", "module_load", "first_launch"]
    assert loaded.jit_wall_ms == pytest.approx(812.5) and loaded.kernels == 2
    assert loaded.ptx_bytes == len(FAKE_PTX)
    assert fake.called[:5] == [
        "cuInit",
        "cuDeviceGet",
        "cuDevicePrimaryCtxRetain",
        "cuCtxSetCurrent",
        "cuModuleLoadDataEx",
    ]
    assert fake.called.count("cuLaunchKernel") == 2 and fake.called.index("cuCtxSynchronize") > 5
    assert arch == "sm90-nvidia-h100-80gb-hbm3"
    assert env["gpu"] == "NVIDIA H100 80GB HBM3" and env["compute_capability"] == "9.0"
    assert env["cuda_driver"] == "13.0"


def test_a_driver_error_names_the_call_and_the_jit_log(tmp_path: Path) -> None:
    ptx = tmp_path / "p.ptx"
    ptx.write_text(FAKE_PTX)
    phases: list[str] = []
    with pytest.raises(driver.DriverError) as caught:
        driver.run(ptx, ["kg_probe_0"], lambda n: recorder(phases, n), FakeCuda(fail="cuModuleLoadDataEx"))
    assert str(caught.value) == (
        "cuModuleLoadDataEx failed: CUresult 218 (CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed); "
        "JIT log: ptxas application ptx input, line 9; error: Unknown symbol"
    )
    assert phases[-1] == "module_load"


def test_the_jit_wall_time_is_read_from_its_option_slot() -> None:
    _, values, _ = driver.jit_options()
    assert driver.wall_time_ms(values) == 0.0  # not written: loaded from the JIT cache, or no JIT
    values[0] = int.from_bytes(struct.pack("<f", 1500.25) + b"\0" * 4, "little")
    assert driver.wall_time_ms(values) == pytest.approx(1500.25)


# --- the runner builds once and hands the PTX to every child ---------------------------------------

ECHO_CHILD = f"""
import json, os, sys
args = json.loads(sys.argv[1])
phases = {{"startup": 5.0, "load_driver": 1.0, "cuda_init": 300.0, "module_load": 900.0, "first_launch": 2.0}}
out = {{"ok": True, "phases_ms": phases, "arch": "sm90-nvidia-h100-80gb-hbm3",
       "environment": {{"maxsize": os.environ.get("CUDA_CACHE_MAXSIZE", "unset")}},
       "details": {{"jit.wall_ms": 850.0, "ptx.kernels": args["spec"]["probe_kernels"],
                    "ptx.file": float(os.path.isfile(args["ptx"]))}}}}
print({MARK!r} + json.dumps(out))
"""


def fake_nvcc(folder: Path) -> str:
    script = folder / "nvcc"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nargs = sys.argv[1:]\nif args == ['--version']:\n"
        "    print('Cuda compilation tools, release 13.0')\n    sys.exit(0)\n"
        f"open(args[args.index('-o') + 1], 'w').write({FAKE_PTX!r})\n"
    )
    script.chmod(0o755)
    return str(script)


def test_the_runner_builds_once_and_the_small_cache_scenario_sets_the_maximum(tmp_path: Path) -> None:
    runner = Runner(PROBE, SCENARIOS["small-cache"], tmp_path, command=(sys.executable, "-c", ECHO_CHILD))
    runner.prepare(capability=(9, 0), nvcc=fake_nvcc(tmp_path))
    assert runner.ptx is not None and runner.ptx.path.read_text() == FAKE_PTX
    first = runner.ptx
    runner.prepare(capability=(9, 0), nvcc="/not/called")  # built already
    assert runner.ptx is first
    run = runner.run()
    assert run.ok and run.details["ptx.file"] == 1.0 and run.details["ptx.kernels"] == 4
    record = runner.record()
    assert record.env == {"CUDA_CACHE_MAXSIZE": str(SMALL_CACHE_BYTES)}
    assert record.environment == {"maxsize": str(SMALL_CACHE_BYTES)}
    assert record.id == "coldstart-ptxprobe-4k-small-cache"


def test_a_failing_nvcc_is_a_fault_not_a_reason_to_skip(tmp_path: Path) -> None:
    broken = tmp_path / "nvcc"
    broken.write_text("#!/bin/sh\necho 'nvcc fatal   : Unsupported gpu architecture' >&2\nexit 1\n")
    broken.chmod(0o755)
    runner = Runner(PROBE, SCENARIOS["warm"], tmp_path)
    with pytest.raises(build.ProbeBuildError, match=r"Unsupported gpu architecture; command: .*nvcc -ptx"):
        runner.prepare(capability=(9, 0), nvcc=str(broken))


def test_without_a_gpu_the_probe_is_recorded_as_not_run(tmp_path: Path) -> None:
    cpu = replace(PROBE, device="cpu")
    record = measure(cpu, SCENARIOS["warm"], runs=3)
    assert record.runs and not record.ok_runs
    assert record.error == "in phase prepare: the PTX probe is a GPU scenario (the device is the CPU)"


# --- the gate fails when the JIT cache stops keeping the probe ------------------------------------


def probe_record(scenario: str, module_load: list[float], jit: float) -> ColdStart:
    runs = tuple(
        Run(
            {"startup": 40.0, "load_driver": 2.0, "cuda_init": 350.0, "module_load": m, "first_launch": 3.0},
            900.0,
            400_000 if jit == 0 else 0,
            details={"jit.wall_ms": jit, "ptx.kernels": 4.0, "ptx.bytes": 1e6},
        )
        for m in module_load
    )
    env = {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.95.05"}
    return ColdStart(PROBE, scenario, "sm90-nvidia-h100-80gb-hbm3", {}, runs, env)


def test_a_jit_cache_too_small_fails_the_warm_probe_in_module_load() -> None:
    warm = probe_record("warm", [4.0, 5.0, 4.5], 0.0)
    small = replace(
        probe_record("warm", [1480.0, 1510.0, 1495.0], 1450.0), env={"CUDA_CACHE_MAXSIZE": "65536"}
    )
    small = replace(small, environment={**small.environment, "env.CUDA_CACHE_MAXSIZE": "65536"})
    comparison = coldverdict.compare_scenario(warm, small, GateConfig())
    assert [d.name for d in comparison.failures] == ["to_steady_state", "module_load"]
    from kernelgate.machine.envdiff import changes

    text = coldverdict.scenario_failure(
        comparison,
        warm,
        small,
        "baselines/x.json",
        changes(warm.environment, small.environment),
        target="benchmarks/test_coldstart.py::test_ptx_probe[ptxprobe-warm]",
    )
    assert "REGRESSED module_load (cuModuleLoadDataEx of the probe's PTX" in text
    assert "4.500 ms -> 1.495 s" in text
    assert "caches, baseline: driver JIT 0 ms (CU_JIT_WALL_TIME) for 4 kernel(s)" in text
    assert "caches, now: driver JIT 1450 ms" in text
    assert "CUDA_CACHE_MAXSIZE (unset) -> 65536" in text
    # the same warm cache again passes
    again = coldverdict.compare_scenario(warm, probe_record("warm", [5.0, 4.0, 6.0], 0.0), GateConfig())
    assert not again.failed and {d.verdict for d in again.deltas} == {Verdict.UNCHANGED}


def test_probe_records_survive_json() -> None:
    record = probe_record("small-cache", [1500.0] * 3, 1450.0)
    data = json.loads(json.dumps(record.to_json()))
    assert data["spec"] == {
        "model": "ptxprobe",
        "precision": "fp16",
        "batch": 1,
        "imgsz": 640,
        "device": "cuda",
        "iterations": 50,
        "cudnn_benchmark": False,
        "probe_kernels": 4,
    }
    assert data["runs"][0]["details"]["jit.wall_ms"] == 1450.0
    assert ColdStart.from_json(data) == record
    assert record.detail("jit.wall_ms") == 1450.0 and record.detail("absent") is None


# --- in pytest, without a GPU --------------------------------------------------------------------

SUITE = """
import pytest


@pytest.mark.parametrize("scenario", ["empty", "small-cache"])
def test_probe(kernelgate, scenario):
    kernelgate.coldstart(model="ptxprobe", scenario=scenario, runs=1)
"""


def test_the_probe_skips_with_its_reason_on_the_cpu(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.kernelgate]\non_nothing_compared = 'warn'\n")
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate-device=cpu", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.re_match_lines(
        [r"SKIPPED \[2\] .*: the PTX probe is a GPU scenario \(the device is the CPU\)$"]
    )
