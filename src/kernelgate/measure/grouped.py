"""Time per layer group of a measurement (backbone, neck, head, ...), for the reports."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from kernelgate.measure.results import Dist
from kernelgate.models.groups import group_of, ordered, yaml_groups
from kernelgate.models.matrix import model_name

if TYPE_CHECKING:
    from kernelgate.measure.results import Measurement


def inferred(m: Measurement) -> Measurement:
    """``m`` with the groups of the Ultralytics model its id names, where it has none (a record
    written before groups existed); unchanged where the id names no bundled model or the model's
    layers do not fit the record's."""
    name = model_name(m.benchmark)
    if m.groups or name is None:
        return m
    try:
        found = yaml_groups(name)
    except (ImportError, OSError, KeyError, TypeError):
        return m
    layers = [lay.name for lay in m.layers if lay.name.startswith("model.")]
    if not all(layer in found for layer in layers):
        return m
    return dataclasses.replace(m, groups={layer: found[layer] for layer in layers})


def group_times(m: Measurement) -> dict[str, Dist]:
    """Per group, its layers' times summed per iteration (medians of these are the group's time).

    Groups without a layer are left out; keys are in :data:`ORDER`.
    """
    sums: dict[str, list[float]] = {}
    rounds: dict[str, tuple[int, ...]] = {}
    for lay in m.layers:
        group = group_of(lay.name, m.groups)
        samples = lay.time.samples
        total = sums.setdefault(group, [0.0] * len(samples))
        if len(total) != len(samples):
            raise ValueError(
                f"{m.benchmark}: layer {lay.name} has {len(samples)} samples, others of {group} {len(total)}"
            )
        sums[group] = [a + b for a, b in zip(total, samples, strict=True)]
        rounds.setdefault(group, lay.time.rounds)
    return {g: Dist(tuple(sums[g]), rounds[g]) for g in ordered(set(sums))}
