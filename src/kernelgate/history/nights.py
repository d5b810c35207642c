"""The history store: one JSON line per night and architecture, in ``<dir>/<arch>.jsonl``.

A night keeps what the change-point search and a person need, not the whole record: the commit, the
date, the host (:class:`~kernelgate.machine.fingerprint.HostFingerprint` of its first round), the
software versions of the record's environment, and per configuration the total and each layer as its
median and its round medians (the spread of the night's processes). Results files hold the full
records; a night is about 40 kB for the H200's full matrix, so a year of nights stays a file git and
the nightly read in a second.

Lines are appended; a night of a commit and date already stored replaces the old line (a nightly
re-run), so ``kernelgate history add`` may run twice on one results file.
"""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelgate.baseline import store as baseline
from kernelgate.coldstart import verdict as coldverdict
from kernelgate.machine.fingerprint import HostFingerprint
from kernelgate.measure.results import Dist, Measurement

SCHEMA = 1
SUFFIX = ".jsonl"
# the record's environment keys that name software a night's speed depends on; a change of one of
# SOFTWARE_OF_RUNNER between two nights is the runner's, not the code's
SOFTWARE = ("driver", "cuda", "cuda_driver", "torch", "cudnn", "python", "ultralytics", "triton")
SOFTWARE_OF_RUNNER = ("driver", "cuda", "cuda_driver", "torch", "cudnn", "triton")
TOTAL = "(total)"  # the figure name of a configuration's total time per forward


class HistoryError(ValueError):
    """A history file or results file that cannot be used; the message says which and the fix."""


@dataclass(frozen=True)
class Figure:
    """One figure of one night: the median of its samples and the median of each round (process)."""

    median: float
    rounds: tuple[float, ...]

    @classmethod
    def of(cls, dist: Dist) -> Figure:
        return cls(round(dist.median, 3), tuple(round(r, 3) for r in dist.round_medians))

    def to_json(self) -> list[Any]:
        return [self.median, list(self.rounds)]

    @classmethod
    def from_json(cls, data: Any) -> Figure:
        median, rounds = data
        return cls(float(median), tuple(float(r) for r in rounds))


@dataclass(frozen=True)
class Config:
    """One configuration (benchmark id) of a night: its pytest node id, total and layers."""

    fullname: str
    total: Figure
    layers: Mapping[str, Figure] = field(default_factory=dict)

    def figure(self, name: str) -> Figure | None:
        return self.total if name == TOTAL else self.layers.get(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "fullname": self.fullname,
            "total": self.total.to_json(),
            "layers": {name: f.to_json() for name, f in self.layers.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Config:
        layers = {str(k): Figure.from_json(v) for k, v in data.get("layers", {}).items()}
        return cls(str(data["fullname"]), Figure.from_json(data["total"]), layers)


@dataclass(frozen=True)
class Night:
    """One nightly run of one architecture."""

    arch: str
    commit: str
    date: str  # ISO 8601, UTC
    host: HostFingerprint | None
    software: Mapping[str, str]
    configs: Mapping[str, Config]
    run: str = ""  # where it ran, e.g. the workflow run's URL

    @property
    def host_id(self) -> str | None:
        return self.host.id if self.host is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "arch": self.arch,
            "commit": self.commit,
            "date": self.date,
            "run": self.run,
            "host": self.host.to_json() if self.host is not None else None,
            "software": dict(sorted(self.software.items())),
            "configs": {name: c.to_json() for name, c in sorted(self.configs.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Night:
        if data.get("schema") != SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}; this kernelgate reads schema {SCHEMA}")
        host = data.get("host")
        return cls(
            arch=str(data["arch"]),
            commit=str(data["commit"]),
            date=str(data["date"]),
            host=HostFingerprint.from_json(host) if host is not None else None,
            software={str(k): str(v) for k, v in data.get("software", {}).items()},
            configs={str(k): Config.from_json(v) for k, v in data["configs"].items()},
            run=str(data.get("run", "")),
        )

    def short(self) -> str:
        """The night's date (ISO, ``YYYY-MM-DD``) and its commit's first 12 digits, as lists show them."""
        return f"{self.date[:10]} {self.commit[:12]}"


def path_for(folder: Path, arch: str) -> Path:
    return folder / f"{arch}{SUFFIX}"


def config_of(m: Measurement, fullname: str) -> Config:
    layers = {lay.name: Figure.of(lay.time) for lay in m.layers}
    return Config(fullname, Figure.of(m.total), layers)


def software_of(environment: Mapping[str, str]) -> dict[str, str]:
    return {k: environment[k] for k in SOFTWARE if environment.get(k)}


def night_of(results: Path, commit: str | None = None, date: str | None = None, run: str = "") -> Night:
    """The night of a results file (``.kernelgate/results/<arch>/0001_kernelgate.json``): its kernel
    benchmarks that can be trusted; the commit and date from the file where not given."""
    try:
        document = baseline.read_document(results)
        entries = baseline.load(results)
    except baseline.BaselineError as exc:
        raise HistoryError(str(exc)) from exc
    kept = [e for e in entries.values() if coldverdict.record_of(e) is None and e.measurement.reliable]
    if not kept:
        raise HistoryError(
            f"{results}: no reliable kernel benchmark to keep ({len(entries)} in the file); it is the "
            "results file of `pytest benchmarks` (.kernelgate/results/<arch>/0001_kernelgate.json)"
        )
    info = document.get("commit_info") or {}
    commit = commit or str(info.get("id") or "")
    if not commit:
        raise HistoryError(
            f"{results}: no commit in the file's commit_info; give it: "
            f"kernelgate history add {results} --commit $(git rev-parse HEAD)"
        )
    when = date or str(document.get("datetime") or "") or _now()
    first = kept[0].measurement
    host = next((h for e in kept for h in e.measurement.round_hosts if h is not None), None)
    configs = {e.measurement.benchmark: config_of(e.measurement, e.fullname) for e in kept}
    return Night(first.arch, commit, when, host, software_of(first.environment), configs, run)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def load(path: Path) -> list[Night]:
    """The nights of a history file, oldest first (by date; the file's order among equal dates)."""
    if not path.exists():
        return []
    nights = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            nights.append(Night.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            raise HistoryError(
                f"{path}:{number}: not a night of kernelgate's history ({type(exc).__name__}: {exc}); "
                f"remove the line (sed -i '{number}d' {path}) or restore the file from its branch"
            ) from exc
    return sorted(nights, key=lambda n: n.date)


def dumps(nights: Iterable[Night]) -> str:
    return "".join(json.dumps(n.to_json(), separators=(",", ":")) + "\n" for n in nights)


def save(path: Path, nights: Sequence[Night]) -> None:
    """Write ``nights`` to ``path`` atomically (a temporary file renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(dumps(nights))
    os.replace(name, path)


def add(folder: Path, night: Night) -> tuple[Path, list[Night]]:
    """Store ``night`` in its architecture's file (replacing one of the same commit and date)."""
    path = path_for(folder, night.arch)
    kept = [n for n in load(path) if (n.commit, n.date) != (night.commit, night.date)]
    nights = sorted([*kept, night], key=lambda n: n.date)
    save(path, nights)
    return path, nights
