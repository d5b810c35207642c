"""pytest-xdist: a GPU per worker, and what the workers send the controller, which writes.

Pinning: the controller checks that every worker can have a GPU of its own (:func:`spread_over_gpus`)
and hands them out as xdist sets up each worker (:func:`hand_out`, through ``workerinput``); the
worker pins itself to its GPU in its ``pytest_configure``, before torch initialises CUDA. Which GPU
goes to which worker is :mod:`kernelgate.machine.pinning` (pure).

Results: a worker writes no results file, baseline or report. At the end of its session it puts
what it measured and decided into ``config.workeroutput`` (:func:`send`); the controller takes each
worker's share as the worker goes down (``pytest_testnodedown``: :func:`node_down`) and, once all
are down, puts the lists back in the order of collection (:func:`settle`). The controller then
writes the results file, the baseline (``--kernelgate-save``) and the report folder, and prints the
summary, exactly as a run without xdist does; it never imports torch.

What travels is JSON text (execnet carries only plain types): baseline entries as
:meth:`kernelgate.baseline.store.Entry.to_json` (the measurement as a baseline file holds it, rounded to
0.001 µs), comparisons as :meth:`kernelgate.verdict.compare.Comparison.to_json` (every verdict as the worker
decided it, confirm runs included: nothing is recomputed), and the session's lists.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernelgate.baseline.store import Entry
from kernelgate.machine import pinning
from kernelgate.verdict.compare import Comparison

if TYPE_CHECKING:
    from kernelgate.plugin.session import State

KEY = "kernelgate"  # in config.workeroutput
GPU_KEY = "kernelgate_gpu"  # in a worker's workerinput: the CUDA_VISIBLE_DEVICES entry it runs on
CPUS_KEY = "kernelgate_cpus"  # ... and the CPUs it runs on (pinning.cpu_share)
THREADS_VAR = "OMP_NUM_THREADS"
SCHEMA_VERSION = 1
LISTS = ("missing", "unreliable", "skipped", "notes", "errors", "failed")
_WORKER_ID = re.compile(r"\bgw\d+\b")


def send(state: State, config: pytest.Config | None = None) -> str:
    """What this worker measured and decided, for the controller: the suspects' tests with their
    reports held (kernelgate.plugin.outcome), which the controller logs once it has judged them."""
    from kernelgate.plugin import outcome

    fullnames = {e.fullname for e in state.measured}
    baselines = {
        str(path): [e.to_json() for name, e in entries.items() if name in fullnames]
        for path, entries in state.baselines.items()
    }
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "gate_tests": list(state.gate_tests),
        "measured": [e.to_json() for e in state.measured],
        "comparisons": [c.to_json() for c in state.comparisons],
        "suspects": [s.to_json() for s in state.suspects],
        "held": outcome.to_wire(config, state.take_held()) if config is not None else [],
        "baselines": {path: entries for path, entries in baselines.items() if entries},
    }
    document.update({name: list(getattr(state, name)) for name in LISTS})
    return json.dumps(document, default=str)


def receive(
    state: State,
    text: str | None,
    worker: str,
    error: object | None = None,
    config: pytest.Config | None = None,
) -> None:
    """Add one worker's share to the controller's state; a worker that went down without sending
    one (it crashed) is named in an error, since what it measured is lost."""
    if text is None:
        if error is not None:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            cause = _WORKER_ID.sub("gwN", lines[-1] if lines else "no reason given")
            message = (
                f"kernelgate: pytest-xdist worker(s) went down before sending their measurements ({cause}): "
                "what they measured is missing from the results and the report. Fix the cause above and "
                "rerun; to see a crash in full, run without -n."
            )
            state.add_error(message)  # workers that xdist restarts fail alike: said once
        return
    data = json.loads(text)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"worker {worker} sent kernelgate data of schema {data.get('schema_version')!r}, the controller "
            f"reads {SCHEMA_VERSION}: the worker and the controller run different kernelgate versions"
        )
    from kernelgate.plugin import outcome
    from kernelgate.plugin.samehost import Suspect

    held = outcome.from_wire(config, data.get("held") or ()) if config is not None else []
    state.absorb(
        data["gate_tests"],
        [Entry.from_json(e) for e in data["measured"]],
        [Comparison.from_json(c) for c in data["comparisons"]],
        {Path(p): {e.fullname: e for e in map(Entry.from_json, es)} for p, es in data["baselines"].items()},
        {name: data[name] for name in LISTS},
        [Suspect.from_json(s) for s in data.get("suspects") or ()],
        held,
    )


def settle(state: State, workers: int = 0, slots: pinning.Slots | None = None) -> None:
    """Put the lists received from the workers in the order pytest collected the tests (a run
    without xdist has them in that order; ties keep the order of arrival), and say where they ran."""
    state.order_as_collected()
    if workers and state.measured:
        where = f": {slots.summary()}" if slots is not None and slots.given else ""
        state.note(
            f"kernelgate: {workers} pytest-xdist workers{where}; the gate timed its rounds itself "
            "(pytest-benchmark switches its own timing off under xdist)"
        )
        if state.busy:
            spread = ", ".join(f"{w} {n} tests in {s:.1f} s" for w, (n, s) in sorted(state.busy.items()))
            state.note(f"kernelgate: time in tests per worker: {spread}")


# --- pinning: a GPU per worker --------------------------------------------------------------------


def xdist_workers(config: pytest.Config) -> int:
    """How many workers pytest-xdist starts from this (controller) process; 0 without xdist."""
    if config.getoption("dist", "no") == "no":
        return 0
    specs = config.getoption("tx", None) or []
    return sum(int(s.partition("*")[0]) if s.partition("*")[0].isdigit() else 1 for s in specs)


def spread_over_gpus(config: pytest.Config) -> pinning.Slots | None:
    """In a worker: pin it to the GPU the controller gave it. In the controller: check that every
    worker can have a GPU of its own and return the table to hand them out from (None without GPUs:
    the workers then run on the CPU, or fail there as ``--kernelgate-device=cuda`` says)."""
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        gpu = worker.get(GPU_KEY)
        if gpu is not None:
            check_cuda_untouched(str(worker.get("workerid")), gpu)
            pinning.pin(os.environ, gpu)
            share_cpus(worker.get(CPUS_KEY) or [])
        return None
    workers = xdist_workers(config)
    if workers == 0:
        return None
    from kernelgate.machine.visible import visible_gpus

    gpus = visible_gpus()
    if not gpus:
        return None
    kinds = sorted({g.key for g in gpus})
    if workers > 1 and len(kinds) > 1:
        listed = ", ".join(f"{g.entry} {g.key}" for g in gpus)
        raise pytest.UsageError(
            f"kernelgate: the visible GPUs are of {len(kinds)} kinds ({listed}); pytest-xdist would run "
            "each benchmark on either kind at random, against the baseline of that kind. Run on GPUs "
            "of one kind, e.g. CUDA_VISIBLE_DEVICES="
            f"{','.join(g.entry for g in gpus if g.key == gpus[0].key)} pytest benchmarks -n auto"
        )
    problem = pinning.too_many(workers, [g.entry for g in gpus])
    if problem:
        raise pytest.UsageError(problem)
    entries = tuple(g.entry for g in gpus)
    near = {g.entry: g.near_cpus for g in gpus}
    return pinning.Slots(entries, cpus=pinning.cpu_shares(host_cores(), entries, near))


def host_cores(root: Path = Path("/sys/devices/system/cpu")) -> list[tuple[int, ...]]:
    """The physical cores this process may run on, each with its hyperthreads (Linux sysfs; without
    it every CPU counts as a core of its own)."""
    siblings: dict[int, tuple[int, ...]] = {}
    cpus = sorted(os.sched_getaffinity(0))
    for cpu in cpus:
        try:
            text = (root / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text()
        except OSError:
            continue
        siblings[cpu] = pinning.parse_cpu_list(text)
    return pinning.cores(cpus, siblings)


def check_cuda_untouched(worker: str, gpu: str) -> None:
    """A worker can pin itself only while CUDA is not initialised: CUDA reads the variable once."""
    cuda = getattr(sys.modules.get("torch"), "cuda", None)
    if cuda is not None and cuda.is_initialized() and os.environ.get(pinning.VISIBLE_VAR) != gpu:
        raise pytest.UsageError(
            f"kernelgate: pytest-xdist worker {worker} cannot pin itself to GPU {gpu}: CUDA was "
            "initialised before kernelgate's pytest_configure (a conftest.py or plugin that uses CUDA "
            f"at import time), with CUDA_VISIBLE_DEVICES={os.environ.get(pinning.VISIBLE_VAR, '(unset)')}. "
            "Move that CUDA call into a fixture or test, or run without -n."
        )


def hand_out(slots: pinning.Slots, node: Any) -> None:
    """Controller, before worker ``node`` starts: give it a GPU no live worker holds, and its share
    of the CPUs."""
    try:
        gpu = slots.claim(str(node.workerinput["workerid"]))
    except pinning.PinningError as exc:
        raise pytest.UsageError(str(exc)) from exc
    node.workerinput[GPU_KEY] = gpu
    node.workerinput[CPUS_KEY] = list(slots.cpus.get(gpu, ()))


def share_cpus(cpus: list[int]) -> None:
    """Worker, before torch is imported: run on ``cpus`` only, with as many OpenMP threads (unless
    the user set OMP_NUM_THREADS); its child processes (cold starts, confirm runs) inherit both."""
    if not cpus:
        return
    os.sched_setaffinity(0, cpus)
    os.environ.setdefault(THREADS_VAR, str(len(cpus)))
    os.environ[pinning.SHARE_VAR] = pinning.cpu_list(cpus)


def node_down(
    node: Any, error: object | None, state: State | None, slots: pinning.Slots | None, received: set[str]
) -> None:
    """Controller, worker ``node`` is done: free its GPU and take its share (once: xdist may report
    a worker down twice)."""
    worker = str(node.workerinput["workerid"])
    if slots is not None:
        slots.release(worker)
    if state is None or worker in received:
        return
    text = (getattr(node, "workeroutput", None) or {}).get(KEY)
    receive(state, text, worker, error, node.config)
    if text is not None or error is not None:
        received.add(worker)
