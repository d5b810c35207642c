"""The cold-start scenarios: an empty or a warm CUDA JIT cache, with or without ``CUDA_FORCE_PTX_JIT=1``.

The forced PTX JIT makes the driver ignore native code (SASS) and JIT-compile every kernel from PTX:
the situation of a GPU newer than the framework's build.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    force_ptx: bool = False
    warm_cache: bool = False  # one priming run fills the cache folder; the timed runs reuse it


SCENARIOS = {
    s.name: s
    for s in (
        Scenario("empty", "empty CUDA JIT cache in every run, as on a fresh runner"),
        Scenario("warm", "CUDA JIT cache filled by an earlier run, as on a reused runner", warm_cache=True),
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
