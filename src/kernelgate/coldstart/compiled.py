"""The compile child's side of a cold start under ``torch.compile``: what the caches held before the
first call, and what the call compiled, loaded or missed.

Recorded per run as ``details`` (not gated): Inductor's and AOTAutograd's counters
(``inductor.fxgraph_cache_hit``/``_miss``/``_bypass``, ``aot_autograd.autograd_cache_hit``/``_miss``,
``inductor.async_compile_cache_hit``, ...), the Triton cache's compiled kernels before and after the
call (``triton.kernels_compiled``: the kernels this process compiled with ptxas), and
Dynamo's time per compile step (``time.<step>`` in seconds, from ``torch._dynamo.utils.compile_times``).

Imported by the child after its import phases; imports torch only inside functions.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from kernelgate.machine.compile_cache import (
    INDUCTOR_VAR,
    LOAD_ARTIFACTS,
    SAVE_ARTIFACTS,
    TRITON_VAR,
    triton_kernels,
)
from kernelgate.machine.jit_cache import folder_bytes

COUNTER_GROUPS = ("inductor", "aot_autograd", "stats")


def _folder(variable: str) -> Path | None:
    value = os.environ.get(variable)
    return Path(value) if value else None


def cache_state() -> dict[str, float]:
    """The Triton kernels and the bytes of both caches now (where their folders are set)."""
    state: dict[str, float] = {}
    triton = _folder(TRITON_VAR)
    if triton is not None:
        state["triton.kernels"] = float(triton_kernels(triton))
        state["triton.cache_bytes"] = float(folder_bytes(triton))
    inductor = _folder(INDUCTOR_VAR)
    if inductor is not None:
        state["inductor.cache_bytes"] = float(folder_bytes(inductor))
    return state


def counters() -> dict[str, float]:
    """Dynamo's counters of the groups that count cache hits and misses, as ``group.name``."""
    from torch._dynamo.utils import counters as found

    out: dict[str, float] = {}
    for group in COUNTER_GROUPS:
        for name, value in found.get(group, {}).items():
            if isinstance(value, int | float):
                out[f"{group}.{name}"] = float(value)
    out["graph_breaks"] = float(sum(found.get("graph_break", {}).values()))
    return out


def compile_times() -> dict[str, float]:
    """Seconds per Dynamo/Inductor step (every function ``dynamo_timed`` wraps), summed over graphs."""
    try:
        from torch._dynamo.utils import compile_times as times

        headers, values = times(repr="csv", aggregate=True)
        return {f"time.{h}": float(str(v)) for h, v in zip(headers, values, strict=False)}
    except Exception:  # a torch whose compile_times reads otherwise: the phases still stand
        return {}


def details(before: dict[str, float]) -> dict[str, float]:
    """Everything above, after the compiling call; ``before`` is :func:`cache_state` before it."""
    after = cache_state()
    found = counters() | compile_times()
    if "triton.kernels" in after:
        had = before.get("triton.kernels", 0.0)
        found["triton.kernels_before"] = had
        found["triton.kernels_after"] = after["triton.kernels"]
        found["triton.kernels_compiled"] = max(0.0, after["triton.kernels"] - had)
    for key in ("triton.cache_bytes", "inductor.cache_bytes"):
        if key in after:
            found[key] = after[key]
    return found


def compile_model(torch: Any, net: Any, options: dict[str, Any]) -> tuple[Any, dict[str, float]]:
    """``torch.compile(net)`` as the kernel benchmarks do (inductor, default mode), with ``options``;
    and ``time.import_compiler``: the seconds of importing Dynamo and Inductor, which every process
    pays before its first compile, cache or not."""
    start = time.perf_counter()
    import torch._dynamo
    import torch._inductor.compile_fx

    imported = {"time.import_compiler": time.perf_counter() - start}
    return (torch.compile(net, options=options) if options else torch.compile(net)), imported


def load_artifacts() -> dict[str, float]:
    """Load a mega-cache file into the (empty) caches, where ``LOAD_ARTIFACTS`` names one."""
    path = _folder(LOAD_ARTIFACTS)
    if path is None:
        return {}
    import torch

    info = torch.compiler.load_cache_artifacts(path.read_bytes())
    return {"artifacts.loaded_bytes": float(path.stat().st_size), "artifacts.loaded": float(info is not None)}


def save_artifacts() -> dict[str, float]:
    """Save this process's compile artifacts (mega-cache) where ``SAVE_ARTIFACTS`` names a file. It runs
    after the timed phases: a failure to save is reported (stderr, ``artifacts.saved_bytes = -1``), and
    the run's phases stand."""
    path = _folder(SAVE_ARTIFACTS)
    if path is None:
        return {}
    import torch

    try:
        saved = torch.compiler.save_cache_artifacts()
    except Exception as exc:  # an experimental API (with TORCH_CACHING_PRECOMPILE=1): say so, keep the run
        print(
            f"kernelgate: torch.compiler.save_cache_artifacts() failed: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return {"artifacts.saved_bytes": -1.0}
    if saved is None:
        return {"artifacts.saved_bytes": 0.0}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(saved[0])
    return {"artifacts.saved_bytes": float(len(saved[0]))}
