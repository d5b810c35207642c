"""The host side of a comparison: what the user waits for besides the GPU.

Each layer's host time (:mod:`kernelgate.measure.hosttime`), a new wait for the device in a layer (a
structural change of the host side, REGRESSED by itself with ``fail_on_sync``), and the end-to-end
latency of a step (pytest-benchmark's rounds). Their thresholds are their own and never tighter than
the device side's (:meth:`kernelgate.config.GateConfig.threshold`)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import replace

from kernelgate.config import GateConfig, Scope, Threshold
from kernelgate.measure import hosttime
from kernelgate.measure.results import Measurement
from kernelgate.verdict.delta import Comparison, Delta, Judge, Verdict, by_layer, matched, pair

DEVICE_SCOPES = (Scope.TOTAL, Scope.LAYER, Scope.KERNEL)


class Side(enum.Enum):
    """Where a failing comparison got slower: on the device, on the host, or both."""

    GPU = "GPU-side"
    HOST = "host-side"
    BOTH = "host- and GPU-side"


def label(where: Side, arch: str) -> str:
    """``where`` as a report says it: on a CPU run (keys ``cpu-…``) the profiled "kernels" are the
    outermost CPU operators, so their side is the operators', not a GPU's."""
    return where.value.replace("GPU", "operator") if arch.startswith("cpu-") else where.value


def side(comparison: Comparison) -> Side | None:
    """Where the failures of ``comparison`` are (None: nothing fails, or only a cold start)."""
    scopes = {d.scope for d in comparison.failures}
    device = any(s in scopes for s in DEVICE_SCOPES)
    host = Scope.HOST in scopes or (Scope.WALL in scopes and not device)
    if device and host:
        return Side.BOTH
    return Side.GPU if device else Side.HOST if host else None


def deltas(
    baseline: Measurement,
    current: Measurement,
    config: GateConfig,
    limit: Callable[[Scope, str], Threshold],
    judge: Judge,
) -> list[Delta]:
    """What the user waits for besides the GPU: each layer's host time, a new wait for the device in a
    layer (a structural change of the host side: REGRESSED by itself with ``fail_on_sync``), and the
    end-to-end latency of a step. Records from before the host side was measured have none."""
    out = []
    if baseline.wall.n and current.wall.n:
        out.append(pair(Scope.WALL, "wall", ("", baseline.wall, None), ("", current.wall, None),
                         limit(Scope.WALL, "wall"), judge))  # fmt: skip
    if not (baseline.host_layers and current.host_layers):
        return out
    host = matched(
        Scope.HOST,
        by_layer(baseline.host_layers),
        by_layer(current.host_layers),
        limit,
        judge,
    )
    waits = hosttime.sync_changes(baseline.host_calls, current.host_calls)
    for layer in waits:
        if not any(d.name == layer for d in host):  # a layer with waits but no range of its own
            host.append(
                Delta(Scope.HOST, layer, layer, None, None, limit(Scope.HOST, layer), Verdict.UNCHANGED)
            )
    marked = []
    for d in host:
        found = waits.get(d.name)
        if found:
            more = any(after > before for _, before, after in found)
            what = f"host-side: {'a wait for the device appeared' if more else 'waits changed'}: "
            verdict = Verdict.REGRESSED if more and config.fail_on_sync else d.verdict
            d = replace(d, verdict=verdict, note=what + hosttime.describe(found))
        marked.append(d)
    return [*marked, *out]
