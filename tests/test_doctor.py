"""``kernelgate doctor``: the rules on made-up facts, gathering on a fake NVML, the command's output."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from fake_nvml import FakeGpu, fake_pynvml

from kernelgate import cli
from kernelgate.machine import doctor, fitness
from kernelgate.machine.facts import Facts
from kernelgate.machine.finding import Finding, Level
from kernelgate.machine.fitness import diagnose, exit_code
from kernelgate.machine.identity import GpuIdentity
from kernelgate.machine.state import GpuProcess, GpuState

H200 = GpuIdentity(
    index=0,
    name="NVIDIA H200",
    architecture="Hopper",
    compute_capability=(9, 0),
    driver="580.159.04",
    cuda_driver="13.0",
    memory_mib=143771,
    sm_clock_max_mhz=1980,
    mem_clock_max_mhz=3201,
    power_limit_w=700.0,
    power_default_w=700.0,
)
IDLE = GpuState(
    sm_clock_mhz=1980,
    mem_clock_mhz=3201,
    temperature_c=34,
    slowdown_temperature_c=87,
    power_w=120.5,
    clock_event_reasons=0x1,
    utilization_pct=0,
    processes=(GpuProcess(4242, 480.0),),  # the doctor's own process, excluded
    persistence_mode=True,
    mig_enabled=False,
    compute_mode="default",
)
CU130 = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120")


def healthy(**changes: object) -> Facts:
    facts = Facts(
        identity=H200,
        state=IDLE,
        own_pid=4242,
        torch_version="2.11.0+cu130",
        torch_cuda="13.0",
        torch_gpu=True,
        arch_list=CU130,
        cudnn_version="91900",
        cudnn_benchmark=False,
        cudnn_deterministic=False,
        ultralytics="8.4.190",
        cache_path="/root/.nv/ComputeCache",
        cache_bytes=0,
        cache_free_bytes=50 * 2**30,
        cache_writable=True,
        baseline_keys=("sm90-nvidia-h200",),
        cpu_count=16,
        load_avg=0.2,
        cpu_governor="performance",
    )
    return replace(facts, **changes)  # type: ignore[arg-type]


def by_check(findings: list[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check]


def worst(findings: list[Finding], check: str) -> Level:
    return max(f.level for f in by_check(findings, check))


def test_an_idle_h200_with_native_code_is_fit() -> None:
    findings = diagnose(healthy())
    assert exit_code(findings) == 0
    assert exit_code(findings, strict=True) == 0, [f for f in findings if f.level >= Level.WARN]
    assert {f.check for f in findings} >= {"gpu", "baseline", "processes", "clocks", "temperature", "sass"}
    (gpu,) = by_check(findings, "gpu")
    assert "NVIDIA H200 (Hopper, sm_90, 143,771 MiB)" in gpu.message
    assert "baseline key sm90-nvidia-h200" in gpu.message
    (sass,) = by_check(findings, "sass")
    assert sass.level is Level.OK and "native code (SASS) for sm_90" in sass.message
    # the stock cu130 torch has PTX for compute_120 only: forced PTX JIT cannot run on sm_90
    (ptx,) = by_check(findings, "force-ptx")
    assert ptx.level is Level.INFO and "compute_120" in ptx.message and "skipped" in ptx.message


def test_a_cpu_only_machine_is_fit_in_cpu_mode_and_says_what_it_measures() -> None:
    """CPU is a supported mode: a warning that says what CPU mode measures, exit 0; --strict fails."""
    facts = Facts(
        nvml_error="NVMLError_LibraryNotFound: NVML Shared Library Not Found", torch_version="2.11.0"
    )
    findings = diagnose(facts)
    (gpu,) = by_check(findings, "gpu")
    assert gpu.level is Level.WARN
    assert gpu.message.startswith("CPU mode: no CUDA GPU visible") and "LibraryNotFound" in gpu.message
    assert "aten:: CPU ops" in gpu.message and "not for GPU kernels" in gpu.message
    assert "--kernelgate-device=cpu" in gpu.fix
    assert exit_code([gpu]) == 0
    assert exit_code([gpu], strict=True) == 1


def test_torch_without_cuda_on_a_gpu_machine() -> None:
    findings = diagnose(healthy(torch_gpu=False, torch_cuda=None, arch_list=()))
    assert worst(findings, "gpu") is Level.ERROR
    assert worst(findings, "sass") is Level.ERROR
    assert "CPU-only build" in by_check(findings, "sass")[0].message


def test_another_compute_process_makes_it_unfit() -> None:
    state = replace(IDLE, processes=(GpuProcess(4242, 480.0), GpuProcess(999, 2048.0)))
    findings = diagnose(healthy(state=state))
    (proc,) = by_check(findings, "processes")
    assert proc.level is Level.ERROR
    assert "pid 999 (2,048 MiB)" in proc.message and "CUDA_VISIBLE_DEVICES" in proc.fix
    assert exit_code(findings) == 1


def test_utilization_without_a_visible_process_hints_at_a_shared_gpu() -> None:
    findings = diagnose(healthy(state=replace(IDLE, utilization_pct=80)))
    assert worst(findings, "utilization") is Level.WARN


@pytest.mark.parametrize(
    ("reasons", "level", "says"),
    [
        (0x1, Level.OK, "idle, not throttled"),
        (0x0, Level.OK, "no clock-event reason"),
        (0x4, Level.WARN, "software power cap"),
        (0x40, Level.ERROR, "hw_thermal_slowdown"),
        (0x8 | 0x1, Level.ERROR, "hw_slowdown"),
        (0x2, Level.INFO, "applications_clocks_setting"),
    ],
)
def test_clock_event_reasons(reasons: int, level: Level, says: str) -> None:
    (clocks,) = by_check(diagnose(healthy(state=replace(IDLE, clock_event_reasons=reasons))), "clocks")
    assert clocks.level is level
    assert says in clocks.message
    assert "SM clock 1980 of 1980 MHz" in clocks.message


@pytest.mark.parametrize(("temp", "level"), [(34, Level.OK), (78, Level.WARN), (87, Level.ERROR)])
def test_temperature_against_the_slowdown_threshold(temp: int, level: Level) -> None:
    (finding,) = by_check(diagnose(healthy(state=replace(IDLE, temperature_c=temp))), "temperature")
    assert finding.level is level


def test_power_cap_mig_persistence() -> None:
    identity = replace(H200, power_limit_w=400.0)
    state = replace(IDLE, mig_enabled=True, persistence_mode=False)
    findings = diagnose(healthy(identity=identity, state=state))
    assert worst(findings, "power") is Level.WARN
    assert "nvidia-smi -pl 700" in by_check(findings, "power")[0].fix
    assert worst(findings, "mig") is Level.WARN
    assert worst(findings, "persistence") is Level.INFO


def test_the_seed_case_ptx_only_torch_with_a_too_small_jit_cache() -> None:
    """A GPU newer than the build: no SASS, only PTX; the suite's cold start needed 1.2 GiB of JIT cache."""
    blackwell = replace(H200, name="NVIDIA B300", compute_capability=(13, 0))
    facts = healthy(identity=blackwell, suite_cache_bytes=int(1.2 * 2**30), baseline_keys=())
    findings = diagnose(facts)
    (sass,) = by_check(findings, "sass")
    assert sass.level is Level.WARN and "JIT-compiles every kernel from PTX (compute_120)" in sass.message
    cache = by_check(findings, "jit-cache")
    assert cache[0].level is Level.ERROR
    assert "default 1 GiB" in cache[0].message and "1.20 GiB" in cache[0].message
    assert cache[0].fix == "export CUDA_CACHE_MAXSIZE=4294967296"
    # the fix of the seed case makes it fit
    fixed = diagnose(replace(facts, variables={"CUDA_CACHE_MAXSIZE": "4294967296"}))
    assert worst(fixed, "jit-cache") <= Level.INFO
    assert exit_code(fixed) == 0


