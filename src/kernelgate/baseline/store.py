"""Baseline files: ``baselines/<arch-key>/0001_kernelgate.json``.

The file is a pytest-benchmark result file (so ``pytest --benchmark-compare`` and
``pytest-benchmark compare`` read it as it is), with kernelgate's measurement of each benchmark in
``benchmarks[i].extra_info.kernelgate`` and a schema version in the top-level ``kernelgate`` table.
Keys are sorted and sample lists kept on one line, so an update reads well in a PR diff.

Reading never trusts the file: duplicate keys, NaN, summaries that disagree with their samples
(a hand edit), a file of another architecture, or one from a newer kernelgate are refused with the
file's name and the fix. Older schema versions are upgraded through :data:`MIGRATIONS`. Saving
reads, merges and writes under a lock file (``filelock``), so concurrent runs lose nothing.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock

from kernelgate.baseline.names import check_component
from kernelgate.config import record_command
from kernelgate.measure.results import Dist, Measurement, combine

SCHEMA_VERSION = 1
FILE_NAME = "0001_kernelgate.json"
RECORD_CMD = record_command()


LOCK_TIMEOUT_S = 60.0
# Summaries are rounded to 0.001 µs when written; a hand edit moves them by far more.
SUMMARY_TOLERANCE_US = 0.01

Migration = Callable[[dict[str, Any]], dict[str, Any]]
# schema version N -> a function that turns a version-N document into version N + 1. Version 1 is
# the first; add an entry here (and a test with a file of the old version) whenever it changes.
MIGRATIONS: dict[int, Migration] = {}


class BaselineError(Exception):
    """A baseline file cannot be used; the message names the file and the fix.

    ``replaceable`` is False where ``--kernelgate-save`` must not overwrite the file either (it was
    written by a newer kernelgate, so replacing it would lose what this version cannot read).
    """

    def __init__(self, message: str, replaceable: bool = True) -> None:
        super().__init__(message)
        self.replaceable = replaceable


@dataclass(frozen=True)
class Entry:
    """One benchmark in a baseline file: pytest-benchmark's fields plus kernelgate's measurement."""

    fullname: str
    measurement: Measurement
    benchmark: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        """JSON types only (a pytest-xdist worker sends its entries to the controller this way);
        the measurement as a baseline file holds it, not a second copy in ``extra_info``."""
        bench = {k: v for k, v in self.benchmark.items() if k != "extra_info"}
        extra = {k: v for k, v in (self.benchmark.get("extra_info") or {}).items() if k != "kernelgate"}
        if extra:
            bench["extra_info"] = extra
        text = json.dumps(bench, default=str)  # parameter values as pytest-benchmark writes them
        return {
            "fullname": self.fullname,
            "measurement": self.measurement.to_json(),
            "benchmark": json.loads(text),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Entry:
        return cls(str(data["fullname"]), Measurement.from_json(data["measurement"]), dict(data["benchmark"]))


def path_for(baseline_dir: Path, arch: str) -> Path:
    """``<baseline_dir>/<arch>/0001_kernelgate.json``; ``arch`` must be a plain folder name."""
    return baseline_dir / check_component(arch, "architecture key") / FILE_NAME


def _fail(path: Path, what: str) -> BaselineError:
    return BaselineError(
        f"{path}: {what}. Restore it from git (git checkout -- {path}) or re-record it with '{RECORD_CMD}'."
    )


class _Invalid(ValueError):
    """A defect inside the JSON text, before the file's path is known to the message."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
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
        raise _fail(path, "the file is empty")
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise _fail(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    except _Invalid as exc:
        raise _fail(path, f"not a valid baseline: {exc}") from exc
    except RecursionError as exc:
        raise _fail(path, "not a valid baseline: nested too deeply") from exc


def migrate(
    path: Path, data: dict[str, Any], migrations: Mapping[int, Migration] | None = None
) -> dict[str, Any]:
    """``data`` upgraded to :data:`SCHEMA_VERSION` through ``migrations`` (default :data:`MIGRATIONS`)."""
    steps = MIGRATIONS if migrations is None else migrations
    version = data["kernelgate"].get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _fail(
            path,
            f"schema version {version!r} is not a whole number (this kernelgate writes {SCHEMA_VERSION})",
        )
    if version > SCHEMA_VERSION:
        raise BaselineError(
            f"{path}: schema version {version}, written by a newer kernelgate (this one reads versions up to "
            f"{SCHEMA_VERSION}). Upgrade kernelgate (pip install -U kernelgate); re-recording with "
            f"'{RECORD_CMD}' is refused, since it would drop what this version cannot read.",
            replaceable=False,
        )
    while version < SCHEMA_VERSION:
        step = steps.get(version)
        if step is None:
            known = ", ".join(map(str, sorted(steps))) or "none"
            raise _fail(path, f"schema version {version} cannot be upgraded (migrations exist from: {known})")
        try:
            data = step(copy.deepcopy(data))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise _fail(
                path, f"schema version {version} could not be upgraded ({type(exc).__name__}: {exc})"
            ) from exc
        version += 1
        data.setdefault("kernelgate", {})["schema_version"] = version
    return data


def load(path: Path, arch: str | None = None) -> dict[str, Entry]:
    """The benchmarks in ``path`` by full name. Raises :class:`BaselineError` on any defect.

    With ``arch``, the file must hold measurements of that architecture key (this machine's).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(path, f"not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise _fail(path, f"cannot be read ({exc.strerror})") from exc
    data = parse(path, text)
    if not isinstance(data, dict) or not isinstance(data.get("kernelgate"), dict):
        raise _fail(path, "not a kernelgate baseline (no top-level 'kernelgate' table)")
    data = migrate(path, data)
    file_arch = data["kernelgate"].get("arch")
    if not isinstance(file_arch, str) or not file_arch:
        raise _fail(path, f"no architecture key ('kernelgate.arch' is {file_arch!r})")
    if arch is not None and file_arch != arch:
        raise BaselineError(
            f"{path}: holds baselines of {file_arch}, but this machine's key is {arch}. A baseline of "
            f"another GPU would compare unlike with unlike: move the file to "
            f"{path.parent.parent / file_arch}/ if it was misplaced, and record this machine's with "
            f"'{RECORD_CMD}'."
        )
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, list):
        raise _fail(path, "no 'benchmarks' list")
    entries: dict[str, Entry] = {}
    for i, bench in enumerate(benchmarks):
        try:
            fullname = str(bench["fullname"])
            raw = bench["extra_info"]["kernelgate"]
            _check_summaries(raw)
            measurement = Measurement.from_json(raw)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise _fail(path, f"benchmarks[{i}] is malformed ({type(exc).__name__}: {exc})") from exc
        if fullname in entries:
            raise _fail(path, f"benchmarks[{i}] repeats {fullname!r} (a bad merge?)")
        if measurement.arch != file_arch:
            raise _fail(
                path,
                f"benchmarks[{i}] ({fullname}) was measured on {measurement.arch}, "
                f"but the file is {file_arch}'s",
            )
        entries[fullname] = Entry(fullname, measurement, bench)
    return entries


def _dists(raw: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key in ("total_us", "busy_us", "wall_us"):
        yield key, raw[key]
    for group in ("layers", "kernels"):
        items = raw[group]
        if not isinstance(items, list):
            raise TypeError(f"'{group}' is {type(items).__name__}, not a list")
        for i, item in enumerate(items):
            yield f"{group}[{i}].time_us", item["time_us"]


def _check_summaries(raw: Mapping[str, Any]) -> None:
    """Samples are lists of finite, non-negative numbers, and the summaries written next to them
    (median, n, p10, p90) still agree with them: a hand edit of a median alone is refused."""
    for where, data in _dists(raw):
        samples = data["samples"]
        if not isinstance(samples, list) or not all(
            isinstance(s, int | float) and not isinstance(s, bool) for s in samples
        ):
            raise ValueError(f"{where}.samples must be a list of numbers")
        if not all(math.isfinite(s) and s >= 0 for s in samples):
            raise ValueError(f"{where}.samples must be finite and 0 or more")
        dist = Dist(tuple(float(s) for s in samples))
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


def lock_path(path: Path) -> Path:
    """The lock file of ``path``: ``.0001_kernelgate.json.lock`` beside it (stays; ignore it in git)."""
    return path.with_name(f".{path.name}.lock")


@contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the lock of baseline file ``path`` (an OS file lock: released if the process dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(lock_path(path), timeout=timeout)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        raise BaselineError(
            f"{path}: another process has held its lock ({lock_path(path)}) for {timeout:g} s. "
            "Wait for the other kernelgate run to finish, then run again.",
            replaceable=False,
        ) from exc
    try:
        yield
    finally:
        lock.release()


def merge(path: Path, new: Iterable[Entry], arch: str | None = None, append: bool = False) -> list[Entry]:
    """Entries of ``path`` (if it is a valid baseline) with ``new`` replacing those of the same name.

    With ``append``, a new entry is added as one more round of the existing one (separate processes
    give the baseline its between-process spread); pytest-benchmark's timings stay the first round's.
    """
    merged = load(path, arch) if path.exists() else {}
    for entry in new:
        old = merged.get(entry.fullname)
        if append and old is not None:
            entry = Entry(entry.fullname, combine([old.measurement, entry.measurement]), old.benchmark)
        merged[entry.fullname] = entry
    return list(merged.values())


def save(
    path: Path,
    new: Iterable[Entry],
    *,
    arch: str,
    machine_info: Mapping[str, Any],
    commit_info: Mapping[str, Any],
    created: str,
    pytest_benchmark_version: str,
    merge_existing: bool = True,
    replace_unreadable: bool = False,
    append: bool = False,
    timeout: float = LOCK_TIMEOUT_S,
) -> list[str]:
    """Write ``new`` to ``path``, keeping the file's other benchmarks; read, merge and write under
    the file's lock, so runs saving at the same time lose nothing. Returns notes for the user.

    An unreadable file is replaced only with ``replace_unreadable`` (and said so in the notes).
    """
    entries = list(new)
    if any(e.measurement.arch != arch for e in entries):
        others = sorted({e.measurement.arch for e in entries} - {arch})
        raise ValueError(f"cannot save measurements of {others} into the baseline of {arch} ({path})")
    notes: list[str] = []
    with locked(path, timeout):
        if merge_existing and path.exists():
            try:
                entries = merge(path, entries, arch, append=append)
            except BaselineError as exc:
                if not (replace_unreadable and exc.replaceable):
                    raise
                notes.append(f"replaced an unreadable baseline, as --kernelgate-save asked: {exc}")
        doc = document(entries, arch, machine_info, commit_info, created, pytest_benchmark_version)
        write_atomic(path, dumps(doc))
    return notes
