"""Schema 2 of a baseline file: a slim main file and the samples beside it, xz-compressed.

Schema 1 kept every per-iteration sample and every kernel in the pytest-benchmark file: 4.6 MB for
the quick set of one GPU, a diff nobody reads. Schema 2 keeps the same record in two files:

- ``0001_kernelgate.json``, the main file: pytest-benchmark's fields as they were (``pytest-benchmark
  compare`` and ``--benchmark-compare`` read it), and each benchmark's ``extra_info.kernelgate``
  without its ``kernels`` list and without the ``samples`` of its distributions. Each distribution
  keeps its summary (median, n, p10, p90, rounds) and gains ``round_medians`` where it has several
  rounds, so the file still reads on its own. Its top-level ``kernelgate.samples`` names the other
  file and holds the SHA-256 of its content.
- ``0001_kernelgate.samples.json.xz`` (the main file's name with ``.samples.json.xz``): per benchmark,
  the kernels as the measurement wrote them and the samples of every other distribution, by the JSON
  pointer of the distribution in the record (``/total_us``, ``/layers/3/time_us``).

No number is changed: the samples move as they were written (0.001 µs), so the two files joined give
back the schema-1 record exactly (:func:`join`; ``tests/test_baseline_slim.py`` checks it on the
committed baselines). The move is generic: any distribution (a dict with a ``samples`` list) of the
record, also one that a later field adds, goes to the samples file, and every other field stays in
the main file unchanged.

In memory a document holds the full records, as schema 1 did: :func:`split` makes the two files'
contents when it is written, :func:`join` the full records again when it is read.
"""

from __future__ import annotations

import hashlib
import json
import lzma
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kernelgate.baseline import files
from kernelgate.baseline.errors import unusable
from kernelgate.baseline.values import parse
from kernelgate.measure.results import Dist

SUFFIX = ".samples.json.xz"
ROUND_MEDIANS = "round_medians"
XZ_PRESET = 9 | lzma.PRESET_EXTREME


def sidecar_path(path: Path) -> Path:
    """The samples file of main file ``path``: ``X.json`` -> ``X.samples.json.xz``."""
    return path.with_name(path.name.removesuffix(".json") + SUFFIX)


def _escape(part: str | int) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def pointer(parts: tuple[str | int, ...]) -> str:
    """RFC 6901 JSON pointer of ``parts``: ``("layers", 3, "time_us")`` -> ``/layers/3/time_us``."""
    return "".join("/" + _escape(p) for p in parts)