def test_cache_disabled_is_an_error_only_where_kernels_are_jit_compiled() -> None:
    disabled = {"CUDA_CACHE_DISABLE": "1"}
    native = diagnose(healthy(variables=disabled))
    assert worst(native, "jit-cache") is Level.WARN
    ptx_only = diagnose(healthy(variables=disabled, identity=replace(H200, compute_capability=(13, 0))))
    assert worst(ptx_only, "jit-cache") is Level.ERROR


def test_unknown_need_and_ptx_jit_asks_for_the_maximum_cache() -> None:
    facts = healthy(identity=replace(H200, compute_capability=(13, 0)))
    cache = by_check(diagnose(facts), "jit-cache")
    assert cache[0].level is Level.WARN and "not recorded yet" in cache[0].message


def test_a_nearly_full_or_unwritable_cache_folder() -> None:
    full = diagnose(healthy(cache_bytes=int(0.95 * 2**30)))
    assert any("90 % of its maximum" in f.message for f in by_check(full, "jit-cache"))
    readonly = diagnose(healthy(cache_writable=False))
    assert any("not writable" in f.message for f in by_check(readonly, "jit-cache"))


def test_forced_ptx_jit_without_usable_ptx_is_an_error() -> None:
    findings = diagnose(healthy(variables={"CUDA_FORCE_PTX_JIT": "1"}))
    (ptx,) = by_check(findings, "force-ptx")
    assert ptx.level is Level.ERROR and "will fail to load" in ptx.message
    with_ptx = diagnose(healthy(variables={"CUDA_FORCE_PTX_JIT": "1"}, arch_list=(*CU130, "compute_90")))
    assert worst(with_ptx, "force-ptx") is Level.WARN


