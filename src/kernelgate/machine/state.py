"""How a GPU is doing right now: clocks, temperature, power, load, its compute processes, and the
clock-event reasons NVML gives (which of them mean throttling); read, never set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernelgate.machine.identity import read_identity
from kernelgate.machine.nvml import nvml_module, try_read, visible_handle, watts

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


_COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}


def read_state(nvml: Any | None = None) -> GpuState | None:
    """The visible GPU's clocks, temperature, power, load and compute processes as NVML reads them now."""
    nvml = nvml or nvml_module()
    handle = None if nvml is None else visible_handle(nvml)
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

    used = try_read(lambda: nvml.nvmlDeviceGetMemoryInfo(handle).used)
    mode = try_read(lambda: nvml.nvmlDeviceGetComputeMode(handle))
    return GpuState(
        sm_clock_mhz=try_read(lambda: int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))),
        mem_clock_mhz=try_read(lambda: int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM))),
        temperature_c=try_read(lambda: int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU))),
        slowdown_temperature_c=try_read(
            lambda: int(
                nvml.nvmlDeviceGetTemperatureThreshold(handle, nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
            )
        ),
        power_w=watts(try_read(lambda: nvml.nvmlDeviceGetPowerUsage(handle))),
        clock_event_reasons=try_read(lambda: int(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))),
        utilization_pct=try_read(lambda: int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)),
        memory_used_mib=None if used is None else round(used / 2**20, 1),
        processes=try_read(processes),
        persistence_mode=try_read(lambda: bool(nvml.nvmlDeviceGetPersistenceMode(handle))),
        mig_enabled=try_read(lambda: bool(nvml.nvmlDeviceGetMigMode(handle)[0])),
        compute_mode=None if mode is None else _COMPUTE_MODES.get(mode, str(mode)),
    )


def gpu_state() -> dict[str, str]:
    """The visible GPU's identity and state now, as strings for a measurement's environment."""
    nvml = nvml_module()
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


# NVML clock-event reasons that slow the SM down (nvmlClocksEventReason*): software power cap,
# hardware slowdown, software/hardware thermal slowdown, hardware power brake.
THROTTLE_REASONS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake",
}


def throttle_reasons(state: Mapping[str, str]) -> list[str]:
    """The slowdown reasons set in a GPU state as :func:`gpu_state` recorded it."""
    try:
        mask = int(state.get("clock_event_reasons", "0"), 16)
    except ValueError:
        return []
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
