"""Aggregate attributed activities of one round into its :class:`~kernelgate.measure.results.Measurement`:
per iteration, the total, the device-busy time, each layer and each kernel (with its launches and
launch facts), and the host side of each layer (:mod:`kernelgate.measure.hosttime`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kernelgate.measure.results import Dist, KernelStat, LayerStat, Measurement

if TYPE_CHECKING:
    import pandas as pd


def _per_iteration(series: pd.Series[float], iterations: int) -> Dist:
    return Dist(tuple(float(v) for v in series.reindex(range(iterations), fill_value=0.0)))


def build(
    frame: pd.DataFrame,
    *,
    benchmark: str,
    arch: str,
    device: str,
    iterations: int,
    wall_us: Sequence[float],
    environment: Mapping[str, str],
    unlinked: int = 0,
    gpu_states: tuple[Mapping[str, str], ...] = (),
    groups: Mapping[str, str] | None = None,
    host_us: Mapping[str, Sequence[float]] | None = None,
    host_calls: Mapping[str, Mapping[str, float]] | None = None,
) -> Measurement:
    """Aggregate attributed activities (see :func:`kernelgate.measure.attribute.attribute`) per iteration.

    ``groups`` (layer -> group, :attr:`kernelgate.models.layers.Layers.groups`) is kept for the layers
    that ran; ``host_us`` (layer -> host time per iteration) and ``host_calls`` (layer -> waiting or
    copying runtime calls per iteration) come from :mod:`kernelgate.measure.hosttime`."""
    import pandas as pd

    from kernelgate.measure.attribute import busy_us

    total = _per_iteration(frame.groupby("iteration")["dur_us"].sum(), iterations)
    busy = _per_iteration(busy_us(frame), iterations)

    order = frame.groupby("layer")["start_us"].min().sort_values().index
    layer_types = frame.drop_duplicates("layer").set_index("layer")["layer_type"]
    per_layer = frame.groupby(["layer", "iteration"])["dur_us"].sum()
    layers = tuple(
        LayerStat(str(name), str(layer_types[name]), _per_iteration(per_layer[name], iterations))
        for name in order
    )

    known = groups or {}
    keys = ["layer", "module", "kernel"]
    # one pass over the frame: per kernel (first-launch order) its time per iteration, its launches and
    # the launch facts of its first launch (a per-kernel groupby took seconds per benchmark)
    first = frame.drop_duplicates(keys)
    calls = frame.groupby(keys, sort=False).size()
    table = (
        frame.groupby([*keys, "iteration"], sort=False)["dur_us"]
        .sum()
        .unstack("iteration", fill_value=0)
        .reindex(columns=range(iterations), fill_value=0.0)
    )
    order = pd.MultiIndex.from_frame(first[keys])
    table, calls = table.reindex(order), calls.reindex(order)
    kernels = []
    rows = first.to_dict("records")
    for row, samples, count in zip(rows, table.to_numpy(), calls.to_numpy(), strict=True):
        launch = (
            {
                "grid": row["grid"],
                "block": row["block"],
                "registers": int(row["registers"]),
                "shared_memory": int(row["shared_memory"]),
                "occupancy_pct": float(row["occupancy_pct"]),
            }
            if row["grid"]
            else {}
        )
        kernels.append(
            KernelStat(
                layer=str(row["layer"]),
                module=str(row["module"]),
                name=str(row["kernel"]),
                time=Dist(tuple(float(v) for v in samples)),
                calls=int(count) / iterations,
                launch=launch,
            )
        )
    return Measurement(
        benchmark=benchmark,
        arch=arch,
        device=device,
        iterations=iterations,
        total=total,
        busy=busy,
        wall=Dist(tuple(float(w) for w in wall_us)),
        layers=layers,
        kernels=tuple(kernels),
        environment=environment,
        unlinked=unlinked,
        gpu_states=gpu_states,
        groups={lay.name: known[lay.name] for lay in layers if lay.name in known},
        host_layers=tuple(
            LayerStat(name, str(layer_types.get(name, "")), Dist(tuple(float(v) for v in times)))
            for name, times in (host_us or {}).items()
        ),
        host_calls={layer: dict(calls) for layer, calls in (host_calls or {}).items()},
    )
