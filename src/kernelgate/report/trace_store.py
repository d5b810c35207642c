"""Chrome traces kept as artifacts: one representative iteration, gzipped, optionally redacted.

A run writes its full trace to ``.kernelgate/traces/<test>.json`` (24 steps of yolov8n: tens of
MB). Kept are excerpts of one step, of the iteration whose total GPU time is closest to the median,
with every event inside its ``ProfilerStep#N`` window and all metadata events, gzipped: small
enough to commit next to the baseline (``baselines/<arch>/traces/``), so a later
regression report can show the baseline's trace beside the current one. An excerpt over
:data:`SIZE_CAP` bytes is not stored. Perfetto, TensorBoard (``*.pt.trace.json.gz``) and
chrome://tracing load the files as they are.
"""

from __future__ import annotations

import gzip
import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelgate.baseline.names import safe_name
from kernelgate.baseline.reading import path_for
from kernelgate.measure.naming import module_of_range
from kernelgate.measure.trace import GPU_CATEGORIES, LAUNCH_CATEGORIES, RANGE_PREFIX, STEP_PREFIX
from kernelgate.report.redact import PRIVATE_TRACE_KEYS, Redactor

SUFFIX = ".pt.trace.json.gz"
SIZE_CAP = 1 << 20
# Event names that say nothing about the model: kept by redaction.
KEPT_CATEGORIES = LAUNCH_CATEGORIES | {"gpu_memcpy", "gpu_memset", "ac2g", "Trace", "cuda_profiler_range"}


def current_trace(out_dir: Path, fullname: str) -> Path:
    """Where the gate wrote the full trace of the test ``fullname`` (its node name, made safe)."""
    return out_dir / "traces" / f"{safe_name(fullname.rpartition('::')[2])}.json"


def beside(baseline_file: Path, benchmark: str) -> Path:
    """The trace excerpt kept with a baseline file: ``<its folder>/traces/<benchmark>.pt.trace.json.gz``."""
    return baseline_file.parent / "traces" / f"{safe_name(benchmark)}{SUFFIX}"


def baseline_trace(baseline_dir: Path, arch: str, benchmark: str) -> Path:
    return beside(path_for(baseline_dir, arch), benchmark)


def load(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, list):
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError(f"{path}: not a Chrome trace (no 'traceEvents' list)")
    return data


def _steps(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    steps = [
        e
        for e in events
        if e.get("ph") == "X"
        and e.get("cat") == "user_annotation"
        and str(e.get("name", "")).startswith(STEP_PREFIX)
    ]
    return sorted(steps, key=lambda e: float(e["ts"]))


def excerpt(doc: dict[str, Any], totals_us: Sequence[float] = ()) -> dict[str, Any]:
    """The iteration whose total is closest to the median of ``totals_us`` (else the middle one)."""
    events = doc["traceEvents"]
    steps = _steps(events)
    if not steps:
        raise ValueError("the trace has no ProfilerStep# ranges: not a kernelgate profile")
    index = len(steps) // 2
    if totals_us and len(steps) % len(totals_us) == 0:
        # a record of placements (kernelgate.measure.placement) averages each group of consecutive
        # steps, one of each copy, into one iteration: the first step of the group closest to the median
        median = statistics.median(totals_us)
        group = min(range(len(totals_us)), key=lambda i: abs(totals_us[i] - median))
        index = group * (len(steps) // len(totals_us))
    start = float(steps[index]["ts"])
    end = start + float(steps[index]["dur"])
    kept = [e for e in events if e.get("ph") == "M" or ("ts" in e and start <= float(e["ts"]) <= end)]
    out = {k: v for k, v in doc.items() if k != "traceEvents"}
    out["traceEvents"] = kept
    out["kernelgate"] = {"excerpt": f"iteration {index} of {len(steps)} ({steps[index]['name']})"}
    return out


def _name(event: dict[str, Any], redactor: Redactor) -> str:
    from kernelgate.measure.attribute import normalize_kernel_name

    name = str(event.get("name", ""))
    category = str(event.get("cat", ""))
    if category in KEPT_CATEGORIES or name.startswith(STEP_PREFIX) or event.get("ph") == "M":
        return name
    if name.startswith(RANGE_PREFIX):
        return RANGE_PREFIX + redactor.module(module_of_range(name[len(RANGE_PREFIX) :]))
    if category in GPU_CATEGORIES or category == "cpu_op":
        return redactor.kernel(normalize_kernel_name(name))
    return redactor.hashed("event", name)


def redact(doc: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """Names hashed as in the reports (``kg/module-…``, ``kernel-…``); string arguments dropped; no
    host name and no path of the trace file (:data:`PRIVATE_TRACE_KEYS`)."""
    events = []
    for e in doc["traceEvents"]:
        e = dict(e)
        e["name"] = _name(e, redactor)
        if e.get("ph") != "M" and isinstance(e.get("args"), dict):
            e["args"] = {k: v for k, v in e["args"].items() if not isinstance(v, str)}
        events.append(e)
    kept = {k: v for k, v in doc.items() if k not in PRIVATE_TRACE_KEYS}
    return {**kept, "traceEvents": events}


def encode(doc: dict[str, Any]) -> bytes:
    """Gzipped JSON with no timestamp in the gzip header: equal traces give equal files."""
    return gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), compresslevel=9, mtime=0)


def write(data: bytes, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def store(source: Path, target: Path, totals_us: Sequence[float], cap: int = SIZE_CAP) -> str | None:
    """Save the excerpt of ``source`` at ``target``; a note saying why not, or None when saved."""
    if not source.is_file():
        return f"no trace kept for the baseline: {source} is missing"
    data = encode(excerpt(load(source), totals_us))
    if len(data) > cap:
        target.unlink(missing_ok=True)
        return f"baseline trace not kept: one iteration is {len(data)} bytes gzipped, over the {cap}-byte cap"
    write(data, target)
    return None


def worth_keeping(
    benchmarks: Sequence[str], default_set: frozenset[str], matrix: frozenset[str]
) -> list[str]:
    """The benchmarks whose trace a baseline keeps: those of the matrix set a plain run gates on this device
    (``default_set``: a pull request's, whose reports show the baseline's trace beside the current one), and
    any benchmark that is no matrix configuration (a test of one's own model). The other sets'
    configurations keep none: the full matrix's traces weigh more than its baseline, in git's history at
    every re-record (docs/baselines.md); the report of a regression there says that the baseline has no
    stored trace and shows the current one."""
    return [b for b in benchmarks if b in default_set or b not in matrix]


def keep_for_baselines(
    runs: Sequence[tuple[str, str, str, Sequence[float]]], out_dir: Path, baseline_dir: Path
) -> list[str]:
    """For each (test fullname, arch, benchmark, totals) saved as a baseline, keep its trace excerpt."""
    notes = []
    for fullname, arch, benchmark, totals in runs:
        try:
            note = store(
                current_trace(out_dir, fullname), baseline_trace(baseline_dir, arch, benchmark), totals
            )
        except (OSError, ValueError) as exc:
            note = f"no trace kept for the baseline: {exc}"
        if note:
            notes.append(f"{benchmark}: {note}")
    return notes