def test_module_loading() -> None:
    assert worst(diagnose(healthy()), "module-loading") is Level.OK
    eager = by_check(diagnose(healthy(variables={"CUDA_MODULE_LOADING": "EAGER"})), "module-loading")
    assert eager[0].level is Level.WARN and "unset CUDA_MODULE_LOADING" in eager[0].fix


def test_bytecode_compiled_in_every_process_is_told_not_failed() -> None:
    assert by_check(diagnose(healthy()), "bytecode") == []
    assert by_check(diagnose(healthy(compiles_imports=False)), "bytecode") == []
    (found,) = by_check(diagnose(healthy(compiles_imports=True)), "bytecode")
    assert found.level is Level.INFO and "PYTHONDONTWRITEBYTECODE" in found.message
    assert "compileall" in found.fix
    assert exit_code([found], strict=True) == 0  # start-up cost, not a reason to refuse measuring


def test_cublas_workspace_config_set_by_importing_ultralytics() -> None:
    findings = diagnose(healthy(set_by_import={"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}))
    (env,) = [f for f in by_check(findings, "env") if "CUBLAS" in f.message]
    assert env.level is Level.WARN
    assert "CUBLAS_WORKSPACE_CONFIG=:4096:8 (set by `import ultralytics`)" in env.message


def test_slowing_variables_and_cudnn_settings() -> None:
    facts = healthy(variables={"CUDA_LAUNCH_BLOCKING": "1", "OMP_NUM_THREADS": "1"}, cudnn_benchmark=True)
    findings = diagnose(facts)
    levels = {f.message.split(":")[0]: f.level for f in by_check(findings, "env")}
    assert levels["CUDA_LAUNCH_BLOCKING=1"] is Level.ERROR
    assert any("OMP_NUM_THREADS=1" in f.message and f.level is Level.INFO for f in by_check(findings, "env"))
    assert worst(findings, "cudnn") is Level.INFO
    assert exit_code(findings) == 1
    assert exit_code(diagnose(healthy(variables={"CUDA_LAUNCH_BLOCKING": "0"}))) == 0


def test_cpu_governor_and_load() -> None:
    findings = diagnose(healthy(cpu_governor="powersave", load_avg=12.0))
    messages = [f.message for f in by_check(findings, "cpu")]
    assert any("governor 'powersave'" in m for m in messages)
    assert any("load average 12.0 on 16 CPUs" in m for m in messages)
    assert exit_code(findings) == 0 and exit_code(findings, strict=True) == 1


def test_a_host_of_several_gpus_shares_its_cpus_and_warns_where_the_jobs_oversubscribe_them() -> None:
    one_of_four = {"gpus_on_host": 4, "gpus_visible": 1, "cpus_usable": 64, "cpu_count": 64}
    (share,) = by_check(diagnose(healthy(**one_of_four)), "threads")
    assert share.level is Level.INFO and "a benchmark takes 16 torch threads" in share.message
    assert "each cold-start child OMP_NUM_THREADS=16" in share.message  # machine/threads.for_coldstart
    assert "the host's 64 CPUs shared among its 4 GPUs, 1 of them this job's" in share.message
    many = diagnose(healthy(**one_of_four, variables={"OMP_NUM_THREADS": "64"}))
    (warn,) = by_check(many, "threads")
    assert warn.level is Level.WARN and "a job on each GPU runs 256 torch threads on 64 CPUs" in warn.message
    assert warn.message.startswith("OMP_NUM_THREADS = 64 on a host of 4 GPUs and 64 CPUs")
    assert "unset OMP_NUM_THREADS (kernelgate then takes 16)" in warn.fix
    # threads in [tool.kernelgate] comes first: 32 warns, whatever the variable; 8 says nothing
    (configured,) = by_check(diagnose(healthy(**one_of_four, threads_configured=32)), "threads")
    assert configured.message.startswith("threads in [tool.kernelgate] = 32") and "OMP" not in configured.fix
    quiet = healthy(**one_of_four, threads_configured=8, variables={"OMP_NUM_THREADS": "64"})
    assert not by_check(diagnose(quiet), "threads")
    assert exit_code(many) == 0 and exit_code(many, strict=True) == 1
    fits = healthy(**one_of_four, variables={"OMP_NUM_THREADS": "16"})
    assert not by_check(diagnose(fits), "threads")  # 4 x 16 on 64: as it should be, nothing to say
    assert not by_check(diagnose(healthy(gpus_on_host=1, gpus_visible=1, cpu_count=16)), "threads")
    assert not by_check(diagnose(healthy(gpus_on_host=4, gpus_visible=4, cpu_count=64)), "threads")  # all
    assert not by_check(diagnose(healthy(**one_of_four, torch_gpu=False)), "threads")  # no GPU to run on
    held = healthy(**{**one_of_four, "cpus_usable": 8})  # a job held to 8 CPUs: its 8
    (info,) = by_check(diagnose(held), "threads")
    assert "a benchmark takes 8 torch threads" in info.message
    text = doctor.render(healthy(**one_of_four, variables={"OMP_NUM_THREADS": "64"}), many)
    assert all(len(line) <= 110 for line in text.splitlines())


def test_gather_counts_the_host_s_gpus_and_the_job_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(*[FakeGpu(uuid=f"GPU-{i}") for i in range(4)]))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    facts = doctor.gather(Path("no-baselines"))
    assert (facts.gpus_on_host, facts.gpus_visible) == (4, 1)
    assert facts.cpus_usable == len(os.sched_getaffinity(0))
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error="Driver Not Loaded"))
    none = doctor.gather(Path("no-baselines"))
    assert (none.gpus_on_host, none.gpus_visible) == (0, 0)


