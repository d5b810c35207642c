"""Which machine a measurement comes from: the GPU's identity and state, the baseline key, the environment.

Identity and state are read through NVML (nvidia-ml-py) without importing torch, so the plugin can
point pytest-benchmark's storage at ``baselines/<key>`` at start-up; functions that need torch take
the module as an argument. NVML is only read, never set.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from types import ModuleType
from typing import Any, TypeVar

from kernelgate.machine import pinning

T = TypeVar("T")
THREADS = "OMP_NUM_THREADS"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def gpu_arch_key(name: str, major: int, minor: int) -> str:
    """``sm90-nvidia-h100-80gb-hbm3``: compute capability, then the product."""
    return f"sm{major}{minor}-{slug(name)}"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_arch_key() -> str:
    return f"cpu-{slug(platform.machine())}-{slug(cpu_model())}"


# NVML's nvmlDeviceArchitecture_t values; the compute capability decides where NVML does not know.
NVML_ARCHITECTURES = {
    2: "Kepler",
    3: "Maxwell",
    4: "Pascal",
    5: "Volta",
    6: "Turing",
    7: "Ampere",
    8: "Ada",
    9: "Hopper",
    10: "Blackwell",
    13: "Rubin",
}


def architecture_name(major: int, minor: int) -> str:
    """The architecture of compute capability ``major.minor`` (``9.0`` -> ``Hopper``)."""
    if major == 7:
        return "Turing" if minor >= 5 else "Volta"
    if major == 8:
        return "Ada" if minor == 9 else "Ampere"
    return {3: "Kepler", 5: "Maxwell", 6: "Pascal", 9: "Hopper", 10: "Blackwell", 11: "Blackwell"}.get(
        major, "Blackwell" if major == 12 else f"sm{major}{minor}"
    )


# nvmlClocksEventReason* bits (the reasons the clocks are below their maximum now).
CLOCK_EVENT_REASONS = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
THROTTLING = frozenset(
    {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)


def clock_event_names(mask: int) -> tuple[str, ...]:
    names = tuple(name for bit, name in CLOCK_EVENT_REASONS if mask & bit)
    rest = mask & ~sum(bit for bit, _ in CLOCK_EVENT_REASONS)
    return names + ((hex(rest),) if rest else ())


@dataclass(frozen=True)
class GpuIdentity:
    """What a GPU is: fixed for the machine (until the driver or a power limit changes)."""

    index: int
    name: str
    architecture: str
    compute_capability: tuple[int, int]
    driver: str
    cuda_driver: str
    memory_mib: int | None
    sm_clock_max_mhz: int | None
    mem_clock_max_mhz: int | None
    power_limit_w: float | None
    power_default_w: float | None

    @property
    def key(self) -> str:
        """The baseline key: ``sm90-nvidia-h200``."""
        return gpu_arch_key(self.name, *self.compute_capability)

    @property
    def sm(self) -> str:
        return "sm_{}{}".format(*self.compute_capability)


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_mib: float | None


@dataclass(frozen=True)
class GpuState:
    """How a GPU is doing right now; every field is None where NVML could not read it."""

    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temperature_c: int | None = None
    slowdown_temperature_c: int | None = None
    power_w: float | None = None
    clock_event_reasons: int | None = None
    utilization_pct: int | None = None
    memory_used_mib: float | None = None
    processes: tuple[GpuProcess, ...] | None = None
    persistence_mode: bool | None = None
    mig_enabled: bool | None = None
    compute_mode: str | None = None


def _nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


def nvml_error() -> str | None:
    """Why NVML cannot be read here (None when it can)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _visible_nvml_handle(nvml: Any) -> Any | None:
    """The NVML handle of the GPU that CUDA calls device 0 (honours CUDA_VISIBLE_DEVICES)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        if visible is None:
            return nvml.nvmlDeviceGetHandleByIndex(0) if nvml.nvmlDeviceGetCount() > 0 else None
        first = visible.split(",")[0].strip()
        if not first or first == "-1":
            return None
        if first.isdigit():
            return nvml.nvmlDeviceGetHandleByIndex(int(first))
        return nvml.nvmlDeviceGetHandleByUUID(first)
    except Exception:
        return None


def cuda_visible_entries(value: str | None, count: int) -> tuple[str, ...]:
    """The GPUs CUDA shows a process for ``CUDA_VISIBLE_DEVICES=value`` on a machine with ``count``
    GPUs, in CUDA's order, as entries of that variable (an index, or a ``GPU-``/``MIG-`` UUID).

    Unset: every GPU. CUDA stops at the first entry it cannot use (``-1``, an index out of range, a
    repeated or malformed entry), so this does too; an empty value shows none.
    """
    if value is None:
        return tuple(str(i) for i in range(count))
    entries: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if entry.isdigit():
            if int(entry) >= count:
                break
            entry = str(int(entry))
        elif not entry.startswith(("GPU-", "MIG-")):
            break
        if entry in entries:
            break
        entries.append(entry)
    return tuple(entries)


@dataclass(frozen=True)
class VisibleGpu:
    """A GPU this process may use: its ``CUDA_VISIBLE_DEVICES`` entry and its baseline key."""

    entry: str
    key: str
    near_cpus: tuple[int, ...] = ()  # the CPUs NVML names as closest to it (its NUMA node); () unknown


def visible_gpus(nvml: Any | None = None) -> tuple[VisibleGpu, ...]:
    """The GPUs CUDA will show this process (honouring ``CUDA_VISIBLE_DEVICES``), read through NVML
    without importing torch; empty without NVML (no NVIDIA driver) or without a GPU."""
    nvml = nvml or _nvml()
    if nvml is None:
        return ()
    count = _read(nvml.nvmlDeviceGetCount) or 0
    found: list[VisibleGpu] = []
    for entry in cuda_visible_entries(os.environ.get("CUDA_VISIBLE_DEVICES"), int(count)):
        try:
            if entry.isdigit():
                handle = nvml.nvmlDeviceGetHandleByIndex(int(entry))
            else:
                handle = nvml.nvmlDeviceGetHandleByUUID(entry)
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            name = _text(nvml.nvmlDeviceGetName(handle))
        except Exception:
            break  # a UUID NVML does not know: CUDA stops at it too
        words = _read(partial(nvml.nvmlDeviceGetCpuAffinity, handle, (os.cpu_count() or 64) // 64 + 1))
        near = pinning.mask_cpus([int(w) for w in words]) if words is not None else ()
        found.append(VisibleGpu(entry, gpu_arch_key(name, int(major), int(minor)), near))
    return tuple(found)


def _read(read: Callable[[], T]) -> T | None:
    try:
        return read()
    except Exception:
        return None


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _watts(milliwatts: int | None) -> float | None:
    return None if milliwatts is None else round(milliwatts / 1000.0, 1)


def _cuda_version(number: int | None) -> str:
    return "unknown" if number is None else f"{number // 1000}.{number % 1000 // 10}"


def read_identity(nvml: Any | None = None) -> GpuIdentity | None:
    """The visible GPU's identity through NVML; None without NVML or without a visible GPU."""
    nvml = nvml or _nvml()
    if nvml is None:
        return None
    handle = _visible_nvml_handle(nvml)
    if handle is None:
        return None
    try:
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        name = _text(nvml.nvmlDeviceGetName(handle))
    except Exception:
        return None
    arch = _read(lambda: nvml.nvmlDeviceGetArchitecture(handle))
    memory = _read(lambda: nvml.nvmlDeviceGetMemoryInfo(handle).total)
    return GpuIdentity(
        index=_read(lambda: int(nvml.nvmlDeviceGetIndex(handle))) or 0,
        name=name,
        architecture=NVML_ARCHITECTURES.get(arch if arch is not None else -1)
        or architecture_name(major, minor),
        compute_capability=(int(major), int(minor)),
        driver=_text(_read(nvml.nvmlSystemGetDriverVersion) or "unknown"),
        cuda_driver=_cuda_version(_read(nvml.nvmlSystemGetCudaDriverVersion)),
        memory_mib=None if memory is None else int(memory // 2**20),
        sm_clock_max_mhz=_read(lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))),
        mem_clock_max_mhz=_read(lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM))),
        power_limit_w=_watts(_read(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))),
        power_default_w=_watts(_read(lambda: nvml.nvmlDeviceGetPowerManagementDefaultLimit(handle))),
    )


_COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}


def read_state(nvml: Any | None = None) -> GpuState | None:
    """The visible GPU's clocks, temperature, power, load and compute processes as NVML reads them now."""
    nvml = nvml or _nvml()
    handle = None if nvml is None else _visible_nvml_handle(nvml)
    if nvml is None or handle is None:
        return None

    def processes() -> tuple[GpuProcess, ...]:
        return tuple(
            GpuProcess(
                int(p.pid),
                None if getattr(p, "usedGpuMemory", None) is None else round(p.usedGpuMemory / 2**20, 1),
            )
            for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        )

    used = _read(lambda: nvml.nvmlDeviceGetMemoryInfo(handle).used)
    mode = _read(lambda: nvml.nvmlDeviceGetComputeMode(handle))
    return GpuState(
        sm_clock_mhz=_read(lambda: int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))),
        mem_clock_mhz=_read(lambda: int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM))),
        temperature_c=_read(lambda: int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))),
        slowdown_temperature_c=_read(
            lambda: int(
                nvml.nvmlDeviceGetTemperatureThreshold(handle, nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
            )
        ),
        power_w=_watts(_read(lambda: nvml.nvmlDeviceGetPowerUsage(handle))),
        clock_event_reasons=_read(lambda: int(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))),
        utilization_pct=_read(lambda: int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)),
        memory_used_mib=None if used is None else round(used / 2**20, 1),
        processes=_read(processes),
        persistence_mode=_read(lambda: bool(nvml.nvmlDeviceGetPersistenceMode(handle))),
        mig_enabled=_read(lambda: bool(nvml.nvmlDeviceGetMigMode(handle)[0])),
        compute_mode=None if mode is None else _COMPUTE_MODES.get(mode, str(mode)),
    )


