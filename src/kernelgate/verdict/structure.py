"""What a forward launches, module by module, and whether that changed: host-independent evidence.

Timings move between hosts of one GPU model (a few % per layer, tens of % on host-coupled work), so
a small slowdown can hide in the screen against a baseline another host recorded. What a forward
*launches* does not move between hosts: which kernels each module runs, how often per forward and
with which grid. A change there (an added ``.add``, nearest -> bilinear upsampling, cuDNN switched
off, SiLU unfused; on the host side a new synchronisation or device-to-host copy in a layer:
:mod:`kernelgate.measure.hosttime`) is a structural change, seen on any runner, however small its time.

One exception is not structural: the convolution and matrix-multiply engines (cuDNN, cuBLAS(Lt),
CUTLASS, nvjet, ...) pick their algorithm per process and per GPU, and an algorithm may bring its
own layout transforms or split-K reduction (one kernel or three). Within a module these *engine*
kernels count as one opaque group: present or not. The committed H100 and H200 baselines launch
different nvjet kernels in 42 modules of yolo11n fp16, and the same signatures by this rule.

Two more choices of that kind, seen in the full matrix on both GPUs:

- A GEMM algorithm may zero its workspace first: the H100's nvjet pick for model.15's conv of yolov8n
  fp16 at batch 8 launches a ``Memset`` beside it, the H200's does not. A memset in a module with
  engine kernels belongs to the engine group; one that no module launched (a CUDA-graph replay's
  memset node) is left out, since it names no layer.
- Inductor (torch.compile) autotunes a Triton kernel's block size by timing a few configurations in
  the process, so the grid of a ``triton_`` kernel is its pick: yolov8n fp16 compiled ran
  ``triton_per_fused_max_pool2d_with_indices`` on a 6400x1x1 grid on the H100, 400x1x1 on the H200.
  For Triton kernels only their presence and launches count.

A kernel whose launches per forward are not a whole number (the rounds of a baseline disagree) is
not steady, and is left out on both sides. The grids of the pipeline's ``postprocess`` (NMS) follow
the number of candidate boxes, that is the data: only its kernels and launches count.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kernelgate.config import Scope
from kernelgate.measure import hosttime
from kernelgate.measure.results import KernelStat, Measurement

# kernels of the convolution and GEMM engines: their choice is per process and per GPU, not per change
ENGINE = re.compile(
    r"cudnn|cutlass|xmma|nvjet|cublas|gemm|gemv|implicit_convolve|conv2d_c1_k1|conv_depthwise|"
    r"splitK|winograd|fft|nchwToNhwc|nhwcToNchw",
    re.IGNORECASE,
)
ENGINE_KERNELS = "conv/GEMM engine kernels"
DATA_DEPENDENT_GRIDS = frozenset({"postprocess"})  # layers whose grids follow the data
MEMSET = re.compile(r"^Memset\b", re.IGNORECASE)  # the profiler's name of a cudaMemset(Async) on the GPU
UNATTRIBUTED = "(unattributed)"
AUTOTUNED = re.compile(r"^triton_")  # Inductor's kernels: their block size (grid) is timed per process


# a few hundred kernel names, each looked up twice per measurement and comparison: cached, since the
# case-blind search of long CUDA names is the slow part of comparing two baselines
@functools.lru_cache(maxsize=8192)
def is_engine(name: str) -> bool:
    return ENGINE.search(name) is not None


@dataclass(frozen=True)
class Change:
    """One structural change of one module, between a base and a current measurement."""

    layer: str
    module: str
    what: str  # "new", "gone", "launches", "grid", "engine", "waits" (the host's, in the layer)
    kernel: str
    before: str
    after: str

    def describe(self) -> str:
        short = self.kernel if len(self.kernel) <= 60 else self.kernel[:59] + "…"
        if self.what == "new":
            return f"new {short} in {self.module}, {self.after} a forward"
        if self.what == "gone":
            return f"gone {short} from {self.module}, was {self.before} a forward"
        if self.what == "launches":
            return f"{short} in {self.module}: {self.before} -> {self.after} launches a forward"
        if self.what == "grid":
            return f"{short} in {self.module}: grid {self.before} -> {self.after}"
        if self.what == "waits":
            return f"{self.module} on the host: {self.kernel} {self.before} -> {self.after} a forward"
        return f"{self.module}: {ENGINE_KERNELS} {self.before} -> {self.after}"


@dataclass(frozen=True)
class _Entry:
    layer: str
    calls: float
    grid: str


def signature(m: Measurement) -> dict[tuple[str, str], _Entry]:
    """(module, kernel) -> launches per forward and grid, engine kernels folded into one per module."""
    out: dict[tuple[str, str], _Entry] = {}
    engines = {k.module for k in m.kernels if is_engine(k.name)}
    for k in m.kernels:
        memset = MEMSET.match(k.name) is not None
        if memset and k.module == UNATTRIBUTED:
            continue
        if is_engine(k.name) or (memset and k.module in engines):
            key = (k.module, ENGINE_KERNELS)
            out[key] = _Entry(k.layer, 1.0, "")
            continue
        out[(k.module, k.name)] = _Entry(k.layer, k.calls, _grid(k))
    return out


def _grid(k: KernelStat) -> str:
    if not k.launch or k.layer in DATA_DEPENDENT_GRIDS or AUTOTUNED.match(k.name):
        return ""
    return str(k.launch.get("grid", ""))


def changes(base: Measurement, current: Measurement) -> tuple[Change, ...]:
    """The steady structural changes from ``base`` to ``current``, in the current forward's order."""
    before, after = signature(base), signature(current)
    found: list[Change] = []
    for (module, kernel), now in after.items():
        was = before.get((module, kernel))
        if not hosttime.whole(now.calls) or (was is not None and not hosttime.whole(was.calls)):
            continue
        engine = kernel == ENGINE_KERNELS
        if was is None:
            what, b, a = ("engine", "absent", "present") if engine else ("new", "", _n(now.calls))
            found.append(Change(now.layer, module, what, kernel, b, a))
        elif round(was.calls) != round(now.calls):
            found.append(Change(now.layer, module, "launches", kernel, _n(was.calls), _n(now.calls)))
        elif was.grid and now.grid and was.grid != now.grid:
            found.append(Change(now.layer, module, "grid", kernel, was.grid, now.grid))
    for (module, kernel), was in before.items():
        if (module, kernel) in after or not hosttime.whole(was.calls) or round(was.calls) == 0:
            continue
        engine = kernel == ENGINE_KERNELS
        what, b, a = ("engine", "present", "absent") if engine else ("gone", _n(was.calls), "")
        found.append(Change(was.layer, module, what, kernel, b, a))
    if base.host_layers and current.host_layers:  # records before the host side existed have none
        for layer, waits in hosttime.sync_changes(base.host_calls, current.host_calls).items():
            found += [Change(layer, layer, "waits", name, str(b), str(a)) for name, b, a in waits]
    return tuple(found)