def test_baseline_of_another_gpu_of_the_same_architecture() -> None:
    findings = diagnose(healthy(baseline_keys=("sm90-nvidia-h100-pcie",)))
    (base,) = by_check(findings, "baseline")
    assert base.level is Level.WARN and "--kernelgate-allow-other-gpu" in base.fix


def test_render_and_json() -> None:
    facts = healthy(variables={"CUDA_MODULE_LOADING": "EAGER"})
    findings = diagnose(facts)
    text = doctor.render(facts, findings)
    assert text.startswith("kernelgate doctor: is this machine fit to benchmark?\n")
    assert "warn  module-loading CUDA_MODULE_LOADING=EAGER" in text
    assert "fix: unset CUDA_MODULE_LOADING" in text
    assert text.rstrip().endswith("fit to benchmark: 0 error(s), 1 warning(s), 2 note(s); exit 0")
    assert all(len(line) <= 110 for line in text.splitlines())
    data = json.loads(doctor.to_json(facts, findings))
    assert data["fit"] is True and data["exit_code"] == 0
    assert data["facts"]["key"] == "sm90-nvidia-h200"
    assert data["facts"]["identity"]["compute_capability"] == [9, 0]
    assert {"level": "warn", "check": "module-loading"} in [
        {"level": f["level"], "check": f["check"]} for f in data["findings"]
    ]


