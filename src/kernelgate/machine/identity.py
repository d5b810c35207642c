"""What a machine is: the GPU's identity (product, architecture, driver, limits), the baseline key
(``sm90-nvidia-h200``, or ``cpu-...`` without a GPU), and which baseline keys are the same architecture.

Read through NVML without importing torch, so the plugin can point pytest-benchmark's storage at
``baselines/<key>`` at start-up; :func:`torch_arch_key` takes torch as an argument.
"""

from __future__ import annotations

import hashlib
import platform
import re
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kernelgate.machine.nvml import as_text, nvml_module, try_read, visible_handle, watts


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
    # a hash of the GPU's NVML UUID (or serial), never the UUID itself (:func:`hashed_gpu_id`); the
    # PCIe link as trained now (it can train down at idle: shown, not part of a host's id)
    gpu_id: str | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None

    @property
    def key(self) -> str:
        """The baseline key: ``sm90-nvidia-h200``."""
        return gpu_arch_key(self.name, *self.compute_capability)

    @property
    def sm(self) -> str:
        return "sm_{}{}".format(*self.compute_capability)


def hashed_gpu_id(uuid: str | None, serial: str | None = None) -> str | None:
    """Which physical GPU this is, as 12 hex digits: a BLAKE2b hash of its NVML UUID (of its serial
    where the UUID cannot be read; None without either). Baselines are committed and reports
    published, so they carry this hash, never the serial or UUID; the UUID is 128 random bits, so
    the hash cannot be turned back into it by guessing."""
    if uuid:
        source = f"uuid:{uuid}"
    elif serial:
        source = f"serial:{serial}"
    else:
        return None
    return hashlib.blake2b(f"kernelgate-gpu\0{source}".encode(), digest_size=6).hexdigest()


def _cuda_version(number: int | None) -> str:
    return "unknown" if number is None else f"{number // 1000}.{number % 1000 // 10}"


def read_identity(nvml: Any | None = None) -> GpuIdentity | None:
    """The visible GPU's identity through NVML; None without NVML or without a visible GPU."""
    nvml = nvml or nvml_module()
    if nvml is None:
        return None
    handle = visible_handle(nvml)
    if handle is None:
        return None
    try:
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        name = as_text(nvml.nvmlDeviceGetName(handle))
    except Exception:
        return None
    arch = try_read(lambda: nvml.nvmlDeviceGetArchitecture(handle))
    memory = try_read(lambda: nvml.nvmlDeviceGetMemoryInfo(handle).total)
    return GpuIdentity(
        index=try_read(lambda: int(nvml.nvmlDeviceGetIndex(handle))) or 0,
        name=name,
        architecture=NVML_ARCHITECTURES.get(arch if arch is not None else -1)
        or architecture_name(major, minor),
        compute_capability=(int(major), int(minor)),
        driver=as_text(try_read(nvml.nvmlSystemGetDriverVersion) or "unknown"),
        cuda_driver=_cuda_version(try_read(nvml.nvmlSystemGetCudaDriverVersion)),
        memory_mib=None if memory is None else int(memory // 2**20),
        sm_clock_max_mhz=try_read(lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))),
        mem_clock_max_mhz=try_read(lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM))),
        power_limit_w=watts(try_read(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))),
        power_default_w=watts(try_read(lambda: nvml.nvmlDeviceGetPowerManagementDefaultLimit(handle))),
        gpu_id=hashed_gpu_id(
            try_read(lambda: as_text(nvml.nvmlDeviceGetUUID(handle))),
            try_read(lambda: as_text(nvml.nvmlDeviceGetSerial(handle))),
        ),
        pcie_gen=try_read(lambda: int(nvml.nvmlDeviceGetCurrPcieLinkGeneration(handle))),
        pcie_width=try_read(lambda: int(nvml.nvmlDeviceGetCurrPcieLinkWidth(handle))),
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


def same_architecture(arch: str, keys: Iterable[str]) -> list[str]:
    """Baseline keys of other GPUs with the compute capability of ``arch`` (``sm90-*`` for ``sm90-x``)."""
    prefix = arch.split("-", 1)[0] + "-"
    if not re.fullmatch(r"sm\d+-", prefix):
        return []
    return sorted(k for k in keys if k.startswith(prefix) and k != arch)
