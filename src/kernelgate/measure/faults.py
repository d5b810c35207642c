"""A benchmark that raised (CUDA error, out of memory, a bug in the model): fail it alone, with its
cause, and keep the session able to run the others.

- Out of GPU memory: the exception is the cause; the cached blocks of the CUDA allocator are
  released so the next benchmark starts with free memory.
- A sticky CUDA error (illegal address, device-side assert) leaves the process's CUDA context
  unusable: the session is marked, and every later GPU benchmark fails at once, naming the first
  failure, instead of failing with a confusing error of its own.
- Anything else: the exception as it was, with a note saying which benchmark raised it.
"""

from __future__ import annotations

import gc
from typing import Any

NOTE = "kernelgate:"


def _noted(exc: BaseException) -> bool:
    return any(str(note).startswith(NOTE) for note in getattr(exc, "__notes__", ()))


def is_out_of_memory(torch: Any, exc: BaseException) -> bool:
    kinds = tuple(
        k
        for k in (getattr(torch, "OutOfMemoryError", None), getattr(torch.cuda, "OutOfMemoryError", None))
        if k
    )
    return bool(kinds) and isinstance(exc, kinds)


def cuda_context_error(torch: Any) -> str | None:
    """None if the CUDA context still works (or was never used), else the error it now raises."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    try:
        torch.cuda.synchronize()
        torch.empty(1, device="cuda").add_(1)
        torch.cuda.synchronize()
    except Exception as probe:
        return f"{type(probe).__name__}: {str(probe).splitlines()[0] if str(probe) else ''}"
    return None


def note(torch: Any, exc: BaseException, benchmark: str) -> str | None:
    """Add a note to ``exc`` saying what it means for the run; return the broken-context reason
    if the CUDA context is now unusable (the caller keeps it for later benchmarks)."""
    if _noted(exc):
        return None
    if is_out_of_memory(torch, exc):
        gc.collect()
        torch.cuda.empty_cache()
        exc.add_note(
            f"{NOTE} benchmark {benchmark!r} ran out of GPU memory (above); the allocator's cache was "
            "released and the other benchmarks still run."
        )
        return None
    broken = cuda_context_error(torch)
    if broken is not None:
        exc.add_note(
            f"{NOTE} benchmark {benchmark!r} left this process's CUDA context unusable ({broken}); "
            "every later GPU benchmark of this run fails too. Fix this one first, or run it alone: "
            f"pytest -k '{benchmark}'"
        )
        return (
            f"{benchmark!r} failed with {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        )
    exc.add_note(
        f"{NOTE} benchmark {benchmark!r} failed with the error above; the other benchmarks still run and "
        "their results are kept."
    )
    return None
