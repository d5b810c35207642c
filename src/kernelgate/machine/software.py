"""The software a measurement runs on: versions (as recorded, and as people read them), the
variables known to change kernel speed, what a torch build carries for a GPU, and :func:`collect`,
the environment recorded with every measurement.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from types import ModuleType

from kernelgate.machine import pinning
from kernelgate.machine.compile_cache import COMPILE_VARIABLES
from kernelgate.machine.identity import cpu_model
from kernelgate.machine.state import gpu_state


def cudnn_version(raw: str) -> str:
    """torch.backends.cudnn.version(): 91900 -> 9.19.0 (cuDNN 9), 8907 -> 8.9.7 (cuDNN 8)."""
    if not re.fullmatch(r"\d+", raw):
        return raw
    v = int(raw)
    if v >= 90000:
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 100}.{v % 100}"


THREADS = "OMP_NUM_THREADS"

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
    "KERNELGATE_SLOW_PHASE",  # kernelgate's own deliberate cold-start fault (kernelgate.coldstart.phases)
    *COMPILE_VARIABLES,  # torch.compile's caches switched off, its compile threads, Dynamo's precompile
)


def version_of(dist: str) -> str:
    """The installed version of a distribution, or ``not installed``."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def collect(torch: ModuleType, device: str) -> dict[str, str]:
    """Everything that can explain a timing change: versions, device, and its state now."""
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": str(torch.__version__),
        "ultralytics": version_of("ultralytics"),
        "pytest-benchmark": version_of("pytest-benchmark"),
        "kernelgate": version_of("kernelgate"),
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
