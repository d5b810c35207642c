"""One GPU per pytest-xdist worker: which GPU each worker gets, and pinning a worker to it.

``pytest benchmarks -n auto`` starts one worker per visible GPU (the plugin's
``pytest_xdist_auto_num_workers``). The controller hands out the GPUs as xdist sets up each worker
(:class:`Slots`: worker ``gwN`` gets the N-th visible GPU; a worker that replaces a crashed one gets
the GPU that was freed); the worker sets ``CUDA_VISIBLE_DEVICES`` to that one GPU in
``pytest_configure``, before torch initialises CUDA (:func:`pin`). A GPU is never given to two live
workers, so two benchmarks never share a GPU: they would disturb each other's timings.

Pure: no torch, no NVML. The plugin passes in the ``CUDA_VISIBLE_DEVICES`` entries it read
(:func:`kernelgate.machine.visible.visible_gpus`), so every rule here is tested on a machine
without a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

VISIBLE_VAR = "CUDA_VISIBLE_DEVICES"
# Set in a pinned worker (and so in the confirm runs it starts): the GPU it was given, and the
# CUDA_VISIBLE_DEVICES the run started with, so a measurement records what the user set.
PINNED_VAR = "KERNELGATE_PINNED_GPU"
PARENT_VAR = "KERNELGATE_PARENT_CUDA_VISIBLE_DEVICES"
# Set in a worker given a share of the host's CPUs (and inherited by its children): that share.
SHARE_VAR = "KERNELGATE_CPU_SHARE"

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
    cpus: dict[str, tuple[int, ...]] = field(default_factory=dict)  # GPU entry -> its worker's CPUs
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
        """``gw0 on GPU 2 (CPUs 0-7), gw1 on GPU 3 (CPUs 8-15)``: where each worker ran."""
        return ", ".join(self.where(worker) for worker in self.given)

    def where(self, worker_id: str) -> str:
        gpu = self.given[worker_id]
        cpus = self.cpus.get(gpu, ())
        return f"{worker_id} on GPU {gpu}" + (f" (CPUs {cpu_list(cpus)})" if cpus else "")


def cpu_list(cpus: Sequence[int]) -> str:
    """``(0, 1, 2, 3, 8)`` -> ``0-3,8``: the Linux CPU list notation, as taskset and lscpu write it."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """A Linux CPU list (``0-3,8,10-11``, as in ``/sys/devices/system/cpu/*/topology``) as numbers."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus += range(int(first), int(last or first) + 1)
    return tuple(cpus)


def mask_cpus(words: Sequence[int]) -> tuple[int, ...]:
    """The CPUs of an NVML CPU-affinity mask: 64-bit words, CPU ``i`` is bit ``i % 64`` of word
    ``i // 64``."""
    return tuple(64 * i + bit for i, word in enumerate(words) for bit in range(64) if word >> bit & 1)


def cores(cpus: Sequence[int], siblings: Mapping[int, Sequence[int]]) -> list[tuple[int, ...]]:
    """``cpus`` grouped into physical cores: a CPU with its hyperthread ``siblings`` (those of them in
    ``cpus``), cores in order of their first CPU. A CPU without a known sibling list is a core alone."""
    allowed = set(cpus)
    found: dict[tuple[int, ...], None] = {}
    for cpu in sorted(allowed):
        core = tuple(sorted(allowed & {cpu, *siblings.get(cpu, ())}))
        found.setdefault(core, None)
    return sorted(found, key=lambda core: core[0])


def cpu_shares(
    host_cores: Sequence[Sequence[int]],
    gpus: Sequence[str],
    near: Mapping[str, Collection[int]] | None = None,
) -> dict[str, tuple[int, ...]]:
    """The CPUs of the worker on each GPU: an equal number of whole physical cores per GPU, disjoint,
    each GPU's taken first from the cores NVML names as near it (its NUMA node), then in order.

    A worker launches kernels from one thread, but torch's CPU ops (the model build's stride forward,
    letterbox, a cold start's child) run on all of its OpenMP threads; two workers with a thread per
    core each would oversubscribe the host (on the 2-GPU H200 a cold start's model build went from
    80 ms to 2.2 s beside another worker). Whole cores, so that no two workers share a core through
    its hyperthreads; near cores, so that a worker's host memory is local to its GPU's PCIe root.
    Empty shares where there are fewer cores than GPUs (the workers then run unpinned).
    """
    per = len(host_cores) // max(1, len(gpus))
    if per == 0:
        return {gpu: () for gpu in gpus}
    free = [tuple(core) for core in host_cores]
    shares: dict[str, tuple[int, ...]] = {}
    for gpu in gpus:
        close = set((near or {}).get(gpu, ()))
        ranked = sorted(free, key=lambda core: not close.issuperset(core))  # stable: near first, in order
        taken = ranked[:per]
        free = [core for core in free if core not in taken]
        shares[gpu] = tuple(sorted(cpu for core in taken for cpu in core))
    return shares


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