def confirmed(base: Sequence[Measurement], head: Sequence[Measurement]) -> tuple[Change, ...]:
    """The structural changes between every base process and every head process of a same-host A/B:
    what the head's code launches and the base's does not, in each process of each side. A change
    seen between some processes only (a launch count the data decides, a kernel one process picked)
    is the runner's, and is not among them."""
    if not base or not head:
        return ()
    pairs = [changes(b, h) for b in base for h in head]
    common = set(pairs[0]).intersection(*pairs[1:])
    return tuple(c for c in pairs[0] if c in common)


def figures(found: Sequence[Change]) -> frozenset[tuple[Scope, str]]:
    """The judged figures the changes concern, as (scope, layer): a change of waits on the host
    concerns the layer's host time, any other its GPU time."""
    return frozenset((Scope.HOST if c.what == "waits" else Scope.LAYER, c.layer) for c in found)


def _n(calls: float) -> str:
    return str(round(calls))


def by_layer(found: tuple[Change, ...]) -> Mapping[str, str]:
    """Layer -> what changed in it (for the origin of a regression and the messages)."""
    out: dict[str, list[str]] = {}
    for change in found:
        out.setdefault(change.layer, []).append(change.describe())
    return {layer: "; ".join(items) for layer, items in out.items()}


def summary(found: tuple[Change, ...], limit: int = 3) -> str:
    """One line: the first ``limit`` changes and how many more."""
    shown = [c.describe() for c in found[:limit]]
    more = len(found) - limit
    return "; ".join(shown) + (f"; {more} more" if more > 0 else "")
