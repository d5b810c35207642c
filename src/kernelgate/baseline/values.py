"""The text and the numbers of a baseline file, never trusted: JSON without duplicate keys or NaN,
and samples whose written summaries (median, n, p10, p90, round medians) still agree with them."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kernelgate.baseline.errors import unusable
from kernelgate.measure.results import Dist

# Summaries are rounded to 0.001 µs when written; a hand edit moves them by far more.
SUMMARY_TOLERANCE_US = 0.01


class _Invalid(ValueError):
    """A defect inside the JSON text, before the file's path is known to the message."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # dict() in C first, the loop only to name a repeated key: a committed baseline's samples file holds
    # thousands of objects, and a loop per pair is a large part of its read (docs/measurements.md)
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Invalid(f"key {key!r} appears twice in one object (a bad merge or hand edit?)")
        seen[key] = value
    return seen


def _no_constant(name: str) -> float:
    raise _Invalid(f"{name} is not a number a baseline may hold")


def parse(path: Path, text: str) -> Any:
    """The JSON of ``text``, refusing duplicate keys and NaN / Infinity."""
    if not text.strip():
        raise unusable(path, "the file is empty")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise unusable(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    except _Invalid as exc:
        raise unusable(path, f"not a valid baseline: {exc}") from exc
    except RecursionError as exc:
        raise unusable(path, "not a valid baseline: nested too deeply") from exc


def _dists(raw: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key in ("total_us", "busy_us", "wall_us"):
        yield key, raw[key]
    for group in ("layers", "kernels"):
        items = raw[group]
        if not isinstance(items, list):
            raise TypeError(f"'{group}' is {type(items).__name__}, not a list")
        for i, item in enumerate(items):
            yield f"{group}[{i}].time_us", item["time_us"]


# The checks of every sample of a file, in the common case of a list of floats only without a Python
# loop per sample (map over builtins): a committed baseline holds about a million samples, and a
# generator expression per sample is a large part of its load (docs/measurements.md). Lists holding
# anything else take the general case, with the same checks in the same order.
def _numbers(samples: list[Any], kinds: set[type]) -> bool:
    if kinds <= {float, int}:
        return True
    return all(isinstance(s, int | float) and not isinstance(s, bool) for s in samples)


def _finite_and_not_negative(samples: list[Any], kinds: set[type]) -> bool:
    if kinds <= {float}:  # math.isfinite raises on no float (a huge int does)
        return all(map(math.isfinite, samples)) and min(samples, default=0.0) >= 0
    return all(math.isfinite(s) and s >= 0 for s in samples)


def check_summaries(raw: Mapping[str, Any]) -> None:
    """Samples are lists of finite, non-negative numbers, and the summaries written next to them
    (median, n, p10, p90) still agree with them: a hand edit of a median alone is refused."""
    for where, data in _dists(raw):
        samples = data["samples"]
        kinds = set(map(type, samples)) if isinstance(samples, list) else set()  # the samples' types, once
        if not isinstance(samples, list) or not _numbers(samples, kinds):
            raise ValueError(f"{where}.samples must be a list of numbers")
        if not _finite_and_not_negative(samples, kinds):
            raise ValueError(f"{where}.samples must be finite and 0 or more")
        dist = Dist(tuple(map(float, samples)))
        if "n" in data and data["n"] != dist.n:
            raise ValueError(f"{where}: n = {data['n']!r} but there are {dist.n} samples (edited by hand?)")
        for key, value in (
            ("median", dist.median),
            ("p10", dist.quantile(0.10)),
            ("p90", dist.quantile(0.90)),
        ):
            if key not in data:
                continue
            stored = data[key]
            if not isinstance(stored, int | float) or abs(float(stored) - value) > SUMMARY_TOLERANCE_US:
                raise ValueError(
                    f"{where}: {key} = {stored!r} but its samples give {value:.3f} "
                    "(edited by hand? Edit the samples, not the summaries, or re-record)"
                )
        if "round_medians" in data:
            _check_round_medians(where, data, dist)


def _check_round_medians(where: str, data: Mapping[str, Any], dist: Dist) -> None:
    """The median of each round, as schema 2 writes it beside the summaries, agrees with the samples."""
    stored = data["round_medians"]
    split = Dist(dist.samples, tuple(int(r) for r in data.get("rounds", ())))
    if sum(split.rounds) not in (0, dist.n):
        return  # Measurement.from_json names rounds that do not add up
    found = split.round_medians
    if (
        not isinstance(stored, list)
        or len(stored) != len(found)
        or not all(
            isinstance(v, int | float) and abs(float(v) - f) <= SUMMARY_TOLERANCE_US
            for v, f in zip(stored, found, strict=False)
        )
    ):
        shown = ", ".join(f"{m:.3f}" for m in found)
        raise ValueError(
            f"{where}: round_medians = {stored!r} but its samples give [{shown}] "
            "(edited by hand? Edit the samples, not the summaries, or re-record)"
        )