def detect_arch_key(force_cpu: bool = False) -> str:
    """The baseline key of this machine, read without torch (NVML, /proc/cpuinfo)."""
    if force_cpu:
        return cpu_arch_key()
    identity = read_identity()
    return cpu_arch_key() if identity is None else identity.key


def torch_arch_key(torch: ModuleType, device: str) -> str:
    """The key as torch sees the device it will run on; authoritative over :func:`detect_arch_key`."""
    if device.startswith("cuda"):
        major, minor = torch.cuda.get_device_capability(device)
        return gpu_arch_key(torch.cuda.get_device_name(device), major, minor)
    return cpu_arch_key()


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def gpu_state() -> dict[str, str]:
    """The visible GPU's identity and state now, as strings for a measurement's environment."""
    nvml = _nvml()
    identity = None if nvml is None else read_identity(nvml)
    state = None if nvml is None else read_state(nvml)
    if identity is None or state is None:
        return {}
    values: dict[str, object] = {
        "architecture": identity.architecture,
        "driver": identity.driver,
        "cuda_driver": identity.cuda_driver,
        "memory_mib": identity.memory_mib,
        "sm_clock_mhz": state.sm_clock_mhz,
        "sm_clock_max_mhz": identity.sm_clock_max_mhz,
        "mem_clock_mhz": state.mem_clock_mhz,
        "temperature_c": state.temperature_c,
        "power_w": state.power_w,
        "power_limit_w": identity.power_limit_w,
        "persistence_mode": state.persistence_mode,
        "clock_event_reasons": None if state.clock_event_reasons is None else hex(state.clock_event_reasons),
    }
    return {key: str(value) for key, value in values.items() if value is not None}


