"""``report-data.json``: what a report folder was rendered from, so reports of several runners merge.

Each run writes it next to report.md: per compared benchmark the comparison with every verdict as
the run decided it (confirm runs included), the baseline and current measurements, the history
points and the trace files. ``kernelgate report merge`` reads these files back into the
:class:`~kernelgate.verdict.diff.BenchmarkDiff` objects the reports render, so a merged report shows the
verdicts of the runners, never verdicts recomputed elsewhere. With ``--kernelgate-redact`` the file
holds the hashed names, like every other file of the folder.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelgate.measure.results import Measurement
from kernelgate.verdict import diff
from kernelgate.verdict.compare import Comparison

FILE = "report-data.json"
SCHEMA_VERSION = 1
KEY = "kernelgate_report_data"


class ReportDataError(Exception):
    """A report-data.json that cannot be read; the message names the file and the fix."""


def _benchmark(d: diff.BenchmarkDiff) -> dict[str, Any]:
    return {
        "comparison": d.comparison.to_json(),
        "base": d.base.to_json(),
        "current": d.current.to_json(),
        "history": [{"label": p.label, "total_us": p.total_us, "layers": dict(p.layers)} for p in d.history],
        "traces": None if d.traces is None else dataclasses.asdict(d.traces),
    }


def render(
    diffs: Sequence[diff.BenchmarkDiff], failed: bool | None = None, run: tuple[str, Sequence[str]] = ("", ())
) -> str:
    """``failed``: the run's decision (default: whether a diff failed); ``run``: its architecture
    and the reasons it fails that no diff shows (a benchmark not compared, nothing compared), so
    that a merged report fails where the runner's run did."""
    arch, reasons = run
    document = {
        KEY: {"schema_version": SCHEMA_VERSION},
        "arch": sorted({d.arch for d in diffs}),
        "failed": any(d.failed for d in diffs) if failed is None else failed,
        "run": {"arch": arch, "reasons": list(reasons)},
        "benchmarks": [_benchmark(d) for d in diffs],
    }
    return json.dumps(document, ensure_ascii=False) + "\n"


def _diff(data: dict[str, Any]) -> diff.BenchmarkDiff:
    built = diff.build(
        Comparison.from_json(data["comparison"]),
        Measurement.from_json(data["base"]),
        Measurement.from_json(data["current"]),
    )
    history = tuple(
        diff.HistoryPoint(
            str(p["label"]), float(p["total_us"]), {str(k): float(v) for k, v in p["layers"].items()}
        )
        for p in data["history"]
    )
    traces = data["traces"]
    pair = (
        None if traces is None else diff.TracePair(traces["baseline"], traces["current"], str(traces["note"]))
    )
    return dataclasses.replace(built, history=history, traces=pair)


def load(path: Path) -> list[diff.BenchmarkDiff]:
    """The diffs a report folder was rendered from; ``path`` is the folder or its report-data.json."""
    path = path / FILE if path.is_dir() else path
    fix = "pass the report folder a kernelgate run wrote (e.g. .kernelgate/report/) or its report-data.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportDataError(f"{path}: cannot be read ({exc.strerror}); {fix}") from exc
    except ValueError as exc:
        raise ReportDataError(f"{path}: not valid JSON ({exc}); {fix}") from exc
    if not isinstance(data, dict) or not isinstance(data.get(KEY), dict):
        raise ReportDataError(f"{path}: not a kernelgate report-data file (no '{KEY}' table); {fix}")
    version = data[KEY].get("schema_version")
    if version != SCHEMA_VERSION:
        raise ReportDataError(
            f"{path}: report data of schema {version!r}, this kernelgate reads {SCHEMA_VERSION}: merge with "
            "the kernelgate version the runners used (pip install kernelgate==<that version>)"
        )
    try:
        return [_diff(b) for b in data["benchmarks"]]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ReportDataError(f"{path}: malformed ({type(exc).__name__}: {exc}); {fix}") from exc


def run_reasons(path: Path) -> tuple[str, tuple[str, ...]]:
    """The runner's architecture and the reasons its run failed beyond its diffs (none in files of
    an older kernelgate); call after :func:`load` has checked the file."""
    path = path / FILE if path.is_dir() else path
    run = json.loads(path.read_text(encoding="utf-8")).get("run") or {}
    return str(run.get("arch") or ""), tuple(str(r) for r in run.get("reasons") or ())
