"""Baseline files: ``baselines/<arch-key>/0001_kernelgate.json``.

The file is a pytest-benchmark result file (so ``pytest --benchmark-compare`` and
``pytest-benchmark compare`` read it as it is), with kernelgate's measurement of each benchmark in
``benchmarks[i].extra_info.kernelgate`` and a schema version in the top-level ``kernelgate`` table.
Schema 2 keeps the per-iteration samples and the kernels in a compressed file beside it
(:mod:`kernelgate.baseline.slim`), and every save writes ``SUMMARY.md`` beside it too
(:mod:`kernelgate.baseline.summary`): its diff is the review of a re-record. Keys are sorted and
number lists kept on one line.

Reading never trusts the file: duplicate keys, NaN, summaries that disagree with their samples
(a hand edit), a file of another architecture, or one from a newer kernelgate are refused with the
file's name and the fix. Older schema versions are upgraded through :data:`MIGRATIONS`. Saving
reads, merges and writes under a lock file (``filelock``), so concurrent runs lose nothing.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernelgate.baseline import byhost, files, rounds, slim, summary
from kernelgate.baseline.errors import RECORD_CMD as RECORD_CMD
from kernelgate.baseline.errors import REPLACE_CMD, REPLACE_OPTION, unusable
from kernelgate.baseline.errors import BaselineError as BaselineError
from kernelgate.baseline.files import LOCK_TIMEOUT_S, remove_stale_temps
from kernelgate.baseline.files import lock_path as lock_path
from kernelgate.baseline.files import locked as locked
from kernelgate.baseline.files import write_atomic as write_atomic
from kernelgate.baseline.names import check_component
from kernelgate.baseline.values import check_summaries
from kernelgate.baseline.values import parse as parse
from kernelgate.config import GateConfig
from kernelgate.machine.fingerprint import RecordedHosts
from kernelgate.measure.results import Measurement, combine

SCHEMA_VERSION = 2
FILE_NAME = "0001_kernelgate.json"
SAMPLES_FORMAT = (
    "xz-compressed JSON: per benchmark, its kernels and the samples of its other distributions by JSON "
    "pointer (kernelgate.baseline.slim); xz -dc FILE | python -m json.tool"
)

Migration = Callable[[dict[str, Any]], dict[str, Any]]


def _records_unchanged(document: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 -> 2: the records are the same; schema 2 keeps the samples and the kernels in a file
    beside the main file (:mod:`kernelgate.baseline.slim`), which :func:`read_document` has joined
    back by the time a document is migrated. The next save writes the two files."""
    return document


# schema version N -> a function that turns a version-N document (full records, in memory) into
# version N + 1. Add an entry here (and a test with a file of the old version) whenever it changes.
MIGRATIONS: dict[int, Migration] = {1: _records_unchanged}


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

    @property
    def hosts(self) -> RecordedHosts:
        """The distinct hosts that recorded this benchmark's rounds (ids and descriptions:
        ``hosts.to_json()``), and how many rounds carry no fingerprint (an older kernelgate)."""
        return RecordedHosts.of(self.measurement.round_hosts)


def path_for(baseline_dir: Path, arch: str) -> Path:
    """``<baseline_dir>/<arch>/0001_kernelgate.json``; ``arch`` must be a plain folder name."""
    return baseline_dir / check_component(arch, "architecture key") / FILE_NAME