def resolve(record: Any, where: str) -> Any:
    """The value at JSON pointer ``where`` inside ``record``; KeyError/IndexError/TypeError if absent."""
    node = record
    for raw in where.split("/")[1:]:
        part = _unescape(raw)
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def distributions(node: Any, parts: tuple[str | int, ...] = ()) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every distribution (a dict with a ``samples`` list) in ``node``, by JSON pointer, in order."""
    if isinstance(node, dict):
        if isinstance(node.get("samples"), list):
            yield pointer(parts), node
            return
        for key in sorted(node):
            yield from distributions(node[key], (*parts, key))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from distributions(item, (*parts, i))


def _round_medians(dist: Mapping[str, Any]) -> list[float] | None:
    """The median of each round, where the samples and rounds are well formed and there are several
    rounds (the file's own checks name a malformed distribution, not this derived summary)."""
    try:
        parsed = Dist.from_json(dist)
    except (TypeError, ValueError, KeyError):
        return None
    if len(parsed.rounds) < 2:
        return None
    return [round(m, 3) for m in parsed.round_medians]


def split_record(record: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One measurement's JSON -> (its part in the main file, its part in the samples file)."""
    main: dict[str, Any] = json_copy(dict(record))
    side: dict[str, Any] = {"samples": {}}
    if "kernels" in main:
        side["kernels"] = main.pop("kernels")
    for where, dist in distributions(main):
        medians = _round_medians(dist)
        side["samples"][where] = dist.pop("samples")
        if medians is not None:
            dist[ROUND_MEDIANS] = medians
    return main, side


def join_record(main: Mapping[str, Any], side: Mapping[str, Any]) -> dict[str, Any]:
    """The full measurement JSON from its two parts (KeyError, IndexError, TypeError or ValueError
    where they do not fit together)."""
    record: dict[str, Any] = json_copy(dict(main))
    if "kernels" in side:
        record["kernels"] = json_copy(side["kernels"])
    samples = side["samples"]
    if not isinstance(samples, Mapping):
        raise TypeError(f"'samples' is {type(samples).__name__}, not an object")
    for where, values in samples.items():
        target = resolve(record, where)
        if not isinstance(target, dict) or "samples" in target:
            raise ValueError(f"{where} is no distribution without samples")
        target["samples"] = list(values) if isinstance(values, list) else json_copy(values)
    return record


def json_copy(node: Any) -> Any:
    """A copy of a parsed JSON tree (its dicts and lists new, the numbers and strings shared): what
    ``copy.deepcopy`` gives for JSON, at a fraction of its cost (no memo of shared objects, which JSON
    has none of), which took about half of the time to load a committed baseline (docs/measurements.md,
    "Figures behind the code's rules")."""
    tree = (dict, list)
    if isinstance(node, dict):
        return {key: json_copy(value) if isinstance(value, tree) else value for key, value in node.items()}
    if isinstance(node, list):
        return [json_copy(value) if isinstance(value, tree) else value for value in node]
    return node


def split(document: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A document with full records -> (the main file's content, the samples file's content): the
    samples and kernels of every benchmark move to the second, keyed by the benchmark's full name."""
    main = dict(document)
    moved: dict[str, Any] = {}
    benchmarks = []
    for bench in document["benchmarks"]:
        extra = bench.get("extra_info")
        if isinstance(extra, Mapping) and isinstance(extra.get("kernelgate"), Mapping):
            record, side = split_record(extra["kernelgate"])
            bench = {**bench, "extra_info": {**extra, "kernelgate": record}}
            moved[str(bench["fullname"])] = side
        benchmarks.append(bench)
    main["benchmarks"] = benchmarks
    return main, {"benchmarks": moved}


def drop_derived(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` without the round medians that :func:`split_record` added (checked by then:
    :func:`kernelgate.baseline.values.check_summaries`): as the measurement wrote it."""
    for _, dist in distributions(record):
        dist.pop(ROUND_MEDIANS, None)
    return record


def join(main: Mapping[str, Any], side: Any) -> dict[str, Any]:
    """The document with full records (as schema 1 held them, plus the round medians of the main
    file) from the main file's and the samples file's content; ValueError where they do not fit: a
    benchmark without samples, samples without a benchmark, a pointer to no distribution."""
    if not isinstance(side, Mapping) or not isinstance(side.get("benchmarks"), Mapping):
        raise ValueError("the samples file holds no 'benchmarks' object")
    moved = side["benchmarks"]
    benchmarks = main.get("benchmarks")
    if not isinstance(benchmarks, list):
        return dict(main)  # the file's own checks name it (reading.load)
    out = []
    names = set()
    for bench in benchmarks:
        extra = bench.get("extra_info") if isinstance(bench, Mapping) else None
        if isinstance(extra, Mapping) and isinstance(extra.get("kernelgate"), Mapping):
            name = str(bench.get("fullname"))
            names.add(name)
            if name not in moved:
                raise ValueError(f"{name}: the samples file has nothing of this benchmark")
            try:
                record = join_record(extra["kernelgate"], moved[name])
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                raise ValueError(
                    f"{name}: its samples do not fit its record ({type(exc).__name__}: {exc})"
                ) from exc
            bench = {**bench, "extra_info": {**extra, "kernelgate": record}}
        out.append(bench)
    stray = sorted(set(moved) - names)
    if stray:
        raise ValueError(f"the samples file holds {stray[0]!r}, which the main file does not")
    return {**main, "benchmarks": out}


def encode(side: Mapping[str, Any]) -> bytes:
    """The samples file's content as canonical JSON (sorted keys, no blanks): what its digest is of."""
    return json.dumps(side, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def compress(content: bytes) -> bytes:
    return lzma.compress(content, format=lzma.FORMAT_XZ, preset=XZ_PRESET)


class NotXz(ValueError):
    """The samples file is no xz data (or is cut short)."""


def decompress(blob: bytes) -> bytes:
    try:
        return lzma.decompress(blob, format=lzma.FORMAT_XZ)
    except (lzma.LZMAError, EOFError) as exc:
        raise NotXz(str(exc)) from exc


def read_samples(path: Path, meta: Any, root: Path | None = None) -> Any:
    """The content of the samples file of main file ``path``, checked against the digest ``meta``
    (the main file's ``kernelgate.samples``) that the main file was written with."""
    side = sidecar_path(path)
    if not isinstance(meta, dict) or not isinstance(meta.get("sha256"), str):
        raise unusable(path, f"'kernelgate.samples' is {meta!r}, not the digest of its samples file")
    if root is not None:
        files.confined(side, root)
    files.check_file(side)
    both = f"git checkout -- {path} {side}"
    if not side.exists():
        raise unusable(
            path,
            f"its samples file {side.name} is missing (schema 2 keeps the per-iteration "
            f"samples and the kernels there, beside the main file; commit both: git add {path.parent})",
        )
    try:
        content = decompress(side.read_bytes())
    except OSError as exc:
        raise unusable(side, f"cannot be read ({exc.strerror})") from exc
    except NotXz as exc:
        raise unusable(side, f"is not xz-compressed data ({exc})") from exc
    found = digest(content)
    if found != meta["sha256"]:
        raise unusable(
            path,
            f"its samples file {side.name} is not the one it was written with (SHA-256 {found[:12]}…, the "
            f"main file expects {meta['sha256'][:12]}…): one of the two was replaced without the other. "
            f"Restore both ({both})",
        )
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise unusable(side, f"not UTF-8 text (byte {exc.start})") from exc
    return parse(side, text)
