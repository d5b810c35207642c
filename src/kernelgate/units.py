"""Durations for people: one function that picks µs, ms or s by the magnitude of the value.

Every figure kernelgate keeps is in microseconds (kernel and layer times, wall times, cold-start
phases). A report that prints a cold start as ``2640389.0 µs`` or a forward as ``1173.9 µs`` makes
the reader count digits, so every renderer (terminal, Markdown, HTML, plots, the cold-start
messages, the command line, the baseline summary) formats through :func:`duration`:

- below 1000 µs: microseconds with one decimal (``0.5 µs``, ``100.4 µs``, ``999.9 µs``),
- below 1000 ms: milliseconds with four significant digits (``1.174 ms``, ``12.35 ms``, ``250.0 ms``),
- from 1 s: seconds with four significant digits (``2.640 s``, ``12.35 s``, ``1234 s``).

Four significant digits keep the resolution of the µs form where it matters (a 1 % threshold of a
1.17 ms forward is 11.7 µs: ``1.174 ms`` shows 1 µs steps). The unit follows the rounded value, so
999.96 µs reads ``1.000 ms``, never ``1000.0 µs``. :func:`limit` is for configured values (a floor,
a threshold): the shortest form, ``0.5 µs``, ``250 ms``, ``1 s``. This module is at the bottom of the
package's layers: any stage may format a duration.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

DASH = "—"
_SCALES = ((1.0, "µs"), (1e3, "ms"), (1e6, "s"))
SIGNIFICANT = 4


def _fixed(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant digits in fixed point (``1.174``, ``12.35``, ``1234``)."""
    if value == 0:
        return f"{0:.{digits - 1}f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    # rounding may carry into one more digit (9.9996 -> 10.000): one decimal fewer then
    if decimals and len(text.lstrip("-").replace(".", "").lstrip("0")) > digits:
        text = f"{value:.{decimals - 1}f}"
    return text


def _digits(value: float, unit: str, digits: int | None) -> str:
    """``value`` (≥ 0, in ``unit``) as printed: one decimal in µs, else ``digits`` significant ones."""
    if digits is None:
        return f"{value:.1f}" if unit == "µs" else _fixed(value, SIGNIFICANT)
    return _fixed(value, digits)


def duration(us: float | None, signed: bool = False, digits: int | None = None) -> str:
    """A duration given in µs, in µs, ms or s by its magnitude; ``signed`` adds ``+`` to a change;
    ``digits``: that many significant digits in every unit (default: see the module).

    ``None`` (no value) is a dash; NaN and infinities are printed as such, with their unit."""
    if us is None:
        return DASH
    if not math.isfinite(us):
        return f"{us:+} µs" if signed else f"{us} µs"
    size = abs(us)
    scale, unit = _unit_of(size, digits)
    text = _digits(size / scale, unit, digits)
    sign = "-" if us < 0 and float(text) != 0 else ("+" if signed else "")
    return f"{sign}{text} {unit}"


def _unit_of(size: float, digits: int | None) -> tuple[float, str]:
    """The scale and unit ``size`` (µs, ≥ 0) is printed in: the first whose rounded value is under
    1000, else seconds."""
    for scale, unit in _SCALES:
        if float(_digits(size / scale, unit, digits)) < 1e3 or unit == "s":
            break
    return scale, unit


def in_one_unit(values: Sequence[float]) -> tuple[list[str], str]:
    """Several durations given in µs, printed in the one unit the largest of them takes (so a list of
    a cold start's runs reads ``1.112 0.7192 s``, a layer's ``101.6 102.0 µs``) and that unit."""
    scale, unit = _unit_of(max((abs(v) for v in values if math.isfinite(v)), default=0.0), None)
    return [_digits(v / scale, unit, None) if v >= 0 else "-" + _digits(-v / scale, unit, None)
            for v in values], unit  # fmt: skip


def limit(us: float) -> str:
    """A configured duration (a floor) in its unit, as short as it is exact: ``0.5 µs``, ``250 ms``."""
    if not math.isfinite(us):
        return f"{us} µs"
    scale, unit = next(((s, u) for s, u in reversed(_SCALES) if abs(us) >= s), _SCALES[0])
    return f"{us / scale:g} {unit}"


def device_time(arch: str) -> str:
    """What the profiled figures measure on this architecture key: ``GPU time``, or ``CPU time`` on a
    CPU run (keys ``cpu-…``, where the "kernels" are the outermost CPU operators)."""
    return "CPU time" if arch.startswith("cpu-") else "GPU time"
