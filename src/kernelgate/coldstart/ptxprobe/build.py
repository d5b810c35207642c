"""Build the PTX probe: ``probe.cu`` with ``kernels`` kernels, compiled by ``nvcc -ptx`` for the GPU's
own virtual architecture (``compute_90`` on an H100), so the file holds PTX and no SASS.

Runs in the parent, before the children: ``nvcc`` is not part of what a cold start measures. Where
there is no GPU or no ``nvcc``, :func:`unavailable` says why and the scenario skips; where nvcc fails,
the scenario fails (:class:`ProbeBuildError`, with nvcc's output and the command).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("probe.cu")
DEFAULT_KERNELS = 8  # about 2 s of ptxas on the 2-core CI machine (0.93 s for 4): over any floor
MAX_KERNELS = 256
PTX_FILE = "ptxprobe.ptx"
NVCC_TIMEOUT_S = 300.0


class ProbeUnavailable(RuntimeError):
    """The PTX probe cannot run here (no GPU, no nvcc): the scenario skips, with why and what would
    make it run."""


class ProbeBuildError(RuntimeError):
    """nvcc is there but did not build the probe's PTX: a fault, not a reason to skip."""


@dataclass(frozen=True)
class Built:
    """The probe's PTX file and how it was made."""

    path: Path
    command: tuple[str, ...]
    seconds: float
    nvcc_version: str

    @property
    def bytes(self) -> int:
        return self.path.stat().st_size


def find_nvcc(
    environ: Mapping[str, str] | None = None, which: Callable[[str], str | None] = shutil.which
) -> str | None:
    """``nvcc`` from ``PATH``, else from ``$CUDA_HOME``/``$CUDA_PATH``, else ``/usr/local/cuda``."""
    env = os.environ if environ is None else environ
    found = which("nvcc")
    if found:
        return found
    for root in (env.get("CUDA_HOME"), env.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.access(Path(root, "bin", "nvcc"), os.X_OK):
            return str(Path(root, "bin", "nvcc"))
    return None


def wrapper_source(kernels: int, source: Path = SOURCE) -> str:
    """The translation unit nvcc compiles: ``probe.cu`` and its ``kernels`` instantiations."""
    if not 1 <= kernels <= MAX_KERNELS:
        raise ValueError(f"the PTX probe takes 1 to {MAX_KERNELS} kernels, not {kernels}")
    lines = [f'#include "{source.resolve()}"']
    lines += [f"KG_PROBE_KERNEL({i})" for i in range(kernels)]
    return "\n".join(lines) + "\n"


def nvcc_command(nvcc: str, source: Path, out: Path, capability: tuple[int, int]) -> list[str]:
    """PTX only, for the GPU's own virtual architecture: ``-ptx -arch=compute_XY`` (as
    ``-gencode arch=compute_XY,code=compute_XY`` would embed it in a fatbinary)."""
    major, minor = capability
    return [nvcc, "-ptx", f"-arch=compute_{major}{minor}", "-o", str(out), str(source)]


def unavailable(device: str, capability: tuple[int, int] | None, nvcc: str | None) -> str | None:
    """Why the probe cannot run here (None when it can)."""
    if not device.startswith("cuda"):
        return "the PTX probe is a GPU scenario (the device is the CPU)"
    if capability is None:
        return (
            "the PTX probe needs a CUDA GPU, and NVML sees none (no driver, or CUDA_VISIBLE_DEVICES hides it)"
        )
    if nvcc is None:
        return (
            "the PTX probe is compiled at run time with nvcc, and there is none on PATH, in "
            "$CUDA_HOME/bin or /usr/local/cuda/bin: install the CUDA toolkit's compiler (e.g. apt-get "
            "install cuda-nvcc-13-0) or set CUDA_HOME"
        )
    return None


def gpu_capability() -> tuple[int, int] | None:
    """The visible GPU's compute capability through NVML (no CUDA context in this process)."""
    from kernelgate.machine.identity import read_identity

    identity = read_identity()
    return None if identity is None else identity.compute_capability


def build(
    kernels: int,
    workdir: Path,
    capability: tuple[int, int],
    nvcc: str,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> Built:
    """``workdir/ptxprobe.ptx``: the probe's PTX for ``capability``; raises
    :class:`ProbeBuildError` with nvcc's output when it fails, or when its output holds no PTX."""
    workdir.mkdir(parents=True, exist_ok=True)
    source = workdir / "ptxprobe.cu"
    source.write_text(wrapper_source(kernels), encoding="utf-8")
    out = workdir / PTX_FILE
    command = nvcc_command(nvcc, source, out, capability)
    start = time.perf_counter()
    done = run(command, capture_output=True, text=True, timeout=NVCC_TIMEOUT_S, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-4:])
        raise ProbeBuildError(
            f"nvcc failed building the PTX probe (exit {done.returncode}): {tail}; "
            f"command: {' '.join(command)}"
        )
    check_ptx(out, capability)
    version = run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False)
    release = [line for line in version.stdout.splitlines() if "release" in line]
    return Built(out, tuple(command), seconds, release[-1].strip() if release else "unknown")


def check_ptx(path: Path, capability: tuple[int, int]) -> None:
    """The file is PTX for ``sm_XY`` with at least one kernel entry (not a cubin, not empty)."""
    major, minor = capability
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProbeBuildError(f"nvcc left no readable PTX at {path}: {exc}") from exc
    if f".target sm_{major}{minor}" not in text or ".entry kg_probe_0" not in text:
        raise ProbeBuildError(
            f"{path} is not PTX for sm_{major}{minor} with the probe's kernels (no "
            f"'.target sm_{major}{minor}' or no '.entry kg_probe_0')"
        )


def kernel_names(kernels: int) -> Sequence[str]:
    return [f"kg_probe_{i}" for i in range(kernels)]
