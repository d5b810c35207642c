"""The machine-readable diff (``report.json``) for other tools: what the Markdown and HTML reports show.

Every field of a :class:`~kernelgate.verdict.compare.Delta` is written, also fields added to it later (a
p-value, say): enums by value, thresholds as ``{"rel", "floor_us"}``, and ``delta_us``,
``delta_pct`` and ``failing`` derived. ``schema_version`` changes when a field changes meaning.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Sequence
from typing import Any

from kernelgate.measure.timesplit import TimeSplit
from kernelgate.report.markdown import verdict_line
from kernelgate.report.sections import hosts
from kernelgate.verdict.compare import Delta
from kernelgate.verdict.diff import BenchmarkDiff, LayerDiff
from kernelgate.verdict.hints import Hint

SCHEMA_VERSION = 1


def _value(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, tuple | list):
        return [_value(v) for v in value]
    return value


def delta(d: Delta, failing: bool) -> dict[str, Any]:
    out = {f.name: _value(getattr(d, f.name)) for f in dataclasses.fields(d)}
    out["delta_us"] = round(d.delta_us, 3)
    out["delta_pct"] = None if d.delta_pct is None else round(d.delta_pct, 3)
    out["failing"] = failing
    return out


def _hints(hints: Sequence[Hint]) -> list[dict[str, str]]:
    return [{"kind": h.kind.value, "text": h.text} for h in hints]


def _layer(layer: LayerDiff, failures: set[Delta]) -> dict[str, Any]:
    return {
        **delta(layer.delta, layer.failing),
        "type": layer.type,
        "hints": _hints(layer.hints),
        "kernels": [delta(k, k in failures) for k in layer.kernels],
    }


def _split(split: TimeSplit | None) -> dict[str, Any] | None:
    """Wall = busy + host (medians, µs), the busy share and what bounds the forward."""
    if split is None:
        return None
    return {
        "device": split.device,
        "wall_us": _value(split.wall_us),
        "busy_us": _value(split.busy_us),
        "host_us": _value(split.host_us) if split.split else None,
        "busy_share": round(split.busy_share, 4),
        "bound": split.label,
    }


def benchmark(diff: BenchmarkDiff) -> dict[str, Any]:
    failures = set(diff.comparison.failures)
    return {
        "benchmark": diff.benchmark,
        "arch": diff.arch,
        "failed": diff.failed,
        "fail_on": sorted(v.value for v in diff.comparison.fail_on),
        "total": delta(diff.total.delta, diff.total.failing),
        "wall_us": {"baseline": _value(diff.base.wall.median), "current": _value(diff.current.wall.median)},
        "host_overhead_us": {
            "baseline": _value(diff.base.host_overhead_us),
            "current": _value(diff.current.host_overhead_us),
        },
        "time_split": {"baseline": _split(diff.base_split), "current": _split(diff.current_split)},
        "groups": [
            {
                "group": g.name,
                "baseline_us": _value(g.baseline_us),
                "current_us": _value(g.current_us),
                "delta_pct": _value(g.delta_pct),
            }
            for g in diff.groups
        ],
        "layers": [_layer(lay, failures) for lay in diff.layers],
        "origins": list(diff.comparison.origins),  # kernelgate.verdict.origin: the layers to look at first
        "failing_kernels_outside_failing_layers": [delta(k, True) for k in diff.stray_kernels],
        "hints": _hints(diff.hints),
        "environment": [{**_value(e), "changed": e.changed} for e in diff.environment],
        "history": [_value(p) | {"layers": dict(p.layers)} for p in diff.history],
        "traces": _value(diff.traces),
    }


def document(diffs: Sequence[BenchmarkDiff]) -> dict[str, Any]:
    return {
        "kernelgate_diff": {"schema_version": SCHEMA_VERSION},
        "failed": any(d.failed for d in diffs),
        "verdict": verdict_line(diffs),
        "benchmarks": [benchmark(d) for d in diffs],
        "hosts": dict(zip(("baseline", "runner"), (h.to_json() for h in hosts(diffs)), strict=True)),
    }


def render(diffs: Sequence[BenchmarkDiff]) -> str:
    return json.dumps(document(diffs), indent=2, ensure_ascii=False) + "\n"
