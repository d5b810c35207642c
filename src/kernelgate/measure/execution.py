"""How a configuration runs: eager, CUDA-graph replay or ``torch.compile``, at its precision.

A :class:`Runner` holds the step that is timed and profiled, the module whose submodules get
``kg/<name>`` ranges while profiling, and, for CUDA graphs, the eager step whose profile names
the replayed kernels (see :mod:`kernelgate.measure.graphs` for why attribution works that way).

- eager: ``net(x)`` as users call it; ``amp-*`` precisions under ``torch.autocast``.
- graph: ``torch.cuda.CUDAGraph`` captured once after warm-up; the step copies the input into
  the captured buffer and replays (autocast's weight-cast cache is off during capture, as
  torch's CUDA-graph docs require).
- compile: ``torch.compile(net)`` (inductor, default mode), compiled by the warm-up before
  timing starts. Inductor fuses operations across layers, so a Triton kernel has no single
  layer: the kernels of the compiled forward are one layer, ``compiled``, and gated per kernel
  with names normalized past inductor's counters (``attribute.normalize_kernel_name``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernelgate.measure.hosttime import stage
from kernelgate.models.yolo import YoloSpec

COMPILED = "compiled"
WARMUP = 3


@dataclass(frozen=True)
class Runner:
    step: Callable[[], None]
    net: Any
    hook_step: bool = True  # put kg/ ranges on net's submodules while profiling the step
    reference: Callable[[], None] | None = None  # graph mode: the eager step that names the kernels
    extra_layers: tuple[tuple[str, str], ...] = ()  # layers the step adds: (name, type)
    pipeline: Any | None = None  # stage = pipeline: the kernelgate.measure.stages.Pipeline (box counts)


def eager(torch: Any, net: Any, host_input: Any, device: str) -> Runner:
    """``net(input)`` as it is, with the input copied to ``device`` in each step."""
    return Runner(_input_step(torch, net, host_input, device), net)


def _autocast(torch: Any, spec: YoloSpec, device: str, *, cache: bool = True) -> Callable[[], Any]:
    if spec.autocast is None:
        return contextlib.nullcontext
    dtype = getattr(torch, spec.autocast)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    return lambda: torch.autocast(kind, dtype=dtype, cache_enabled=cache)


def _sync(torch: Any, device: str) -> Callable[[], None]:
    return torch.cuda.synchronize if device.startswith("cuda") else lambda: None


def _input_step(
    torch: Any, forward: Callable[[Any], Any], host_input: Any, device: str
) -> Callable[[], None]:
    sync = _sync(torch, device)

    def step() -> None:
        with stage(torch.profiler.record_function, "input"):
            x = host_input.to(device, non_blocking=True)
        forward(x)
        sync()

    return step


def prepare(torch: Any, net: Any, spec: YoloSpec, device: str, host_input: Any) -> Runner:
    """The runner for ``spec`` (``net`` already built at its precision and memory format)."""
    if spec.mode == "graph" and not device.startswith("cuda"):
        raise ValueError(f"{spec.id}: CUDA-graph mode needs a CUDA GPU (running on {device})")
    autocast = _autocast(torch, spec, device, cache=spec.mode != "graph")

    def eager_forward(x: Any) -> Any:
        with autocast():
            return net(x)

    if spec.mode == "graph":
        return _graph(torch, net, eager_forward, device, host_input)
    forward = eager_forward
    extra: tuple[tuple[str, str], ...] = ()
    stages = None
    hook = True
    if spec.mode == "compile":
        compiled = torch.compile(net)
        record = torch.profiler.record_function

        def forward(x: Any) -> Any:
            with stage(record, COMPILED), autocast():
                return compiled(x)

        extra, hook = ((COMPILED, "torch.compile"),), False
    if spec.stage == "pipeline":
        from kernelgate.measure.stages import STAGE_TYPES, pipeline

        stages = pipeline(torch, net, spec.imgsz, spec.batch, device, getattr(torch, spec.dtype))
        step = stages.step(forward, _sync(torch, device))
        extra += tuple(STAGE_TYPES.items())
    else:
        step = _input_step(torch, forward, host_input, device)
    with torch.no_grad():
        for _ in range(WARMUP):  # compiles (compile mode) and settles allocator and cuDNN choices
            step()
    return Runner(step, net, hook, extra_layers=extra, pipeline=stages)


def _graph(torch: Any, net: Any, eager_forward: Callable[[Any], Any], device: str, host_input: Any) -> Runner:
    reference = _input_step(torch, eager_forward, host_input, device)
    with torch.no_grad():
        static_in = host_input.to(device)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                eager_forward(static_in)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            eager_forward(static_in)
        torch.cuda.synchronize()

    def step() -> None:
        with stage(torch.profiler.record_function, "input"):
            static_in.copy_(host_input, non_blocking=True)
        graph.replay()
        torch.cuda.synchronize()

    with torch.no_grad():
        for _ in range(WARMUP):
            reference()
            step()
    return Runner(step, net, False, reference=reference)
