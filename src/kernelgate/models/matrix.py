"""The configuration matrix: named sets of configurations, from ``[tool.kernelgate.matrix]``.

A set is a list of groups; a group is the product of its axes (``models`` x ``precisions`` x
``batches`` x ``imgsz`` x ``modes`` x ``stages`` x ``channels_last`` x ``fuse``), each a list,
missing axes at their default. Configurations appear once per set, in the order written, with
stable ids (:attr:`kernelgate.models.yolo.YoloSpec.id`). No torch here: the plugin expands the matrix
at collection time.

    [tool.kernelgate.matrix]
    on_gpu = "quick"     # the set a GPU runs unless --kernelgate-matrix names another
    on_cpu = "cpu"       # the set a machine without a GPU runs

    [[tool.kernelgate.matrix.quick]]
    models = ["yolov8n", "yolo11n"]
    precisions = ["fp16", "fp32"]
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from kernelgate.models.yolo import PRECISIONS, YoloSpec

# group key -> YoloSpec field; every group key takes a list
AXES = {
    "models": "model",
    "precisions": "precision",
    "batches": "batch",
    "imgsz": "imgsz",
    "modes": "mode",
    "stages": "stage",
    "channels_last": "channels_last",
    "fuse": "fuse",
}
FIELD_TYPES = {"batch": int, "imgsz": int, "channels_last": bool, "fuse": bool}

# Used where pyproject.toml defines no sets of its own.
DEFAULT_SETS: dict[str, list[dict[str, Any]]] = {
    "quick": [
        {"models": ["yolov8n", "yolo11n"], "precisions": ["fp16", "fp32"]},
        {"models": ["yolov8n", "yolo11n"], "precisions": ["fp16"], "modes": ["graph"]},
        {"models": ["yolov8n"], "precisions": ["fp16"], "stages": ["pipeline"]},
        {"models": ["yolo26n"], "precisions": ["fp16"]},
    ],
    "cpu": [{"models": ["yolov8n", "yolo11n"], "precisions": ["fp32"], "imgsz": [160]}],
}
DEFAULT_CHOICE = {"on_gpu": "quick", "on_cpu": "cpu"}


class MatrixError(ValueError):
    """The matrix configuration or a selection is wrong; the message names the fix."""


@dataclass(frozen=True)
class Matrix:
    sets: Mapping[str, tuple[YoloSpec, ...]]
    choice: Mapping[str, str]  # "on_gpu"/"on_cpu" -> set name

    def cases(self, name: str | None, gpu: bool) -> tuple[YoloSpec, ...]:
        chosen = name or self.choice["on_gpu" if gpu else "on_cpu"]
        if chosen not in self.sets:
            raise MatrixError(
                f"no matrix set {chosen!r}; the sets are {', '.join(sorted(self.sets))} "
                "([tool.kernelgate.matrix] in pyproject.toml)"
            )
        return self.sets[chosen]


def _group(set_name: str, index: int, group: Mapping[str, Any]) -> list[YoloSpec]:
    where = f"[[tool.kernelgate.matrix.{set_name}]] #{index + 1}"
    unknown = sorted(set(group) - set(AXES) - {"shape"})
    if unknown:
        raise MatrixError(f"{where}: unknown key(s) {unknown}; the axes are {sorted(AXES)} and shape")
    axes: list[list[tuple[str, Any]]] = []
    for key, name in AXES.items():
        values = group.get(key)
        if values is None:
            continue
        if not isinstance(values, list) or not values:
            raise MatrixError(f"{where}: {key} must be a non-empty list, e.g. {key} = [{values!r}]")
        kind = FIELD_TYPES.get(name, str)
        if any(type(v) is not kind for v in values):
            raise MatrixError(f"{where}: {key} = {values!r}: every value must be a {kind.__name__}")
        axes.append([(name, v) for v in values])
    shape = group.get("shape")
    specs = []
    for combo in itertools.product(*axes):
        kwargs: dict[str, Any] = dict(combo)
        if shape:
            kwargs["shape"] = tuple(int(v) for v in shape)
        try:
            specs.append(YoloSpec(**kwargs))
        except ValueError as exc:
            raise MatrixError(f"{where}: {exc}") from exc
    return specs


def parse(table: Mapping[str, Any]) -> Matrix:
    """A :class:`Matrix` from the ``[tool.kernelgate.matrix]`` table (empty: the built-in sets)."""
    choice = {k: table.get(k, v) for k, v in DEFAULT_CHOICE.items()}
    raw = {k: v for k, v in table.items() if k not in DEFAULT_CHOICE}
    for name, groups in raw.items():
        if not isinstance(groups, list) or not all(isinstance(g, Mapping) for g in groups):
            raise MatrixError(
                f"[tool.kernelgate.matrix] {name!r}: a set is a list of tables: "
                f"[[tool.kernelgate.matrix.{name}]]"
            )
    sets: dict[str, tuple[YoloSpec, ...]] = {}
    for name, groups in (raw or DEFAULT_SETS).items():
        specs = [s for i, g in enumerate(groups) for s in _group(name, i, g)]
        sets[name] = tuple(dict.fromkeys(specs))
    return Matrix(sets, choice)


def load(pyproject: Path) -> Matrix:
    table: Mapping[str, Any] = {}
    if pyproject.is_file():
        with pyproject.open("rb") as fh:
            table = tomllib.load(fh).get("tool", {}).get("kernelgate", {}).get("matrix", {})
    return parse(table)


def parse_only(texts: Sequence[str]) -> dict[str, set[str]]:
    """``--kernelgate-only mode=graph,eager`` (repeatable) as field -> accepted values."""
    names = {f.name for f in fields(YoloSpec)} - {"shape"}
    only: dict[str, set[str]] = {}
    for text in texts:
        key, sep, values = text.partition("=")
        field = AXES.get(key.strip(), key.strip())
        if not sep or field not in names or not values.strip():
            raise MatrixError(
                f"--kernelgate-only {text!r}: use AXIS=VALUE[,VALUE...] with AXIS one of "
                f"{', '.join(sorted(names))}, e.g. --kernelgate-only mode=graph"
            )
        only.setdefault(field, set()).update(v.strip().lower() for v in values.split(","))
    return only


def _text(value: object) -> str:
    return str(value).lower()


def select(specs: Sequence[YoloSpec], only: Mapping[str, set[str]]) -> list[YoloSpec]:
    return [s for s in specs if all(_text(getattr(s, f)) in values for f, values in only.items())]


def skip_reason(spec: YoloSpec, gpu: bool) -> str | None:
    """Why ``spec`` cannot run on this machine (None when it can)."""
    if not gpu and spec.mode == "graph":
        return f"{spec.id}: CUDA-graph mode needs a CUDA GPU"
    return None


def model_name(benchmark: str) -> str | None:
    """``yolov8n-fp16-bs1-640-graph`` -> ``yolov8n``: the model of an id as ``YoloSpec.id`` writes it."""
    precision = "|".join(map(re.escape, PRECISIONS))
    found = re.match(rf"(.+?)-(?:{precision})-bs\d+-\d+(?:-|$)", benchmark)
    return found.group(1) if found else None
