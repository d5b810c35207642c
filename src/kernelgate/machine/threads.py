"""The number of intra-op threads torch runs a benchmark with: chosen once, set explicitly.

Left alone, it depends on import order: ``import ultralytics`` sets ``OMP_NUM_THREADS=1`` when it is
unset (ultralytics/__init__.py, for training), and OpenMP reads the variable when torch loads it.
Imported before torch, ultralytics gives every CPU op one thread; imported after, it changes nothing.
So kernelgate takes the count once, when the run is configured (after the conftest files, before any
model is built: kernelgate imports ultralytics only then), and sets it with ``torch.set_num_threads``
before every benchmark:

1. ``threads`` in ``[tool.kernelgate]`` (e.g. ``threads = 1`` to measure as a deployment that imports
   ultralytics first does);
2. else ``OMP_NUM_THREADS`` as the run is configured (the job's environment, or what its conftest set:
   the code under test);
3. else a pytest-xdist worker's share of the CPUs (:mod:`kernelgate.plugin.workers`);
4. else the CPUs this process may run on; on a GPU where ``CUDA_VISIBLE_DEVICES`` leaves the job
   fewer GPUs than the host has (NVML's count), the host's CPUs shared evenly among its GPUs, this
   job's GPUs' part of them (never more than it may run on): a runner host with a CI job on each
   GPU. (A container given one GPU, or a job on a MIG instance, sees one GPU and takes all.) A job
   on each GPU, each with every CPU as threads, makes every judge round about twice as long and A/A
   runs red, since OpenMP's waiting threads spin on CPUs the other jobs need (docs/sensitivity.md, "A
   job on each of four H200s with every CPU as threads"); the share matches the baselines' 16-CPU,
   one-GPU hosts.

Cold-start children are not set so: they start as a user's process would, with the environment
the run gives them (``OMP_NUM_THREADS`` as the run was configured, not the 1 that ``import ultralytics``
leaves in the pytest process), except on such a shared GPU host (:func:`for_coldstart`): there each
child gets ``OMP_NUM_THREADS`` = the job's share unless the run was started with the variable set.
With a job on each GPU and every CPU as threads, the cold start's ``build`` phase (the model built
from its yaml: CPU ops in torch's threads) takes several times as long as with one job alone
(docs/fleet.md).

The count is recorded with every measurement (``torch_threads``); a baseline recorded with another
count is an environment change the failure message names, and on a CPU, where every op is host work,
a reason not to compare at all (:mod:`kernelgate.verdict.yardstick`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from kernelgate.machine.pinning import SHARE_VAR, parse_cpu_list
from kernelgate.machine.visible import gpu_counts

VARIABLE = "OMP_NUM_THREADS"


def positive(text: str | None) -> int | None:
    """A thread count given as text (``OMP_NUM_THREADS``): a whole number from 1, else None."""
    return int(text) if text is not None and text.strip().isdigit() and int(text) > 0 else None


def gpu_share(host_cpus: int, usable: int, gpus_on_host: int, gpus_visible: int) -> int | None:
    """The threads of a job given ``gpus_visible`` of the host's ``gpus_on_host`` GPUs: the host's CPUs
    times its part of them, never more than the ``usable`` CPUs it may run on, never 0; None where the
    job was given every GPU (or the host has one, or NVML none): nothing to share."""
    if gpus_on_host <= max(1, gpus_visible):
        return None
    return max(1, min(usable, host_cpus * max(1, gpus_visible) // gpus_on_host))


def choose(
    configured: int | None,
    at_start: str | None,
    environ: Mapping[str, str],
    gpus_on_host: int = 1,
    gpus_visible: int = 1,
) -> tuple[int, str]:
    """The thread count and where it came from; ``at_start``: OMP_NUM_THREADS when the run was
    configured, ``environ``: the environment now, ``gpus_on_host``: the GPUs the host's CPUs are
    shared among, ``gpus_visible``: how many of them this job was given (1 and 1 on a CPU run)."""
    if configured:
        return configured, "threads in [tool.kernelgate]"
    started = positive(at_start)
    if started:
        return started, f"{VARIABLE} when the run was configured"
    share = environ.get(SHARE_VAR)
    if share:
        return len(parse_cpu_list(share)), "this pytest-xdist worker's share of the CPUs"
    count = _job_share(gpus_on_host, gpus_visible)
    if count is not None:
        mine = f"{max(1, gpus_visible)} of its {gpus_on_host} GPUs"
        return count, f"the host's {_host_cpus()} CPUs shared among its GPUs, this job's {mine}"
    return len(os.sched_getaffinity(0)), "the CPUs this process may run on"


def _host_cpus() -> int:
    return os.cpu_count() or len(os.sched_getaffinity(0))


def _job_share(gpus_on_host: int, gpus_visible: int) -> int | None:
    """:func:`gpu_share` of this host's CPUs for this process, limited to those it may run on."""
    return gpu_share(_host_cpus(), len(os.sched_getaffinity(0)), gpus_on_host, gpus_visible)


def for_device(
    device: str, configured: int | None, at_start: str | None, environ: Mapping[str, str]
) -> tuple[int, str]:
    """:func:`choose` for a benchmark on ``device`` (``cuda…`` or ``cpu``): on a GPU the CPUs are
    shared among the host's GPUs, a CI job on each."""
    host, visible = gpu_counts() if device.startswith("cuda") else (1, 1)
    return choose(configured, at_start, environ, host, visible)


def for_coldstart(device: str, at_start: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """What a cold-start child on ``device`` gets on top of the environment it starts from: on a GPU
    host whose CPUs are shared among its GPUs (:func:`gpu_share`), ``OMP_NUM_THREADS`` = this job's
    share, so that a CI job on each GPU does not start children of every CPU's threads at once.
    Nothing where the variable was set when the run was configured (``at_start``, whatever its value:
    the run's choice; one a library set since, as ``import ultralytics`` sets 1, does not count), a
    pytest-xdist worker's CPUs bound it (``environ``), the job has every GPU, or on a CPU."""
    if not device.startswith("cuda") or at_start is not None or environ.get(SHARE_VAR):
        return {}
    share = _job_share(*gpu_counts())
    return {} if share is None else {VARIABLE: str(share)}
