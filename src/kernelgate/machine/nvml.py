"""NVML access (nvidia-ml-py), read without importing torch: loading it, why it cannot be loaded, the
handle of the GPU CUDA calls device 0, and reads that give None where NVML fails. Nothing here sets
a GPU setting.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def nvml_module() -> Any | None:
    """The ``pynvml`` module, initialised; None without it or without an NVIDIA driver."""
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


def visible_handle(nvml: Any) -> Any | None:
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


def try_read(read: Callable[[], T]) -> T | None:
    """``read()``, or None where it raises (NVML raises for what a GPU or driver does not support)."""
    try:
        return read()
    except Exception:
        return None


def as_text(value: object) -> str:
    """A string NVML returned, as ``str`` (older nvidia-ml-py returns ``bytes``)."""
    return value.decode() if isinstance(value, bytes) else str(value)


def watts(milliwatts: int | None) -> float | None:
    return None if milliwatts is None else round(milliwatts / 1000.0, 1)
