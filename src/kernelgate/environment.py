"""Which machine a measurement comes from: the architecture key for baselines, and the environment.

The key is read through NVML (nvidia-ml-py) without importing torch, so the plugin can point
pytest-benchmark's storage at ``baselines/<key>`` at start-up. NVML is only read, never set.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from collections.abc import Callable
from importlib import metadata
from types import ModuleType
from typing import Any


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


def _nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


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


def detect_arch_key(force_cpu: bool = False) -> str:
    """The baseline key of this machine, read without torch (NVML, /proc/cpuinfo)."""
    if force_cpu:
        return cpu_arch_key()
    nvml = _nvml()
    if nvml is None:
        return cpu_arch_key()
    handle = _visible_nvml_handle(nvml)
    if handle is None:
        return cpu_arch_key()
    major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
    return gpu_arch_key(nvml.nvmlDeviceGetName(handle), major, minor)


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
    """Clocks, temperature, power and clock-event reasons of the visible GPU, as NVML reads them now."""
    nvml = _nvml()
    if nvml is None:
        return {}
    handle = _visible_nvml_handle(nvml)
    if handle is None:
        return {}
    state: dict[str, str] = {}
    readers: dict[str, Callable[[], object]] = {
        "driver": lambda: nvml.nvmlSystemGetDriverVersion(),
        "sm_clock_mhz": lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
        "sm_clock_max_mhz": lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM),
        "mem_clock_mhz": lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
        "temperature_c": lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
        "power_w": lambda: round(nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0, 1),
        "power_limit_w": lambda: round(nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0, 1),
        "clock_event_reasons": lambda: hex(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle)),
    }
    for key, read in readers.items():
        try:
            state[key] = str(read())
        except Exception:
            continue
    return state


# Environment variables known to change kernel choice, launch cost or load time.
SPEED_VARIABLES = (
    "CUBLAS_WORKSPACE_CONFIG",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_MAXSIZE",
    "CUDA_CACHE_PATH",
    "CUDA_FORCE_PTX_JIT",
    "CUDA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "TORCH_CUDNN_V8_API_DISABLED",
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