# Environment variables known to change kernel choice, launch cost or load time.
SPEED_VARIABLES = (
    "CUBLAS_WORKSPACE_CONFIG",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_MAXSIZE",
    "CUDA_CACHE_PATH",
    "CUDA_FORCE_PTX_JIT",
    "CUDA_DISABLE_PTX_JIT",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_MAX_CONNECTIONS",
    "NVIDIA_TF32_OVERRIDE",
    THREADS,
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "TORCH_CUDNN_V8_API_DISABLED",
    "TORCH_USE_CUDA_DSA",
    "KERNELGATE_SLOW_PHASE",  # kernelgate's own deliberate cold-start fault (kernelgate.coldstart.child)
)


def collect(torch: ModuleType, device: str) -> dict[str, str]:
    """Everything that can explain a timing change: versions, device, and its state now."""
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": str(torch.__version__),
        "ultralytics": _version("ultralytics"),
        "pytest-benchmark": _version("pytest-benchmark"),
        "kernelgate": _version("kernelgate"),
        "device": device,
        "cpu": cpu_model(),
        "torch_threads": str(torch.get_num_threads()),
    }
    env.update({f"env.{name}": os.environ[name] for name in SPEED_VARIABLES if name in os.environ})
    gpu = pinning.pinned(os.environ)
    if gpu is not None:  # a pytest-xdist worker's one GPU: recorded apart, as it may differ every run
        env.pop("env.CUDA_VISIBLE_DEVICES")
        user = pinning.user_visible_devices(os.environ)
        if user is not None:
            env["env.CUDA_VISIBLE_DEVICES"] = user
        env["pinned_gpu"] = gpu
    if pinning.SHARE_VAR in os.environ:  # a worker's share of the host CPUs, given by kernelgate
        env["cpu_share"] = os.environ[pinning.SHARE_VAR]
    if device.startswith("cuda"):
        major, minor = torch.cuda.get_device_capability(device)
        env.update(
            {
                "gpu": torch.cuda.get_device_name(device),
                "compute_capability": f"{major}.{minor}",
                "cuda": str(torch.version.cuda),
                "cudnn": str(torch.backends.cudnn.version()),
                "cudnn_benchmark": str(torch.backends.cudnn.benchmark),
            }
        )
        env.update(gpu_state())
    return dict(sorted(env.items()))


@dataclass(frozen=True)
class KernelImages:
    """What a torch build carries for a GPU: native code (SASS), or only PTX the driver must JIT-compile.

    ``arch_list`` is ``torch.cuda.get_arch_list()`` (``sm_90`` is SASS, ``compute_120`` is PTX). SASS
    for ``sm_XY`` runs on compute capability ``X.Z`` with ``Z >= Y`` (an ``a`` variant only on
    ``X.Y`` itself); PTX for ``compute_XY`` can be JIT-compiled for any capability ``>= X.Y``.
    """

    arch_list: tuple[str, ...]
    capability: tuple[int, int]

    @staticmethod
    def _parse(entry: str) -> tuple[str, tuple[int, int], str] | None:
        match = re.fullmatch(r"(sm|compute)_(\d+)(\d)([af]?)", entry.strip())
        if match is None:
            return None
        return match[1], (int(match[2]), int(match[3])), match[4]

    def _entries(self, kind: str) -> list[tuple[str, tuple[int, int], str]]:
        found = []
        for entry in self.arch_list:
            parsed = self._parse(entry)
            if parsed is not None and parsed[0] == kind:
                found.append((entry, parsed[1], parsed[2]))
        return found

    @property
    def native(self) -> bool:
        return any(cc == self.capability for _, cc, _ in self._entries("sm"))

    @property
    def compatible_sass(self) -> str | None:
        """SASS of an earlier minor version of this major version, which runs here (not tuned for it)."""
        major, minor = self.capability
        runs = [e for e, (x, y), suffix in self._entries("sm") if x == major and y <= minor and suffix != "a"]
        return max(runs, default=None)

    @property
    def ptx(self) -> tuple[str, ...]:
        """Every PTX the build carries."""
        return tuple(e for e, _, _ in self._entries("compute"))

    @property
    def usable_ptx(self) -> tuple[str, ...]:
        """PTX the driver can JIT-compile for this GPU (what ``CUDA_FORCE_PTX_JIT=1`` needs)."""
        return tuple(
            e for e, cc, suffix in self._entries("compute") if cc <= self.capability and suffix != "a"
        )

    @property
    def sm(self) -> str:
        return "sm_{}{}".format(*self.capability)


