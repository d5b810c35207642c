"""The PTX probe's child: load the probe's PTX through the CUDA driver API (ctypes on ``libcuda``), so
the driver JIT-compiles it (or takes it from its JIT cache), then launch each kernel once.

Phases: ``load_driver`` (``libcuda.so.1``), ``cuda_init`` (``cuInit``, the primary context),
``module_load`` (``cuModuleLoadDataEx``: the JIT, with ``CU_JIT_WALL_TIME``), ``first_launch`` (each
kernel once, synchronized). No torch: what is timed is the driver alone.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LIBCUDA = "libcuda.so.1"
# cuda.h (CUDA 13.0): CUjit_option and CUdevice_attribute values
CU_JIT_WALL_TIME = 2
CU_JIT_ERROR_LOG_BUFFER = 5
CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
CC_MAJOR, CC_MINOR = 75, 76
LOG_BYTES = 8192
ELEMENTS = 1 << 16
BLOCK = 256

c_uint64, c_void_p, c_int, c_uint = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint
SIGNATURES: dict[str, list[Any]] = {
    "cuInit": [c_uint],
    "cuDriverGetVersion": [ctypes.POINTER(c_int)],
    "cuDeviceGet": [ctypes.POINTER(c_int), c_int],
    "cuDeviceGetName": [ctypes.c_char_p, c_int, c_int],
    "cuDeviceGetAttribute": [ctypes.POINTER(c_int), c_int, c_int],
    "cuDevicePrimaryCtxRetain": [ctypes.POINTER(c_void_p), c_int],
    "cuCtxSetCurrent": [c_void_p],
    "cuCtxSynchronize": [],
    "cuModuleLoadDataEx": [
        ctypes.POINTER(c_void_p),
        ctypes.c_char_p,
        c_uint,
        ctypes.POINTER(c_int),
        ctypes.POINTER(c_void_p),
    ],
    "cuModuleGetFunction": [ctypes.POINTER(c_void_p), c_void_p, ctypes.c_char_p],
    "cuMemAlloc_v2": [ctypes.POINTER(c_uint64), ctypes.c_size_t],
    "cuMemsetD32_v2": [c_uint64, c_uint, ctypes.c_size_t],
    "cuLaunchKernel": [c_void_p, *[c_uint] * 7, c_void_p, ctypes.POINTER(c_void_p), ctypes.POINTER(c_void_p)],
    "cuGetErrorName": [c_int, ctypes.POINTER(ctypes.c_char_p)],
    "cuGetErrorString": [c_int, ctypes.POINTER(ctypes.c_char_p)],
}


class DriverError(RuntimeError):
    """A driver call failed: which call, its CUresult and the driver's words for it."""

    def __init__(self, call: str, code: int, text: str, log: str = "") -> None:
        self.call, self.code = call, code
        message = f"{call} failed: CUresult {code} ({text})"
        super().__init__(message + (f"; JIT log: {log}" if log else ""))


class Driver:
    """The CUDA driver API through ctypes: ``driver("cuInit", 0)`` raises :class:`DriverError`."""

    def __init__(self, lib: Any | None = None) -> None:
        self.lib = lib if lib is not None else load_library()
        for name, argtypes in SIGNATURES.items():
            fn = getattr(self.lib, name, None)
            if fn is not None:
                fn.argtypes, fn.restype = argtypes, c_int

    def __call__(self, name: str, *args: Any, log: Callable[[], str] | None = None) -> None:
        code = int(getattr(self.lib, name)(*args))
        if code != 0:
            raise DriverError(name, code, self.error_text(code), log() if log else "")

    def error_text(self, code: int) -> str:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        try:
            self.lib.cuGetErrorName(code, ctypes.byref(name))
            self.lib.cuGetErrorString(code, ctypes.byref(text))
        except Exception:
            return "unknown error"
        words = [(v.value or b"").decode(errors="replace") for v in (name, text)]
        return ": ".join(w for w in words if w) or "unknown error"


def load_library() -> Any:
    """``libcuda.so.1``, the driver itself (not the toolkit's stub); raises OSError without one."""
    return ctypes.CDLL(LIBCUDA)


@dataclass(frozen=True)
class Loaded:
    """What the probe loaded and launched."""

    jit_wall_ms: float  # CU_JIT_WALL_TIME: the driver's compile and link time (0 from its cache)
    kernels: int
    ptx_bytes: int


