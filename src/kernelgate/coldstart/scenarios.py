"""The cold-start scenarios: what the caches hold when a child starts, and what it is forced to do.

Every scenario gives each child its own cache folders (the CUDA JIT cache ``CUDA_CACHE_PATH`` and, for
``torch.compile``, Inductor's ``TORCHINDUCTOR_CACHE_DIR`` and Triton's ``TRITON_CACHE_DIR``): fresh
ones in every run (``empty``), or ones that the untimed priming run filled (``warm``). ``changed``
starts every timed run from a copy of the primed caches and compiles with one option changed, as a
pull request that changes a compile option finds a CI cache filled by the main branch. ``small-cache``
keeps the primed folder but sets ``CUDA_CACHE_MAXSIZE`` below what the JIT compiles, so nothing JIT-
compiled can be kept. The forced PTX JIT makes the driver ignore native code (SASS) and JIT-compile
every kernel from PTX: the situation of a GPU newer than the framework's build.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# CUDA_CACHE_MAXSIZE of the small-cache scenario: 64 KiB, far below what the PTX probe's kernels
# compile to (ptxas 13.0 for sm_90: a 393 KiB cubin for 4 kernels; tests/test_ptxprobe.py checks 8)
SMALL_CACHE_BYTES = 65536
# The option the `changed` scenario flips: it changes the generated wrapper code (size and stride
# asserts), so it is part of Inductor's FX-graph cache key, while the Triton kernels stay the same.
CHANGED_OPTIONS: Mapping[str, Any] = {"size_asserts": False}


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    force_ptx: bool = False
    warm_cache: bool = False  # one priming run fills the cache folder; the timed runs reuse it
    copy_primed: bool = False  # each timed run starts from its own copy of the primed folder
    changed_options: str = ""  # JSON: compile options the timed runs (not the priming run) change
    env: tuple[tuple[str, str], ...] = ()  # variables the scenario sets for every child
    compile_only: bool = False  # only meaningful under torch.compile (mode = compile)

    @property
    def options(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.changed_options) if self.changed_options else {}
        return found


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("empty", "empty JIT and compile caches in every run, as on a fresh runner"),
        Scenario(
            "warm", "JIT and compile caches filled by an earlier run, as on a reused runner", warm_cache=True
        ),
        Scenario(
            "changed",
            "compile caches filled by an earlier run, then one compile option changed "
            f"({', '.join(f'{k}={v}' for k, v in CHANGED_OPTIONS.items())}): what a changed option "
            "leaves of a warm cache",
            warm_cache=True,
            copy_primed=True,
            changed_options=json.dumps(dict(CHANGED_OPTIONS), sort_keys=True),
            compile_only=True,
        ),
        Scenario(
            "small-cache",
            f"JIT cache folder kept, but CUDA_CACHE_MAXSIZE={SMALL_CACHE_BYTES}: too small to keep what "
            "the JIT compiles, so it compiles again in every run",
            warm_cache=True,
            env=(("CUDA_CACHE_MAXSIZE", str(SMALL_CACHE_BYTES)),),
        ),
        Scenario(
            "ptx-jit",
            "CUDA_FORCE_PTX_JIT=1, empty JIT cache: every kernel JIT-compiled from PTX in every run",
            force_ptx=True,
        ),
        Scenario(
            "ptx-jit-warm",
            "CUDA_FORCE_PTX_JIT=1, JIT cache filled by an earlier run",
            force_ptx=True,
            warm_cache=True,
        ),
    )
}


# A run's JIT cache folder of at most this size holds no JIT-compiled kernel: the driver's index alone
# is about 4 KB where torch's kernels all have native code for the GPU (docs/verdict.md); each kernel
# the driver compiles adds its cubin, and the PTX probe's 4 kernels compile to 393 KiB
NOTHING_COMPILED_BYTES = 16 * 1024


def cold_twin(scenario: Scenario) -> Scenario | None:
    """The scenario whose children differ from ``scenario``'s only in starting with an empty JIT cache:
    ``empty`` for ``warm``, ``ptx-jit`` for ``ptx-jit-warm``. None for a scenario that starts empty, or
    that changes more than the cache's content (``small-cache``'s variable, ``changed``'s options)."""
    if not scenario.warm_cache or scenario.copy_primed or scenario.changed_options:
        return None
    same = (scenario.force_ptx, scenario.env, scenario.compile_only)
    return next(
        (s for s in SCENARIOS.values() if not s.warm_cache and (s.force_ptx, s.env, s.compile_only) == same),
        None,
    )


def nothing_compiled(cache_bytes: Sequence[int]) -> int | None:
    """The largest JIT cache that runs left behind (``cache_bytes``, one a run), where none holds a
    JIT-compiled kernel (:data:`NOTHING_COMPILED_BYTES`); None where one does, or there are no runs."""
    if not cache_bytes or max(cache_bytes) > NOTHING_COMPILED_BYTES:
        return None
    return max(cache_bytes)
