"""Layer groups: which part of a deployed detector each top-level layer belongs to.

An Ultralytics model built from yaml lists its backbone in ``model.yaml["backbone"]``: layers
``model.0 … model.{len(backbone) - 1}`` are the :data:`BACKBONE`, the last layer (``Detect``,
``v10Detect``, ``RTDETRDecoder``, ``Classify`` …) is the :data:`HEAD`, and the layers between are
the :data:`NECK`. The gate's stages outside the network have fixed names (:data:`STAGES`): the
input copy, letterbox and normalisation are :data:`PREPROCESS`, non-maximum suppression is
:data:`NMS`, work outside every module range is :data:`OTHER`. Every layer of any other
``nn.Module`` is :data:`MODEL`.

A measurement carries the groups of its layers (``Measurement.groups``); a record written before
groups existed has none, and its stage layers still map through :data:`STAGES` while its model
layers read as :data:`MODEL`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

BACKBONE = "backbone"
NECK = "neck"
HEAD = "head"
PREPROCESS = "preprocess"
NMS = "NMS"
MODEL = "model"
OTHER = "other"
# The order of every table that shows groups.
ORDER = (BACKBONE, NECK, HEAD, PREPROCESS, NMS, MODEL, OTHER)

UNATTRIBUTED = "(unattributed)"  # as kernelgate.measure.attribute names it (not imported: that loads pandas)
# Top-level layer names of the gate's own stages -> their group.
STAGES: Mapping[str, str] = {
    "input": PREPROCESS,
    "preprocess": PREPROCESS,
    "postprocess": NMS,
    UNATTRIBUTED: OTHER,
}


def yolo_groups(n_layers: int, n_backbone: int) -> dict[str, str]:
    """``model.N`` -> group for a YOLO of ``n_layers`` layers, the first ``n_backbone`` its backbone."""
    out = {}
    for i in range(n_layers):
        if i == n_layers - 1:
            group = HEAD
        elif i < n_backbone:
            group = BACKBONE
        else:
            group = NECK
        out[f"model.{i}"] = group
    return out


def groups_of(model: Any) -> dict[str, str]:
    """Top-level layer name -> group, named as :func:`kernelgate.models.yolo.layers_of` names the layers.

    An Ultralytics model (``model.model`` a ``Sequential`` and ``model.yaml`` with a backbone list)
    is split into backbone, neck and head; any other module's direct children are all :data:`MODEL`.
    """
    import torch

    inner = getattr(model, "model", None)
    if isinstance(inner, torch.nn.Sequential):
        spec = getattr(model, "yaml", None)
        backbone = spec.get("backbone") if isinstance(spec, Mapping) else None
        if isinstance(backbone, Sequence) and len(inner) > 1:
            return yolo_groups(len(inner), len(backbone))
        return {f"model.{i}": MODEL for i in range(len(inner))}
    return {name: MODEL for name, _ in model.named_children()}


def yaml_groups(model: str) -> dict[str, str]:
    """The groups of Ultralytics model ``model`` (``yolov8n``, ``rtdetr-l``) from its bundled yaml,
    without building it: one layer per backbone and head entry. Raises OSError for an unknown model,
    ImportError without ultralytics."""
    import os

    os.environ.setdefault("YOLO_OFFLINE", "1")  # as kernelgate.models.yolo: no network probe at import
    from ultralytics.nn.tasks import yaml_model_load

    spec = yaml_model_load(f"{model}.yaml")  # type: ignore[no-untyped-call]
    backbone, head = spec["backbone"], spec["head"]
    return yolo_groups(len(backbone) + len(head), len(backbone))


def group_of(layer: str, groups: Mapping[str, str]) -> str:
    """The group of one top-level layer: a stage by its name, else as ``groups`` says, else :data:`MODEL`."""
    return STAGES.get(layer) or groups.get(layer, MODEL)


def ordered(names: Sequence[str] | set[str]) -> list[str]:
    """Group names in :data:`ORDER`; names it does not know after them, sorted."""
    known = [g for g in ORDER if g in names]
    return known + sorted(set(names) - set(ORDER))
