"""One GPU per pytest-xdist worker: which GPU each worker gets, and pinning a worker to it.

``pytest benchmarks -n auto`` starts one worker per visible GPU (the plugin's
``pytest_xdist_auto_num_workers``). The controller hands out the GPUs as xdist sets up each worker
(:class:`Slots`: worker ``gwN`` gets the N-th visible GPU; a worker that replaces a crashed one gets
the GPU that was freed); the worker sets ``CUDA_VISIBLE_DEVICES`` to that one GPU in
``pytest_configure``, before torch initialises CUDA (:func:`pin`). A GPU is never given to two live
workers, so two benchmarks never share a GPU: they would disturb each other's timings.

Pure: no torch, no NVML. The plugin passes in the ``CUDA_VISIBLE_DEVICES`` entries it read
(:func:`kernelgate.environment.visible_gpus`), so every rule here is tested on a machine without a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

VISIBLE_VAR = "CUDA_VISIBLE_DEVICES"
# Set in a pinned worker (and so in the confirm runs it starts): the GPU it was given, and the
# CUDA_VISIBLE_DEVICES the run started with, so a measurement records what the user set.
PINNED_VAR = "KERNELGATE_PINNED_GPU"
PARENT_VAR = "KERNELGATE_PARENT_CUDA_VISIBLE_DEVICES"

_WORKER_ID = re.compile(r"gw(\d+)")


class PinningError(Exception):
    """Workers cannot each have a GPU of their own; the message names the numbers and the fix."""


def worker_index(worker_id: str) -> int:
    """``gw3`` -> 3 (pytest-xdist names its workers ``gw0``, ``gw1``, ...)."""
    match = _WORKER_ID.fullmatch(worker_id)
    if match is None:
        raise PinningError(f"kernelgate: {worker_id!r} is not a pytest-xdist worker id (gw0, gw1, ...)")
    return int(match[1])


def too_many(workers: int, gpus: Sequence[str]) -> str | None:
    """Why ``workers`` workers cannot each have one of ``gpus`` (None when they can)."""
    if workers <= len(gpus):
        return None
    listed = ", ".join(gpus) or "none"
    return (
        f"kernelgate: -n {workers} starts {workers} workers, but {len(gpus)} GPU(s) are visible "
        f"(CUDA_VISIBLE_DEVICES entries: {listed}); each worker needs a GPU of its own, or two benchmarks "
        f"would share one and disturb each other's timings. Use -n auto (one worker per GPU) or "
        f"-n {max(len(gpus), 1)}."
    )


def gpu_for_worker(worker_id: str, worker_count: int, gpus: Sequence[str]) -> str:
    """The GPU of worker ``gwN`` of ``worker_count``: the N-th of ``gpus`` (the entries of the
    ``CUDA_VISIBLE_DEVICES`` the run started with, or every GPU when it was unset)."""
    problem = too_many(worker_count, gpus)
    if problem:
        raise PinningError(problem)
    index = worker_index(worker_id)
    if index >= len(gpus):
        raise PinningError(
            f"kernelgate: worker {worker_id} has no GPU: {len(gpus)} are visible ({', '.join(gpus)}). "
            f"Use -n auto (one worker per GPU) or -n {len(gpus)}."
        )
    return gpus[index]


@dataclass
class Slots:
    """The controller's table of which live worker holds which GPU."""

    gpus: tuple[str, ...]
    holders: dict[str, str] = field(default_factory=dict)  # GPU entry -> live worker id
    given: dict[str, str] = field(default_factory=dict)  # worker id -> GPU entry, every worker so far

    def claim(self, worker_id: str) -> str:
        """A free GPU for ``worker_id``: its own (``gwN`` -> the N-th) where free, else the first free
        one (a worker that replaces a crashed one has a new id and gets the GPU that was freed)."""
        for gpu, holder in self.holders.items():
            if holder == worker_id:
                return gpu
        free = [gpu for gpu in self.gpus if gpu not in self.holders]
        if not free:
            busy = ", ".join(f"{w} on {g}" for g, w in self.holders.items())
            raise PinningError(
                f"kernelgate: no free GPU for worker {worker_id}: all {len(self.gpus)} are held ({busy}). "
                f"Use -n auto (one worker per GPU) or -n {len(self.gpus)}."
            )
        index = worker_index(worker_id)
        gpu = self.gpus[index] if index < len(self.gpus) and self.gpus[index] in free else free[0]
        self.holders[gpu] = worker_id
        self.given[worker_id] = gpu
        return gpu

    def release(self, worker_id: str) -> None:
        for gpu in [g for g, w in self.holders.items() if w == worker_id]:
            del self.holders[gpu]

    def summary(self) -> str:
        """``gw0 on GPU 2, gw1 on GPU 3``: where each worker ran."""
        return ", ".join(f"{w} on GPU {g}" for w, g in self.given.items())


def cpu_share(cpus: Sequence[int], gpus: Sequence[str], gpu: str) -> tuple[int, ...]:
    """The CPUs of the worker on ``gpu``: an equal, disjoint slice of ``cpus`` per GPU.

    A worker launches kernels from one thread, but torch's CPU ops (the model build's stride
    forward, letterbox, a cold start's child) run on all of its OpenMP threads; two workers with a
    thread per core each would oversubscribe the host (on the 2-GPU H200 a cold start's model build
    went from 80 ms to 2.2 s beside another worker). Empty where there are fewer CPUs than GPUs.
    """
    per = len(cpus) // max(1, len(gpus))
    index = list(gpus).index(gpu)
    return tuple(sorted(cpus)[index * per : (index + 1) * per])


def pin(environ: MutableMapping[str, str], gpu: str) -> None:
    """Show CUDA only ``gpu`` (a ``CUDA_VISIBLE_DEVICES`` entry), keeping what the run started with
    in :data:`PARENT_VAR` (for the measurement's record) and the pin in :data:`PINNED_VAR`."""
    if PINNED_VAR not in environ and VISIBLE_VAR in environ:
        environ[PARENT_VAR] = environ[VISIBLE_VAR]
    environ[VISIBLE_VAR] = gpu
    environ[PINNED_VAR] = gpu


def pinned(environ: Mapping[str, str]) -> str | None:
    """The GPU this process was pinned to by its worker (None when it was not pinned)."""
    gpu = environ.get(PINNED_VAR)
    return gpu if gpu is not None and environ.get(VISIBLE_VAR) == gpu else None


def user_visible_devices(environ: Mapping[str, str]) -> str | None:
    """``CUDA_VISIBLE_DEVICES`` as the user set it: before a worker's pin, where there was one."""
    if pinned(environ) is not None:
        return environ.get(PARENT_VAR)
    return environ.get(VISIBLE_VAR)
