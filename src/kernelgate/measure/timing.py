"""Wall-clock rounds of a benchmark, through pytest-benchmark, also where pytest-xdist switched it off.

pytest-benchmark disables itself in a pytest-xdist run: its fixture then runs the target once and
times nothing (``benchmark.stats`` stays None). kernelgate gives every worker a GPU of its own, so
the reason for that (parallel benchmarks disturbing each other) does not hold here; the gate then
times the same rounds itself and keeps them in pytest-benchmark's own record
(:class:`pytest_benchmark.stats.Metadata`, whose :class:`~pytest_benchmark.stats.Stats` computes the
statistics), so the baseline file reads the same as from a run without xdist.

Hand-written: the loop below (warm-up rounds, then ``rounds`` timed calls with ``time.perf_counter``,
the garbage collector off where ``--benchmark-disable-gc`` asks): pytest-benchmark's runner sits
behind its disabled fixture and has no public entry point.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest


def disabled_by_xdist(benchmark: Any, config: pytest.Config) -> bool:
    """pytest-benchmark's fixture is off because this is a pytest-xdist worker, not because it was
    asked to be (``--benchmark-disable`` keeps it off; a confirm run started by a worker is no worker)."""
    if not getattr(benchmark, "disabled", False) or not hasattr(config, "workerinput"):
        return False
    asked = config.getoption("benchmark_disable", False) and not config.getoption("benchmark_enable", False)
    return not asked


def _options(config: pytest.Config) -> dict[str, Any]:
    """pytest-benchmark's recorded options of a ``pedantic`` run, as its fixture records them
    (``timer`` is the timer function itself: the record writes its name)."""
    from pytest_benchmark.utils import load_timer

    option = config.getoption
    wrapped = load_timer(str(option("benchmark_timer", "time.perf_counter")))  # type: ignore[no-untyped-call]
    timer = getattr(wrapped, "target", None)
    options: dict[str, Any] = {
        "disable_gc": bool(option("benchmark_disable_gc", False)),
        "timer": timer if callable(timer) else time.perf_counter,
        "min_rounds": option("benchmark_min_rounds", 5),
        "max_time": float(option("benchmark_max_time", 1.0)),
        "min_time": float(option("benchmark_min_time", 5e-06)),
    }
    missing = object()
    precision, confidence = option("benchmark_precision", missing), option("benchmark_confidence", missing)
    if precision is not missing and confidence is not missing:  # options of newer pytest-benchmark
        both = bool(precision and confidence)
        options["precision"] = precision if both else None
        options["confidence"] = confidence if both else None
    options["warmup"] = option("benchmark_warmup", False) and option("benchmark_warmup_iterations", 0)
    return options


def pedantic(
    benchmark: Any,
    config: pytest.Config,
    target: Callable[[], None],
    rounds: int,
    warmup_rounds: int,
    setup: Callable[[], None] | None = None,
) -> Any:
    """``benchmark.pedantic(target, rounds, warmup_rounds, iterations=1, setup=setup)`` and its record
    (``benchmark.stats``); in a pytest-xdist worker, where the disabled fixture only calls ``target``
    once (that call counts as a warm-up round), the same rounds timed here into the same kind of
    record. None where pytest-benchmark was asked not to time (``--benchmark-disable``). ``setup``
    runs before each round, untimed."""
    benchmark.pedantic(target, rounds=rounds, warmup_rounds=warmup_rounds, iterations=1, setup=setup)
    if not disabled_by_xdist(benchmark, config):
        return getattr(benchmark, "stats", None)
    from pytest_benchmark.stats import Metadata

    options = _options(config)
    timer: Callable[[], float] = options["timer"]
    record = Metadata(benchmark, iterations=1, options=options)  # type: ignore[no-untyped-call]
    for _ in range(warmup_rounds - 1):
        target()
    collecting = gc.isenabled()
    if options["disable_gc"]:
        gc.disable()
    try:
        for _ in range(rounds):
            if setup is not None:
                setup()
            start = timer()
            target()
            record.update(timer() - start)  # type: ignore[no-untyped-call]
    finally:
        if collecting:
            gc.enable()
    return record


def timed_elsewhere(benchmark: Any, seconds: Sequence[float]) -> Any:
    """pytest-benchmark's record of rounds another process timed (a cold start's runs that the
    same-host judge's head process measured at the test's own time: each a fresh process, as the
    fixture would have timed it), so that pytest-benchmark's table, JSON and ``--benchmark-compare``
    list the test as they list any. None where pytest-benchmark was asked not to time, or where its
    fixture has no ``_make_stats``: pytest-benchmark has no public entry point for rounds it did not
    time, so this one reads the fixture's own (pytest-benchmark 4 and 5), and says the fixture was
    used, as ``pedantic`` would have."""
    if getattr(benchmark, "disabled", False) or not seconds:
        return None
    make = getattr(benchmark, "_make_stats", None)
    if make is None:
        return None
    record = make(1)
    for value in seconds:
        record.update(value)
    benchmark._mode = "benchmark.pedantic(...)"  # rounds were given: pytest-benchmark warns of none else
    return record