def migrate(
    path: Path, data: dict[str, Any], migrations: Mapping[int, Migration] | None = None
) -> dict[str, Any]:
    """``data`` upgraded to :data:`SCHEMA_VERSION` through ``migrations`` (default :data:`MIGRATIONS`)."""
    steps = MIGRATIONS if migrations is None else migrations
    version = data["kernelgate"].get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise unusable(
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
            raise unusable(
                path, f"schema version {version} cannot be upgraded (migrations exist from: {known})"
            )
        try:
            data = step(copy.deepcopy(data))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise unusable(
                path, f"schema version {version} could not be upgraded ({type(exc).__name__}: {exc})"
            ) from exc
        version += 1
        data.setdefault("kernelgate", {})["schema_version"] = version
    return data


def read_document(path: Path, root: Path | None = None) -> dict[str, Any]:
    """The document of main file ``path`` at :data:`SCHEMA_VERSION`, with full records: the samples
    file beside it joined in where the main file names one (``kernelgate.samples``), the round
    medians of the main file kept (:func:`load` checks and drops them). Raises :class:`BaselineError`."""
    if root is not None:
        files.confined(path, root)
    files.check_file(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise unusable(path, f"not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise unusable(path, f"cannot be read ({exc.strerror})") from exc
    data = parse(path, text)
    if not isinstance(data, dict) or not isinstance(data.get("kernelgate"), dict):
        raise unusable(path, "not a kernelgate baseline (no top-level 'kernelgate' table)")
    version = data["kernelgate"].get("schema_version")
    if isinstance(version, int) and 2 <= version <= SCHEMA_VERSION and "samples" in data["kernelgate"]:
        side = slim.read_samples(path, data["kernelgate"]["samples"], root)
        try:
            data = slim.join(data, side)
        except ValueError as exc:
            raise unusable(
                path, f"its samples file {slim.sidecar_path(path).name} does not fit it: {exc}"
            ) from exc
        del data["kernelgate"]["samples"]
    return migrate(path, data)


def load(path: Path, arch: str | None = None, root: Path | None = None) -> dict[str, Entry]:
    """The benchmarks in ``path`` by full name. Raises :class:`BaselineError` on any defect.

    With ``arch``, the file must hold measurements of that architecture key (this machine's); with
    ``root`` (the baseline folder), it and its samples file must lie inside it, also through
    symbolic links.
    """
    data = read_document(path, root)
    file_arch = data["kernelgate"].get("arch")
    if not isinstance(file_arch, str) or not file_arch:
        raise unusable(path, f"no architecture key ('kernelgate.arch' is {file_arch!r})")
    if arch is not None and file_arch != arch:
        raise BaselineError(
            f"{path}: holds baselines of {file_arch}, but this machine's key is {arch}. A baseline of "
            f"another GPU would compare unlike with unlike: move the file to "
            f"{path.parent.parent / file_arch}/ if it was misplaced, and record this machine's with "
            f"'{RECORD_CMD}'."
        )
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, list):
        raise unusable(path, "no 'benchmarks' list")
    entries: dict[str, Entry] = {}
    for i, bench in enumerate(benchmarks):
        try:
            fullname = str(bench["fullname"])
            raw = bench["extra_info"]["kernelgate"]
            check_summaries(raw)
            slim.drop_derived(raw)
            measurement = Measurement.from_json(raw)
            rounds.kept_rounds(bench)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise unusable(path, f"benchmarks[{i}] is malformed ({type(exc).__name__}: {exc})") from exc
        if fullname in entries:
            raise unusable(path, f"benchmarks[{i}] repeats {fullname!r} (a bad merge?)")
        if measurement.arch != file_arch:
            raise unusable(
                path,
                f"benchmarks[{i}] ({fullname}) was measured on {measurement.arch}, "
                f"but the file is {file_arch}'s",
            )
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


def written(path: Path, doc: Mapping[str, Any]) -> tuple[str, bytes, str]:
    """What :func:`write_document` writes for a document with full records (:func:`document`,
    :func:`read_document`): the main file's text, the samples file's bytes and SUMMARY.md's text."""
    main, side = slim.split(doc)
    content = slim.encode(side)
    main["kernelgate"] = {
        **main["kernelgate"],
        "samples": {
            "file": slim.sidecar_path(path).name,
            "format": SAMPLES_FORMAT,
            "sha256": slim.digest(content),
        },
    }
    return dumps(main), slim.compress(content), summary.render(main, path.name)


def write_document(path: Path, doc: Mapping[str, Any]) -> None:
    """Write a document (:func:`document`, :func:`read_document`) at schema 2, as its three files: the
    samples file, then the main file that names its digest, then SUMMARY.md, each atomically. Call it
    under ``path``'s lock. A reader that comes between the first two renames sees a samples file that
    is not its main file's, and is told so."""
    text, blob, summary_text = written(path, doc)
    write_atomic(slim.sidecar_path(path), blob)
    write_atomic(path, text)
    write_atomic(summary.path_for(path), summary_text)


def merge(path: Path, new: Iterable[Entry], arch: str | None = None, append: bool = False) -> list[Entry]:
    """Entries of ``path`` (if it is a valid baseline) with ``new`` replacing those of the same name.

    With ``append``, a new entry is added as one more round of the existing one (separate processes
    give the baseline its between-process spread); pytest-benchmark's timings stay the first round's.
    """
    merged = load(path, arch) if path.exists() else {}
    for entry in new:
        old = merged.get(entry.fullname)
        if append and old is not None:
            rounds.check_method(old.measurement, entry.measurement, entry.fullname)
            bench = byhost.merged(old.benchmark, entry.benchmark, _first_host(old))
            entry = Entry(entry.fullname, combine([old.measurement, entry.measurement]), bench)
        else:  # a new entry: its first round's fields are its own
            entry = Entry(
                entry.fullname, entry.measurement, byhost.without(entry.benchmark, _first_host(entry))
            )
        merged[entry.fullname] = entry
    return list(merged.values())


def _first_host(entry: Entry) -> str | None:
    hosts = entry.measurement.round_hosts
    return hosts[0].id if hosts and hosts[0] is not None else None


def _checked_rounds(
    path: Path, entries: list[Entry], names: set[str], config: GateConfig, keep_round: str | None
) -> tuple[list[Entry], list[str]]:
    """``entries`` whose rounds (those of ``names``, just appended) agree, or are kept for
    ``keep_round``; a disagreement without a reason refuses the whole save."""
    out, notes, refused = [], [], []
    for entry in entries:
        found = []
        if entry.fullname in names:
            found = rounds.disagreements(entry.measurement, config, rounds.kept_rounds(entry.benchmark))
        if found and keep_round:
            kept = sorted({d.round for d in found})
            entry = replace(entry, benchmark=rounds.keeping(entry.benchmark, kept, keep_round))
            notes.append(f"{entry.measurement.benchmark}: kept round(s) {kept} ({keep_round}): {found[0]}")
        elif found:
            hosts = rounds.other_hosts_note(entry.measurement, (d.round for d in found))
            refused.append(rounds.refusal(entry.measurement.benchmark, found, entry.fullname, hosts))
        out.append(entry)
    if refused:
        raise BaselineError(f"{path}: nothing was saved: " + " ".join(refused), replaceable=False)
    return out, notes


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
    config: GateConfig | None = None,
    keep_round: str | None = None,
    root: Path | None = None,
) -> list[str]:
    """Write ``new`` to ``path``, keeping the file's other benchmarks; read, merge and write under
    the file's lock, so runs saving at the same time lose nothing. Returns notes for the user.

    An unreadable file is replaced only with ``replace_unreadable`` (and said so in the notes). With
    ``append``, rounds that disagree beyond ``config.round_tolerance`` are refused unless kept for the
    reason ``keep_round``. ``path`` must lie inside ``root`` (default: its folder's folder, the
    baseline folder) also through symbolic links. Temporary files that a killed writer left are removed.
    """
    entries = list(new)
    if any(e.measurement.arch != arch for e in entries):
        others = sorted({e.measurement.arch for e in entries} - {arch})
        raise ValueError(f"cannot save measurements of {others} into the baseline of {arch} ({path})")
    files.confined(path, path.parent.parent if root is None else root)
    files.check_file(path)
    notes: list[str] = []
    names = {e.fullname for e in entries}
    with locked(path, timeout):
        stale = [
            t for p in (path, slim.sidecar_path(path), summary.path_for(path)) for t in remove_stale_temps(p)
        ]
        if stale:
            notes.append(f"removed {len(stale)} temporary file(s) a killed writer left: {stale[0].name}, ...")
        if merge_existing and path.exists():
            try:
                entries = merge(path, entries, arch, append=append)
            except BaselineError as exc:
                if not exc.replaceable:
                    raise
                if not replace_unreadable:
                    raise BaselineError(
                        f"{exc} Nothing was saved: --kernelgate-save replaces an unreadable file (keeping "
                        f"only the benchmarks of this run) only when asked: {REPLACE_CMD}",
                        replaceable=True,
                    ) from exc
                notes.append(f"replaced an unreadable baseline, as {REPLACE_OPTION} asked: {exc}")
            if append:
                entries, kept = _checked_rounds(path, entries, names, config or GateConfig(), keep_round)
                notes += kept
        doc = document(entries, arch, machine_info, commit_info, created, pytest_benchmark_version)
        try:
            write_document(path, doc)
        except OSError as exc:
            raise BaselineError(
                f"{path}: could not be written ({type(exc).__name__}: {exc.strerror or exc}); the file is "
                "as it was. Free space or fix the permissions, then run again.",
                replaceable=False,
            ) from exc
    return notes


def recorded_keys(baseline_dir: Path) -> list[str]:
    """The architecture keys that have a baseline file in ``baseline_dir``."""
    if not baseline_dir.is_dir():
        return []
    return sorted(p.name for p in baseline_dir.iterdir() if (p / FILE_NAME).is_file())
