"""The GPUs this process may use: ``CUDA_VISIBLE_DEVICES`` read as CUDA reads it, and each visible
GPU's baseline key and nearest CPUs, through NVML without torch (for pinning pytest-xdist workers).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from typing import Any

from kernelgate.machine import pinning
from kernelgate.machine.identity import gpu_arch_key
from kernelgate.machine.nvml import as_text, nvml_module, try_read


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
    nvml = nvml or nvml_module()
    if nvml is None:
        return ()
    count = try_read(nvml.nvmlDeviceGetCount) or 0
    found: list[VisibleGpu] = []
    for entry in cuda_visible_entries(os.environ.get("CUDA_VISIBLE_DEVICES"), int(count)):
        try:
            if entry.isdigit():
                handle = nvml.nvmlDeviceGetHandleByIndex(int(entry))
            else:
                handle = nvml.nvmlDeviceGetHandleByUUID(entry)
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            name = as_text(nvml.nvmlDeviceGetName(handle))
        except Exception:
            break  # a UUID NVML does not know: CUDA stops at it too
        words = try_read(partial(nvml.nvmlDeviceGetCpuAffinity, handle, (os.cpu_count() or 64) // 64 + 1))
        near = pinning.mask_cpus([int(w) for w in words]) if words is not None else ()
        found.append(VisibleGpu(entry, gpu_arch_key(name, int(major), int(minor)), near))
    return tuple(found)


def host_gpu_count(nvml: Any | None = None) -> int:
    """How many GPUs the host's driver shows (NVML: whatever ``CUDA_VISIBLE_DEVICES`` hides from this
    process; a container given one GPU shows one, a GPU split into MIG instances counts once); 0
    without NVML."""
    nvml = nvml or nvml_module()
    return int(try_read(nvml.nvmlDeviceGetCount) or 0) if nvml is not None else 0


def gpu_counts(nvml: Any | None = None) -> tuple[int, int]:
    """(the GPUs the host's driver shows, those ``CUDA_VISIBLE_DEVICES`` leaves this process); (0, 0)
    without NVML."""
    host = host_gpu_count(nvml)
    return host, len(cuda_visible_entries(os.environ.get("CUDA_VISIBLE_DEVICES"), host))
