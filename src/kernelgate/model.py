"""The models under test: Ultralytics YOLO built from its bundled yaml configs (no weights).

Also the one deliberate fault the gate must catch: a layer made slower by running its forward
more than once (a real change of the layer's computation, on CPU and GPU alike).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelgate.attribute import Layers

PRECISIONS = ("fp16", "fp32")
SEED = 0


@dataclass(frozen=True)
class YoloSpec:
    model: str = "yolov8n"
    precision: str = "fp16"
    batch: int = 1
    imgsz: int = 640

    @property
    def id(self) -> str:
        return f"{self.model}-{self.precision}-bs{self.batch}-{self.imgsz}"


def build_yolo(spec: YoloSpec, device: str) -> tuple[Any, Layers]:
    """A detection model from ``<model>.yaml`` in eval mode on ``device``, with seeded random weights."""
    from kernelgate.attribute import Layers

    model = build_detection_model(spec, device)
    layers = Layers({f"model.{i}": type(layer).__name__ for i, layer in enumerate(model.model)})
    return model, layers


def build_detection_model(spec: YoloSpec, device: str) -> Any:
    """:func:`build_yolo` without the layer table (imports neither pandas nor the profiler: cold starts)."""
    import os

    # ultralytics resolves public DNS names at import to decide whether it is online; a CI gate
    # needs no network, so say so unless the user decided otherwise.
    os.environ.setdefault("YOLO_OFFLINE", "1")
    import torch
    from ultralytics.nn.tasks import DetectionModel

    if spec.precision not in PRECISIONS:
        raise ValueError(f"precision {spec.precision!r}: use one of {PRECISIONS}")
    torch.manual_seed(SEED)
    model: Any = DetectionModel(f"{spec.model}.yaml", verbose=False).eval()  # type: ignore[no-untyped-call]
    for param in model.parameters():
        param.requires_grad_(False)
    model = model.to(device)
    if spec.precision == "fp16":
        model = model.half()
    return model


def make_input(spec: YoloSpec, device: str) -> Any:
    """A seeded host image batch in [0, 1] (pinned for a fast, asynchronous copy to the GPU)."""
    import torch

    gen = torch.Generator().manual_seed(SEED)
    dtype = torch.float16 if spec.precision == "fp16" else torch.float32
    image = torch.rand(spec.batch, 3, spec.imgsz, spec.imgsz, generator=gen).to(dtype)
    return image.pin_memory() if device.startswith("cuda") else image


def find_module(model: Any, name: str) -> Any:
    modules = dict(model.named_modules())
    if name not in modules:
        top = sorted({n.split(".")[0] + "." + n.split(".")[1] for n in modules if n.count(".") >= 1})[:5]
        raise ValueError(f"no module named {name!r} in the model (layers look like {top} ...)")
    return modules[name]


def slow_down(model: Any, name: str, extra_runs: int) -> None:
    """Make module ``name`` run its forward ``1 + extra_runs`` times per call (same output)."""
    module = find_module(model, name)
    original = module.forward

    @functools.wraps(original)
    def slower(*args: Any, **kwargs: Any) -> Any:
        for _ in range(extra_runs):
            original(*args, **kwargs)
        return original(*args, **kwargs)

    module.forward = slower
