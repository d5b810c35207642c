"""Saving a baseline file, the second stage of the flow (measure -> baseline -> verdict -> report):
``baselines/<arch-key>/0001_kernelgate.json`` written, merged with what it held, under its lock.

Schema 2 writes the per-iteration samples and the kernels to a compressed file beside the main file
(:mod:`kernelgate.baseline.slim`), and every save writes ``SUMMARY.md`` beside it too
(:mod:`kernelgate.baseline.summary`): its diff is the review of a re-record. Keys are sorted and
number lists kept on one line. Saving reads (:mod:`kernelgate.baseline.reading`), merges and writes
under a lock file (``filelock``), so concurrent runs lose nothing.

The names of :mod:`kernelgate.baseline.reading` (``Entry``, ``load``, ``path_for``, ...) are
re-exported: the plugin, the reports and the tests use one module for a baseline file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from kernelgate.baseline import byhost, files, rounds, slim, summary
from kernelgate.baseline.errors import RECORD_CMD as RECORD_CMD
from kernelgate.baseline.errors import REPLACE_CMD, REPLACE_OPTION
from kernelgate.baseline.errors import BaselineError as BaselineError
from kernelgate.baseline.files import LOCK_TIMEOUT_S, remove_stale_temps
from kernelgate.baseline.files import lock_path as lock_path
from kernelgate.baseline.files import locked as locked
from kernelgate.baseline.files import write_atomic as write_atomic
from kernelgate.baseline.reading import FILE_NAME as FILE_NAME
from kernelgate.baseline.reading import MIGRATIONS as MIGRATIONS
from kernelgate.baseline.reading import SCHEMA_VERSION as SCHEMA_VERSION
from kernelgate.baseline.reading import Entry as Entry
from kernelgate.baseline.reading import load as load
from kernelgate.baseline.reading import migrate as migrate
from kernelgate.baseline.reading import path_for as path_for
from kernelgate.baseline.reading import read_document as read_document
from kernelgate.baseline.reading import recorded_keys as recorded_keys
from kernelgate.baseline.values import parse as parse
from kernelgate.config import GateConfig
from kernelgate.measure.results import combine

SAMPLES_FORMAT = (
    "xz-compressed JSON: per benchmark, its kernels and the samples of its other distributions by JSON "
    "pointer (kernelgate.baseline.slim); xz -dc FILE | python -m json.tool"
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