# --- comparing environments ------------------------------------------------------------------------

# Keys of a recorded environment that can explain a timing change (besides every env.* variable).
EXPLAINING = (
    "gpu",
    "driver",
    "cuda_driver",
    "cuda",
    "cudnn",
    "torch",
    "ultralytics",
    "python",
    "power_limit_w",
    "sm_clock_max_mhz",
    "persistence_mode",
    "cudnn_benchmark",
    "torch_threads",
)
# What makes two GPUs of one architecture different GPUs for timing purposes.
GPU_IDENTITY = ("gpu", "memory_mib", "sm_clock_max_mhz", "power_limit_w")


@dataclass(frozen=True)
class Change:
    key: str
    before: str | None
    after: str | None

    def __str__(self) -> str:
        name = self.key.removeprefix("env.")
        before = "(unset)" if self.before is None else self.before
        after = "(unset)" if self.after is None else self.after
        return f"{name} {before} -> {after}"


def changes(baseline: Mapping[str, str], current: Mapping[str, str]) -> list[Change]:
    """What changed between two recorded environments that may explain a timing change.

    Keys recorded on only one side are skipped (an older kernelgate did not record them), except
    environment variables, where set versus unset is itself the change.
    """
    # a pytest-xdist worker runs on its share of the CPUs with as many threads: kernelgate's doing,
    # recorded as cpu_share, not a change of the machine that could explain a kernel's time
    shared = "cpu_share" in baseline or "cpu_share" in current
    own = {"torch_threads", f"env.{THREADS}"} if shared else set()
    found = [
        Change(key, baseline[key], current[key])
        for key in EXPLAINING
        if key in baseline and key in current and baseline[key] != current[key] and key not in own
    ]
    variables = sorted({k for k in (*baseline, *current) if k.startswith("env.") and k not in own})
    found += [
        Change(k, baseline.get(k), current.get(k)) for k in variables if baseline.get(k) != current.get(k)
    ]
    return found


def _same(key: str, before: str, after: str) -> bool:
    try:
        a, b = float(before), float(after)
    except ValueError:
        return before == after
    return abs(a - b) <= 0.01 * max(abs(a), abs(b)) if key == "power_limit_w" else a == b


def gpu_differences(baseline: Mapping[str, str], current: Mapping[str, str]) -> list[Change]:
    """How the GPU of ``current`` differs from the baseline's (product, memory, max clock, power limit)."""
    return [
        Change(key, baseline[key], current[key])
        for key in GPU_IDENTITY
        if key in baseline and key in current and not _same(key, baseline[key], current[key])
    ]


def same_architecture(arch: str, keys: Iterable[str]) -> list[str]:
    """Baseline keys of other GPUs with the compute capability of ``arch`` (``sm90-*`` for ``sm90-x``)."""
    prefix = arch.split("-", 1)[0] + "-"
    if not re.fullmatch(r"sm\d+-", prefix):
        return []
    return sorted(k for k in keys if k.startswith(prefix) and k != arch)


OTHER_GPU_OPTION = "--kernelgate-allow-other-gpu"


def other_gpu_message(benchmark: str, baseline_path: str, differences: Iterable[Change]) -> str:
    listed = "; ".join(str(d) for d in differences)
    return (
        f"kernelgate: {benchmark}: the baseline in {baseline_path} was recorded on another GPU "
        f"({listed}). Timings of one GPU do not hold for another, even of the same architecture. "
        f"Record a baseline on this GPU (pytest benchmarks --kernelgate-save -k '{benchmark}'), "
        f"or compare with the other GPU's numbers anyway: {OTHER_GPU_OPTION}."
    )
