"""One round of a benchmark: profile the step, attribute every kernel to its layer, build the record.

What the ``kernelgate`` fixture (and a confirm run) measures; it compares nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelgate.machine import fingerprint, identity, software, state
from kernelgate.measure import aggregate, attribute, hosttime, integrity, profile, trace
from kernelgate.measure import results as measure
from kernelgate.models.layers import Layers

if TYPE_CHECKING:
    from kernelgate.measure.execution import Runner

# 24 profiled steps on a GPU: 6 record iterations of 4 placements (kernelgate.measure.placement)
GPU_SCHEDULE = profile.Schedule(wait=1, warmup=2, active=24)


CPU_SCHEDULE = profile.Schedule(wait=1, warmup=1, active=5)


GPU_ROUNDS = 50


CPU_ROUNDS = 10


REFERENCE_SCHEDULE = profile.Schedule(wait=1, warmup=1, active=2)


def measure_module(
    torch: Any,
    runner: Runner,
    layers: Layers,
    *,
    bench_id: str,
    device: str,
    schedule: profile.Schedule,
    wall_us: list[float],
    trace_path: Path,
    between: Callable[[], None] | None = None,
) -> measure.Measurement:
    """Profile, attribute and aggregate one round; read the GPU's state through NVML after it, and
    the host's fingerprint. ``between`` runs before each step whose host times are taken, untimed.

    The record carries the reasons it cannot be trusted, if any (:mod:`kernelgate.measure.integrity`).
    """
    gpu = device.startswith("cuda")
    extra: list[str] = []
    host_us = hosttime.layer_host_us(
        runner.step, runner.net if runner.hook_step else None, layers, schedule.active, between
    )
    profile.run(runner.step, runner.net if runner.hook_step else None, gpu=gpu, schedule=schedule,
                trace_path=trace_path)  # fmt: skip
    gpu_state = state.gpu_state() if gpu else {}
    parsed = trace.parse(trace_path, gpu=gpu)
    frame = attribute.attribute(parsed, layers)
    if runner.reference is not None:  # a CUDA-graph replay: name its kernels after an eager pass
        from kernelgate.measure import graphs

        eager_path = trace_path.with_name(trace_path.stem + ".eager.json")
        profile.run(runner.reference, runner.net, gpu=gpu, schedule=REFERENCE_SCHEDULE, trace_path=eager_path)
        reference = attribute.attribute(trace.parse(eager_path, gpu=gpu), layers)
        frame, share = graphs.label_replay(frame, reference)
        unmatched = graphs.unmatched_reason(share)
        if unmatched:
            extra.append(unmatched)
    result = aggregate.build(
        frame,
        benchmark=bench_id,
        arch=identity.torch_arch_key(torch, device),
        device=device,
        iterations=len(parsed.steps),
        wall_us=wall_us,
        environment=software.collect(torch, device),
        unlinked=parsed.unlinked,
        gpu_states=(gpu_state,) if gpu_state else (),
        groups=layers.groups,
        host_us=host_us,
        host_calls=hosttime.sync_calls(parsed, layers),
    )
    reasons = integrity.check_profile(parsed, frame, schedule.active, gpu) + integrity.check_record(result)
    host = fingerprint.this_round(result.environment, gpu)
    return dataclasses.replace(result, unreliable_reasons=tuple(reasons + extra), hosts=(host,))
