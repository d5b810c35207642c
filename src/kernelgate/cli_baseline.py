"""``kernelgate baseline ...``: the baseline files themselves.

- ``diff OLD NEW [OLD NEW ...]``: what a re-record changed, as Markdown (the baselines workflow's
  pull request description): which figures moved, by how much, on which hosts
  (:mod:`kernelgate.baseline.review`). OLD and NEW are baseline files or their folders; an OLD that
  does not exist is a new architecture.
- ``migrate [FILE ...]``: rewrite baseline files at the current schema (schema 1 -> 2: the slim main
  file, its samples file and SUMMARY.md, :mod:`kernelgate.baseline.slim`), numbers unchanged.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kernelgate import config
from kernelgate.baseline import reading, review, slim, store, summary
from kernelgate.baseline.errors import BaselineError
from kernelgate.baseline.files import locked
from kernelgate.baseline.values import parse


def _file(name: str) -> Path:
    path = Path(name)
    return path / reading.FILE_NAME if path.is_dir() else path


def _configs(path: Path) -> tuple[str, list[summary.Configuration]]:
    """The architecture key and the summarized configurations of baseline file ``path``."""
    entries = reading.load(path)
    arch = next((e.measurement.arch for e in entries.values()), path.parent.name)
    return arch, summary.configurations(e.benchmark for e in entries.values())


def _diff(args: argparse.Namespace) -> int:
    names = list(args.files)
    if len(names) % 2:
        print("kernelgate baseline diff: give the files in pairs: OLD NEW [OLD NEW ...]", file=sys.stderr)
        return 2
    try:
        gate, _ = config.load_pyproject(Path(args.config))
        parts = []
        for old_name, new_name in zip(names[::2], names[1::2], strict=True):
            arch, new = _configs(_file(new_name))
            old_path = _file(old_name)
            old = _configs(old_path)[1] if old_path.exists() else []
            parts.append(review.render(arch, old, new, gate, 0 if args.all else review.SHOWN))
    except (BaselineError, config.ConfigError) as exc:
        print(f"kernelgate: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(review.fit(parts))
    return 0


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


def _migrate(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.files] or sorted(Path(args.baseline_dir).glob(f"*/{reading.FILE_NAME}"))
    if not paths:
        print(
            f"kernelgate baseline migrate: no {reading.FILE_NAME} under {args.baseline_dir}/", file=sys.stderr
        )
        return 2
    for path in paths:
        side, notes = slim.sidecar_path(path), summary.path_for(path)
        before = _size(path) + _size(side)
        try:
            with locked(path):
                raw: Any = parse(path, path.read_text(encoding="utf-8"))
                version = raw.get("kernelgate", {}).get("schema_version") if isinstance(raw, dict) else None
                store.write_document(path, reading.read_document(path))
        except (BaselineError, OSError) as exc:
            print(f"kernelgate: {exc}", file=sys.stderr)
            return 2
        print(
            f"{path}: schema {version} -> {reading.SCHEMA_VERSION}, {before:,} bytes -> {_size(path):,} "
            f"({path.name}) + {_size(side):,} ({side.name}) + {_size(notes):,} ({notes.name})"
        )
    return 0


def add(sub: Any) -> None:
    """Register ``kernelgate baseline`` on the command's subparsers ``sub``."""
    parser = sub.add_parser("baseline", help="baseline files: diff two (Markdown), migrate to this schema")
    commands = parser.add_subparsers(dest="baseline_command", required=True)
    diff = commands.add_parser(
        "diff",
        help="what a re-record changed (Markdown): figures that moved beyond threshold and round spread, "
        "hosts, software",
    )
    diff.add_argument("files", nargs="+", metavar="OLD NEW", help="baseline files or their folders, in pairs")
    diff.add_argument(
        "--config", default="pyproject.toml", help="thresholds from this file's [tool.kernelgate]"
    )
    diff.add_argument(
        "--all", action="store_true", help=f"every figure that moved (default: the first {review.SHOWN})"
    )
    diff.set_defaults(run=_diff)
    migrate = commands.add_parser(
        "migrate", help=f"rewrite baseline files at schema {reading.SCHEMA_VERSION} (numbers unchanged)"
    )
    migrate.add_argument("files", nargs="*", help=f"default: every <baseline-dir>/*/{reading.FILE_NAME}")
    migrate.add_argument("--baseline-dir", default="baselines")
    migrate.set_defaults(run=_migrate)
