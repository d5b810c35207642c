"""Profile a step function with torch.profiler, one ``kg/<module path>`` range per module forward.

Forward pre/post hooks open and close ``record_function`` ranges named by ``named_modules()``;
in eager mode this is what lets every kernel be traced back to its module (``with_modules`` does
not cover eager launches). The result is a Chrome trace that Perfetto and TensorBoard load.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgate.measure.naming import range_name
from kernelgate.measure.trace import RANGE_PREFIX


class ProfilerError(RuntimeError):
    """torch.profiler itself failed (not the model): nothing was measured."""


class _StepFailed(Exception):
    """Carries an exception of the step (the model) through the profiler, unchanged."""


@dataclass(frozen=True)
class Schedule:
    """torch.profiler's ``schedule(wait, warmup, active)``: ``active`` steps are recorded."""

    wait: int = 1
    warmup: int = 2
    active: int = 20

    @property
    def steps(self) -> int:
        return self.wait + self.warmup + self.active


def _names_by_module(model: Any) -> dict[int, list[str]]:
    """Every name of every submodule: a module shared between parents has several names."""
    names: dict[int, list[str]] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        if name:
            names.setdefault(id(module), []).append(name)
    return names


def pick_name(names: list[str], caller: str | None) -> str:
    """The name of a (possibly shared) module as called from inside module ``caller``."""
    if len(names) == 1 or caller is None:
        return names[0]
    for name in names:
        if name.rpartition(".")[0] == caller:
            return name
    return next((n for n in names if n.startswith(caller + ".")), names[0])


@contextmanager
def module_ranges(model: Any) -> Iterator[None]:
    """Open a ``kg/<name>`` profiler range around the forward of every named submodule.

    A module shared by several parents (Ultralytics' ``Conv.default_act`` is one ``SiLU`` for the
    whole model) is named after the parent it is called from, not after its first owner.
    """
    import torch

    open_ranges: list[tuple[str, Any]] = []
    handles = []
    names = _names_by_module(model)

    def enter(module: Any, args: Any) -> None:
        caller = open_ranges[-1][0] if open_ranges else None
        name = pick_name(names[id(module)], caller)
        rf = torch.autograd.profiler.record_function(RANGE_PREFIX + range_name(name))
        rf.__enter__()  # type: ignore[no-untyped-call]
        open_ranges.append((name, rf))

    def leave(module: Any, args: Any, output: Any) -> None:
        if open_ranges:
            open_ranges.pop()[1].__exit__(None, None, None)

    for _, module in model.named_modules():
        if module is model:
            continue
        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave, always_call=True))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        while open_ranges:
            open_ranges.pop()[1].__exit__(None, None, None)


def run(
    step: Callable[[], None], model: Any | None, *, gpu: bool, schedule: Schedule, trace_path: Path
) -> Path:
    """Run ``step`` under the profiler for ``schedule.steps`` steps; write the trace to ``trace_path``.

    ``model``'s submodules get ``kg/`` ranges; ``None`` where no Python forward runs in the step
    (a CUDA-graph replay) or hooks would change what runs (a compiled model).
    """
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    trace_path.parent.mkdir(parents=True, exist_ok=True)
    trace_path.unlink(missing_ok=True)  # never read a stale trace of an earlier run

    def export(prof: Any) -> None:
        prof.export_chrome_trace(str(trace_path))

    def guarded() -> None:
        try:
            step()
        except Exception as exc:
            raise _StepFailed() from exc

    step_error: BaseException | None = None
    try:
        ranges = module_ranges(model) if model is not None else contextlib.nullcontext()
        with warnings.catch_warnings(), ranges:
            # torch warns that a one-cycle schedule drops earlier cycles' events: that is what we want.
            warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
            _profile(guarded, activities, schedule, export)
    except _StepFailed as failed:
        step_error = failed.__cause__
    except Exception as exc:
        step_error = _step_failure(exc)  # the profiler failed while stopping after the model did
        if step_error is None:
            raise ProfilerError(
                f"torch.profiler failed, so nothing was measured: {type(exc).__name__}: {exc}. "
                "Check that CUPTI can profile here (see docs/faults.md: 'profiler unavailable')."
            ) from exc
    if step_error is not None:
        raise step_error  # the model's own error (CUDA error, OOM), as it was raised
    if not trace_path.is_file():
        raise ProfilerError(f"torch.profiler wrote no trace to {trace_path}; nothing was measured.")
    return trace_path


def _step_failure(exc: BaseException) -> BaseException | None:
    seen = exc.__context__
    while seen is not None:
        if isinstance(seen, _StepFailed):
            return seen.__cause__
        seen = seen.__context__
    return None


@contextmanager
def _no_inductor_import() -> Iterator[None]:
    """torch.profiler reads one Inductor setting (``triton.cudagraphs``) at the start of each trace, behind
    ``hasattr(torch, "_inductor")``, which imports all of Inductor and Dynamo where nothing has, a fifth of
    the CPU time of a process measuring an eager model on the CPU (docs/measurements.md). Where Inductor was
    never imported nothing ran compiled by it, so its CUDA-graph setting cannot apply: while the profiler
    runs, its ``hasattr`` sees Inductor only where it is imported. Where ``TORCHINDUCTOR_CUDAGRAPHS`` is set
    (the setting's default comes from it) the profiler reads it unchanged."""
    import builtins
    import os
    import sys

    if "TORCHINDUCTOR_CUDAGRAPHS" in os.environ:
        yield
        return

    from torch.profiler import profiler as module

    def imported_only(obj: object, name: str) -> bool:
        if name == "_inductor" and obj is sys.modules.get("torch"):
            return "torch._inductor" in sys.modules
        return builtins.hasattr(obj, name)

    names = vars(module)
    had = names.get("hasattr")
    names["hasattr"] = imported_only  # the module's global, found before the builtin
    try:
        yield
    finally:
        if had is None:
            names.pop("hasattr", None)
        else:
            names["hasattr"] = had


def _profile(
    step: Callable[[], None], activities: list[Any], schedule: Schedule, export: Callable[[Any], None]
) -> None:
    from torch.profiler import profile
    from torch.profiler import schedule as make_schedule

    with (
        _no_inductor_import(),
        profile(
            activities=activities,
            schedule=make_schedule(
                wait=schedule.wait, warmup=schedule.warmup, active=schedule.active, repeat=1
            ),
            on_trace_ready=export,
        ) as prof,
    ):
        for _ in range(schedule.steps):
            step()
            prof.step()