def jit_options() -> tuple[Any, Any, Any]:
    """``cuModuleLoadDataEx``'s options: the JIT wall time (read back from its slot) and an error log."""
    log = ctypes.create_string_buffer(LOG_BYTES)
    options = (c_int * 3)(CU_JIT_WALL_TIME, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    values = (c_void_p * 3)(None, ctypes.addressof(log), LOG_BYTES)
    return options, values, log


def wall_time_ms(values: Any) -> float:
    """The float the driver wrote into the first option slot (CU_JIT_WALL_TIME, milliseconds)."""
    raw = (values[0] or 0).to_bytes(8, "little")
    ms: float = struct.unpack("<f", raw[:4])[0]
    return ms


def run(
    ptx: Path,
    kernel_names: Sequence[str],
    phase: Callable[[str], AbstractContextManager[None]],
    lib: Any | None = None,
) -> tuple[Loaded, dict[str, str], str]:
    """The probe in this process, phase by phase: (what it loaded, its environment, its arch key)."""
    image = ptx.read_bytes() + b"\0"
    with phase("load_driver"):
        cu = Driver(lib)
    with phase("cuda_init"):
        cu("cuInit", 0)
        device, context = c_int(), c_void_p()
        cu("cuDeviceGet", ctypes.byref(device), 0)
        cu("cuDevicePrimaryCtxRetain", ctypes.byref(context), device.value)
        cu("cuCtxSetCurrent", context)
    with phase("module_load"):
        module = c_void_p()
        options, values, log = jit_options()
        jit_log = lambda: log.value.decode(errors="replace").strip()[-500:]  # noqa: E731
        cu("cuModuleLoadDataEx", ctypes.byref(module), image, 3, options, values, log=jit_log)
    jit_ms = wall_time_ms(values)
    with phase("first_launch"):
        launch_all(cu, module, kernel_names)
    environment, arch = describe(cu, device.value)
    return Loaded(jit_ms, len(kernel_names), len(image) - 1), environment, arch


def launch_all(cu: Driver, module: Any, kernel_names: Sequence[str]) -> None:
    """Each kernel once over ``ELEMENTS`` floats, then synchronize."""
    out, inp = c_uint64(), c_uint64()
    cu("cuMemAlloc_v2", ctypes.byref(out), 4 * ELEMENTS)
    cu("cuMemAlloc_v2", ctypes.byref(inp), 4 * ELEMENTS)
    cu("cuMemsetD32_v2", inp.value, 0x3F800000, ELEMENTS)  # 1.0f
    count = c_int(ELEMENTS)
    args = [c_uint64(out.value), c_uint64(inp.value), count]
    params = (c_void_p * 3)(*[ctypes.addressof(a) for a in args])
    for name in kernel_names:
        fn = c_void_p()
        cu("cuModuleGetFunction", ctypes.byref(fn), module, name.encode())
        grid = (ELEMENTS + BLOCK - 1) // BLOCK
        cu("cuLaunchKernel", fn, grid, 1, 1, BLOCK, 1, 1, 0, None, params, None)
    cu("cuCtxSynchronize")


def describe(cu: Driver, device: int) -> tuple[dict[str, str], str]:
    """The environment a probe run records (as :func:`kernelgate.machine.software.collect` does for
    torch's) and the baseline key of its GPU."""
    from kernelgate.machine.identity import gpu_arch_key
    from kernelgate.machine.software import SPEED_VARIABLES
    from kernelgate.machine.state import gpu_state

    name = ctypes.create_string_buffer(256)
    cu("cuDeviceGetName", name, 256, device)
    major, minor, version = c_int(), c_int(), c_int()
    cu("cuDeviceGetAttribute", ctypes.byref(major), CC_MAJOR, device)
    cu("cuDeviceGetAttribute", ctypes.byref(minor), CC_MINOR, device)
    cu("cuDriverGetVersion", ctypes.byref(version))
    gpu = name.value.decode(errors="replace")
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "device": "cuda",
        "gpu": gpu,
        "compute_capability": f"{major.value}.{minor.value}",
        "cuda_driver": f"{version.value // 1000}.{version.value % 1000 // 10}",
    }
    env.update({f"env.{v}": os.environ[v] for v in SPEED_VARIABLES if v in os.environ})
    env.update(gpu_state())
    return dict(sorted(env.items())), gpu_arch_key(gpu, major.value, minor.value)
