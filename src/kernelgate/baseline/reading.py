"""Reading a baseline file, the second stage of the flow (measure -> baseline -> verdict -> report):
``baselines/<arch-key>/0001_kernelgate.json`` into its entries, each with kernelgate's measurement.

The file is a pytest-benchmark result file (so ``pytest --benchmark-compare`` and
``pytest-benchmark compare`` read it as it is), with kernelgate's measurement of each benchmark in
``benchmarks[i].extra_info.kernelgate`` and a schema version in the top-level ``kernelgate`` table.
Schema 2 keeps the per-iteration samples and the kernels in a compressed file beside it
(:mod:`kernelgate.baseline.slim`), joined back here.

Reading never trusts the file: duplicate keys, NaN, summaries that disagree with their samples
(a hand edit), a file of another architecture, or one from a newer kernelgate are refused with the
file's name and the fix. Older schema versions are upgraded through :data:`MIGRATIONS`. Writing and
merging are :mod:`kernelgate.baseline.store`'s.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgate.baseline import files, rounds, slim
from kernelgate.baseline.errors import RECORD_CMD, BaselineError, unusable
from kernelgate.baseline.names import check_component
from kernelgate.baseline.values import check_summaries, parse
from kernelgate.machine.fingerprint import RecordedHosts
from kernelgate.measure.results import Measurement

SCHEMA_VERSION = 2
FILE_NAME = "0001_kernelgate.json"

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


def recorded_keys(baseline_dir: Path) -> list[str]:
    """The architecture keys that have a baseline file in ``baseline_dir``."""
    if not baseline_dir.is_dir():
        return []
    return sorted(p.name for p in baseline_dir.iterdir() if (p / FILE_NAME).is_file())


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
