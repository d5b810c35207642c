"""Baseline files: ``baselines/<arch-key>/0001_kernelgate.json``.

The file is a pytest-benchmark result file (so ``pytest --benchmark-compare`` and
``pytest-benchmark compare`` read it as it is), with kernelgate's measurement of each benchmark in
``benchmarks[i].extra_info.kernelgate`` and a schema version in the top-level ``kernelgate`` table.
Keys are sorted and sample lists kept on one line, so an update reads well in a PR diff.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgate.measure import Measurement, combine

SCHEMA_VERSION = 1
FILE_NAME = "0001_kernelgate.json"
RECORD_CMD = "pytest benchmarks --kernelgate-save"


class BaselineError(Exception):
    """A baseline file cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class Entry:
    """One benchmark in a baseline file: pytest-benchmark's fields plus kernelgate's measurement."""

    fullname: str
    measurement: Measurement
    benchmark: Mapping[str, Any]


def path_for(baseline_dir: Path, arch: str) -> Path:
    return baseline_dir / arch / FILE_NAME


def _fail(path: Path, what: str) -> BaselineError:
    return BaselineError(
        f"{path}: {what}. Restore it from git (git checkout -- {path}) or re-record it with '{RECORD_CMD}'."
    )


def load(path: Path) -> dict[str, Entry]:
    """The benchmarks in ``path`` by full name. Raises :class:`BaselineError` on any defect."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(path, f"not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise _fail(path, f"cannot be read ({exc.strerror})") from exc
    if not text.strip():
        raise _fail(path, "the file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("kernelgate"), dict):
        raise _fail(path, "not a kernelgate baseline (no top-level 'kernelgate' table)")
    version = data["kernelgate"].get("schema_version")
    if version != SCHEMA_VERSION:
        raise _fail(path, f"schema version {version!r}, this kernelgate reads version {SCHEMA_VERSION}")
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, list):
        raise _fail(path, "no 'benchmarks' list")
    entries: dict[str, Entry] = {}
    for i, bench in enumerate(benchmarks):
        try:
            fullname = str(bench["fullname"])
            measurement = Measurement.from_json(bench["extra_info"]["kernelgate"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise _fail(path, f"benchmarks[{i}] is malformed ({type(exc).__name__}: {exc})") from exc
        entries[fullname] = Entry(fullname, measurement, bench)
    return entries


# Only lists that json.dumps(indent=2) spread over lines: a JSON string never holds a raw newline,
# so text inside strings (e.g. "test_shape[1,3,640,640]") is never touched.
_NUMBER = r"-?\d[\d.eE+-]*"
_NUMBER_LIST = re.compile(rf"\[\n\s*({_NUMBER}(?:,\n\s*{_NUMBER})*)\n\s*\]")


def _compact_numbers(text: str) -> str:
    """Put lists of plain numbers on one line: a baseline diff then shows one line per sample list."""
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(p.strip() for p in m.group(1).split(",")) + "]", text)


def dumps(document: Mapping[str, Any]) -> str:
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)
    return _compact_numbers(text) + "\n"


def document(
    entries: Iterable[Entry],
    arch: str,
    machine_info: Mapping[str, Any],
    commit_info: Mapping[str, Any],
    created: str,
    pytest_benchmark_version: str,
) -> dict[str, Any]:
    benchmarks = []
    for entry in sorted(entries, key=lambda e: e.fullname):
        bench = dict(entry.benchmark)
        extra = dict(bench.get("extra_info") or {})
        extra["kernelgate"] = entry.measurement.to_json()
        bench["extra_info"] = extra
        benchmarks.append(bench)
    return {
        "kernelgate": {"schema_version": SCHEMA_VERSION, "arch": arch},
        "machine_info": dict(machine_info),
        "commit_info": dict(commit_info),
        "benchmarks": benchmarks,
        "datetime": created,
        "version": pytest_benchmark_version,
    }


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def merge(path: Path, new: Iterable[Entry], append: bool = False) -> list[Entry]:
    """Entries of ``path`` (if it is a valid baseline) with ``new`` replacing those of the same name.

    With ``append``, a new entry is added as one more round of the existing one (separate processes
    give the baseline its between-process spread); pytest-benchmark's timings stay the first round's.
    """
    merged = load(path) if path.exists() else {}
    for entry in new:
        old = merged.get(entry.fullname)
        if append and old is not None:
            entry = Entry(entry.fullname, combine([old.measurement, entry.measurement]), old.benchmark)
        merged[entry.fullname] = entry
    return list(merged.values())
