"""The doctor's rule about ``torch.compile``'s caches: where Inductor's and Triton's caches are, what
they hold, whether they can be written and whether they outlive a CI job; what to do when every job
would start with empty ones (and pay the whole compile). A pure function of
:class:`~kernelgate.machine.facts.Facts`.
"""

from __future__ import annotations

from kernelgate.machine.compile_cache import CACHE_OFF, INDUCTOR_VAR, TRITON_VAR, CacheFolder
from kernelgate.machine.facts import Facts
from kernelgate.machine.finding import Finding, Level

KEEP_FIX = (
    f"keep both between jobs: point {INDUCTOR_VAR} and {TRITON_VAR} at a disk the runner keeps, or restore "
    "and save them with the CI's cache (e.g. actions/cache, keyed on the GPU and the torch and triton "
    "versions), or save torch.compiler.save_cache_artifacts() after the first compile and load it with "
    "torch.compiler.load_cache_artifacts() before it (one file)"
)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _describe(c: CacheFolder) -> str:
    where = f"{c.variable}={c.path}" if c.from_env else f"{c.path} (default; {c.variable} unset)"
    kernels = f", {c.kernels} compiled kernel(s)" if c.kernels is not None else ""
    return f"{c.name} cache {where}: {_size(c.bytes)}{kernels}"


def check_compile_caches(f: Facts) -> list[Finding]:
    if not f.compile_caches:
        return []
    found: list[Finding] = []
    off = [f"{k}={v}" for k, v in CACHE_OFF.items() if f.variables.get(k) == v]
    if off:
        found.append(
            Finding(
                Level.WARN,
                "compile-cache",
                f"{', '.join(off)}: torch.compile keeps nothing between processes, so every start compiles "
                "every graph and kernel again (the cold compile of the cold-start gate's `empty` scenario)",
                f"unset {' '.join(v.split('=')[0] for v in off)}",
            )
        )
    for cache in f.compile_caches:
        if cache.writable:
            found.append(Finding(Level.OK, "compile-cache", f"{_describe(cache)}; {cache.kept_why}"))
        else:
            found.append(
                Finding(
                    Level.WARN,
                    "compile-cache",
                    f"{_describe(cache)}; not writable: nothing compiled is kept",
                    f"point {cache.variable} at a writable folder on a kept disk",
                )
            )
    gone = [c.name for c in f.compile_caches if c.kept is False]
    unsure = [c.name for c in f.compile_caches if c.kept is None]
    where = f"on {f.ci}" if f.ci else "here"
    if gone:
        found.append(
            Finding(
                Level.WARN if f.ci else Level.INFO,
                "compile-cache",
                f"the {' and '.join(gone)} cache(s) are not kept between jobs {where}: each job starts with "
                "empty compile caches and torch.compile pays its whole compile at every start",
                KEEP_FIX,
            )
        )
    elif unsure:
        found.append(
            Finding(
                Level.INFO,
                "compile-cache",
                f"the {' and '.join(unsure)} cache(s) are kept between jobs only where jobs share this "
                "machine and its temporary folder",
                "if each CI job starts a fresh container or machine: " + KEEP_FIX,
            )
        )
    return found
