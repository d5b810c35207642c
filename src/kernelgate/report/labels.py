"""How names and numbers are shown in the published reports (Markdown, HTML, JSON hints); durations
through :mod:`kernelgate.units`."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from kernelgate.units import DASH, device_time, duration, limit
from kernelgate.verdict.compare import Delta
from kernelgate.verdict.diff import BenchmarkDiff

__all__ = [
    "DASH",
    "calls",
    "device_time",
    "p_value",
    "pct",
    "signed_us",
    "threshold",
    "time_name",
    "us",
    "verdict",
]


def us(value: float | None) -> str:
    """A duration (given in µs) in µs, ms or s by its magnitude (:func:`kernelgate.units.duration`)."""
    return duration(value)


def signed_us(value: float | None) -> str:
    return duration(value, signed=True)


def pct(value: float | None) -> str:
    return DASH if value is None else f"{value:+.1f} %"


def time_name(diffs: Sequence[BenchmarkDiff]) -> str:
    """``GPU time``, or ``CPU time`` where every benchmark ran on a CPU
    (:func:`kernelgate.units.device_time`)."""
    names = {device_time(d.arch) for d in diffs}
    return names.pop() if len(names) == 1 else device_time("")


def calls(value: float | None) -> str:
    return DASH if value is None else f"{value:g}"


def p_value(delta: Delta) -> str:
    """The significance of a delta where the verdict provides one (``p_value``), else a dash."""
    value: Any = getattr(delta, "p_value", None)
    if value is None:
        return DASH
    value = float(value)
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def verdict(value: enum.Enum) -> str:
    """Any verdict, also one this module does not know, by its value."""
    return str(value.value)


def threshold(delta: Delta) -> str:
    return f"{100 * delta.threshold.rel:g} % / {limit(delta.threshold.floor_us)}"