def test_gather_reads_nvml_and_leaves_out_its_own_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gpu = FakeGpu(processes=[(os.getpid(), 300 * 2**20), (31337, 2**30)])
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(gpu))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("CUDA_CACHE_PATH", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "kernel.bin").write_bytes(b"x" * 1000)
    monkeypatch.setenv("CUDA_MODULE_LOADING", "EAGER")
    facts = doctor.gather(tmp_path / "baselines")
    assert facts.identity is not None and facts.identity.key == "sm90-nvidia-h200"
    assert facts.own_pid == os.getpid()
    assert facts.cache_bytes == 1000 and facts.cache_writable is True
    assert facts.variables["CUDA_MODULE_LOADING"] == "EAGER"
    assert facts.torch_version and facts.arch_list  # this venv's torch
    findings = fitness.diagnose(facts)
    (proc,) = by_check(findings, "processes")
    # whole pids: this process's may be a prefix of the other's (pid 313 in "pid 31337" failed CI once)
    pids = re.findall(r"pid (\d+)", proc.message)
    assert pids == ["31337"], proc.message


def test_the_command_without_a_gpu(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No GPU (as on the CI machine): CPU mode, exit 0 (1 with --strict), as text and as JSON."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error="Driver Not Loaded"))
    base = ["doctor", "--baseline-dir", str(tmp_path)]
    assert cli.main(base) == 0
    out = capsys.readouterr().out
    assert "warn  gpu            CPU mode: no CUDA GPU visible (NVML: NVMLError: Driver Not Loaded" in out
    assert "fit to benchmark in CPU mode (CPU ops, not GPU kernels)" in out
    assert cli.main([*base, "--strict"]) == 1
    assert "NOT fit to benchmark" in capsys.readouterr().out
    assert cli.main([*base, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fit"] is True and data["facts"]["identity"] is None
    assert data["findings"][0]["level"] == "warn"


def test_the_command_reads_threads_from_the_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error="Driver Not Loaded"))
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.kernelgate]\nthreads = 32\n")
    base = ["doctor", "--baseline-dir", str(tmp_path), "--config", str(config)]
    assert cli.main([*base, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["facts"]["threads_configured"] == 32
    config.write_text("[tool.kernelgate]\nthreads = 0\n")
    assert cli.main(base) == 2  # a bad config is a usage error, said so
    assert "threads" in capsys.readouterr().err


# a probe of one lent H100 host (2026-11-26): half of the CPUs ran the loop at about 8 ms
TWO_SPEEDS = {0: 13.18, 1: 8.73, 2: 14.71, 3: 11.33, 4: 14.55, 5: 8.72, 6: 8.18, 7: 14.78, 8: 14.15,
              9: 13.33, 10: 12.64, 11: 13.57, 12: 12.38, 13: 8.24, 14: 14.35, 15: 8.05}  # fmt: skip


def test_cpus_at_two_speeds_are_a_warning_with_the_numbers() -> None:
    findings = diagnose(healthy(cpu_speeds_ms=TWO_SPEEDS))
    (cpu,) = by_check(findings, "cpu")
    assert cpu.level is Level.WARN
    assert "the same Python loop took 8.1 ms on the fastest CPU and 11.3 … 14.8 ms on 11 of 16" in cpu.message
    assert "fast: 1, 5, 6, 13, 15" in cpu.message and "taskset" in cpu.fix
    assert exit_code(findings) == 0 and exit_code(findings, strict=True) == 1
    # a quiet machine: every CPU within a few % of the fastest
    even = {c: 10.0 + 0.03 * c for c in range(16)}
    (ok,) = by_check(diagnose(healthy(cpu_speeds_ms=even)), "cpu")
    assert ok.level is Level.OK and "16 CPUs, one speed (10.0 … 10.4 ms a loop)" in ok.message


def test_the_probe_times_each_cpu_this_process_may_use_and_leaves_its_affinity() -> None:
    from kernelgate.machine import cpuspeed

    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this platform")
    before = os.sched_getaffinity(0)
    times = cpuspeed.probe(loop=2000, tries=1)
    assert set(times) <= before and len(times) >= min(len(before), cpuspeed.MAX_CPUS // 2)
    assert all(ms > 0 for ms in times.values())
    assert os.sched_getaffinity(0) == before
    assert cpuspeed.slow_cpus({0: 10.0, 1: 12.9, 2: 13.0}) == [2]
    assert cpuspeed.slow_cpus({0: 10.0}) == []
