"""A stand-in for the ``pynvml`` module (nvidia-ml-py): one or more GPUs with settable readings.

``fake_pynvml(FakeGpu(name="NVIDIA H200", ...))`` returns a module object with the functions and
constants kernelgate reads; install it with ``monkeypatch.setitem(sys.modules, "pynvml", module)``.
A reading set to :data:`FAILS` raises ``NVMLError`` as an unsupported query does on real GPUs.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FAILS = object()


class NVMLError(Exception):
    pass


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    uuid: str = "GPU-0000"
    capability: tuple[int, int] = (9, 0)
    architecture: Any = 9  # NVML_DEVICE_ARCH_HOPPER
    memory_total: Any = 143771 * 2**20
    memory_used: Any = 512 * 2**20
    sm_clock: Any = 1980
    sm_clock_max: Any = 1980
    mem_clock: Any = 3201
    mem_clock_max: Any = 3201
    temperature: Any = 34
    slowdown_temperature: Any = 87
    power_mw: Any = 120_500
    power_limit_mw: Any = 700_000
    power_default_mw: Any = 700_000
    reasons: Any = 0x1
    utilization: Any = 0
    processes: Any = field(default_factory=list)  # [(pid, bytes or None)]
    persistence: Any = 1
    mig: Any = 0
    compute_mode: Any = 0
    cpu_affinity: Any = FAILS  # 64-bit words of the CPUs near the GPU (nvmlDeviceGetCpuAffinity)
    serial: Any = FAILS  # nvmlDeviceGetSerial: unsupported on many boards
    pcie_gen: Any = 5
    pcie_width: Any = 16


def fake_pynvml(
    *gpus: FakeGpu, driver: str = "580.159.04", cuda_driver: int = 13000, init_error: str = ""
) -> Any:
    module = types.ModuleType("pynvml")
    m: Any = module
    m.NVMLError = NVMLError
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM = 1, 2
    m.NVML_TEMPERATURE_GPU = 0
    m.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1

    def init() -> None:
        if init_error:
            raise NVMLError(init_error)

    def handle_by_index(index: int) -> FakeGpu:
        if not 0 <= index < len(gpus):
            raise NVMLError("Invalid Argument")
        return gpus[index]

    def handle_by_uuid(uuid: str) -> FakeGpu:
        for gpu in gpus:
            if gpu.uuid == uuid:
                return gpu
        raise NVMLError("Not Found")

    def reading(attr: str, transform: Callable[[Any], Any] = lambda v: v) -> Callable[..., Any]:
        def read(handle: FakeGpu, *args: Any) -> Any:
            value = getattr(handle, attr)
            if value is FAILS:
                raise NVMLError("Not Supported")
            return transform(value)

        return read

    def clock(current: bool) -> Callable[[FakeGpu, int], Any]:
        def read(handle: FakeGpu, kind: int) -> Any:
            attr = {1: "sm_clock", 2: "mem_clock"}[kind] + ("" if current else "_max")
            return reading(attr)(handle)

        return read

    m.nvmlInit = init
    m.nvmlDeviceGetCount = lambda: len(gpus)
    m.nvmlDeviceGetHandleByIndex = handle_by_index
    m.nvmlDeviceGetHandleByUUID = handle_by_uuid
    m.nvmlDeviceGetIndex = lambda handle: gpus.index(handle)
    m.nvmlDeviceGetName = reading("name")
    m.nvmlDeviceGetCudaComputeCapability = reading("capability")
    m.nvmlDeviceGetArchitecture = reading("architecture")
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(
        total=reading("memory_total")(h), used=reading("memory_used")(h)
    )
    m.nvmlSystemGetDriverVersion = lambda: driver
    m.nvmlSystemGetCudaDriverVersion = lambda: cuda_driver
    m.nvmlDeviceGetClockInfo = clock(current=True)
    m.nvmlDeviceGetMaxClockInfo = clock(current=False)
    m.nvmlDeviceGetTemperature = reading("temperature")
    m.nvmlDeviceGetTemperatureThreshold = reading("slowdown_temperature")
    m.nvmlDeviceGetPowerUsage = reading("power_mw")
    m.nvmlDeviceGetEnforcedPowerLimit = reading("power_limit_mw")
    m.nvmlDeviceGetPowerManagementDefaultLimit = reading("power_default_mw")
    m.nvmlDeviceGetCurrentClocksEventReasons = reading("reasons")
    m.nvmlDeviceGetUtilizationRates = reading("utilization", lambda v: types.SimpleNamespace(gpu=v, memory=0))
    m.nvmlDeviceGetComputeRunningProcesses = reading(
        "processes", lambda ps: [types.SimpleNamespace(pid=p, usedGpuMemory=b) for p, b in ps]
    )
    m.nvmlDeviceGetPersistenceMode = reading("persistence")
    m.nvmlDeviceGetMigMode = reading("mig", lambda v: [v, v])
    m.nvmlDeviceGetComputeMode = reading("compute_mode")
    m.nvmlDeviceGetCpuAffinity = reading("cpu_affinity")
    m.nvmlDeviceGetUUID = reading("uuid")
    m.nvmlDeviceGetSerial = reading("serial")
    m.nvmlDeviceGetCurrPcieLinkGeneration = reading("pcie_gen")
    m.nvmlDeviceGetCurrPcieLinkWidth = reading("pcie_width")
    return module
