"""What changed between two recorded environments that may explain a timing change, how a GPU
differs from the baseline's, and the message that refuses another GPU's baseline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kernelgate.config import record_command
from kernelgate.machine.software import THREADS

# Keys of a recorded environment that can explain a timing change (besides every env.* variable).
EXPLAINING = (
    "gpu",
    "driver",
    "cuda_driver",
    "cuda",
    "cudnn",
    "torch",
    "triton",  # recorded by compiled cold starts: a new Triton misses every cached kernel
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
    # which GPU of the same product a job was given (a runner host's job on its GPU 1): the host
    # fingerprint names the GPU, and one that runs slower is what the same-host judge measures. Listed,
    # it would lead every regression of a multi-GPU runner's jobs to "CUDA_VISIBLE_DEVICES (unset) -> 1"
    if baseline.get("gpu") is not None and baseline.get("gpu") == current.get("gpu"):
        own.add("env.CUDA_VISIBLE_DEVICES")
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


OTHER_GPU_OPTION = "--kernelgate-allow-other-gpu"


def other_gpu_message(benchmark: str, baseline_path: str, differences: Iterable[Change], target: str) -> str:
    listed = "; ".join(str(d) for d in differences)
    return (
        f"kernelgate: {benchmark}: the baseline in {baseline_path} was recorded on another GPU "
        f"({listed}). Timings of one GPU do not hold for another, even of the same architecture. "
        f"Record a baseline on this GPU ({record_command(target)}), "
        f"or compare with the other GPU's numbers anyway: {OTHER_GPU_OPTION}."
    )
