"""The models under test: Ultralytics YOLO built from its bundled yaml configs (no weights), or
users' own ``.pt`` files (:func:`load_pt`, safe by default).

Also the one deliberate fault the gate must catch: a layer made slower by running its forward
more than once (a real change of the layer's computation, on CPU and GPU alike).
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelgate.attribute import Layers

PRECISIONS = ("fp16", "fp32")
SEED = 0
TRUST_OPTION = "--kernelgate-trust-pt"


class CheckpointError(ValueError):
    """A ``.pt`` file cannot be loaded as asked; the message says why and what to do."""


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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def load_pt(path: Path, *, trust: bool = False, into: Any | None = None) -> Any:
    """The model in the ``.pt`` file ``path``, in eval mode, loaded safely where torch allows it.

    ``torch.load(weights_only=True)`` unpickles only tensors and plain containers, so the file
    cannot run code: that covers a state dict, which is loaded ``into`` the module you built.
    A whole pickled module (``torch.save(model)``) and an Ultralytics checkpoint (``yolov8n.pt``:
    ``{"model": DetectionModel, ...}``) name Python classes, which only ``weights_only=False``
    unpickles, and unpickling can run any code the file carries. That is done only with
    ``trust=True`` (the ``--kernelgate-trust-pt`` option): use it for files you would also import.
    """
    import torch

    if not path.is_file():
        raise CheckpointError(f"{path}: no such file")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if not trust:
            raise CheckpointError(
                f"{path}: torch.load(weights_only=True) refused it ({_first_line(exc)}). The file holds "
                "pickled Python objects, not only tensors, as an Ultralytics checkpoint or a whole saved "
                "module does; unpickling it can run any code the file carries. If you trust the file as "
                f"you would trust code, pass {TRUST_OPTION} (or load_pt(path, trust=True)). Otherwise save "
                "its weights once, where you trust it: torch.save(model.state_dict(), 'weights.pt'), and "
                "load them into the model you build: load_pt(Path('weights.pt'), into=model)."
            ) from exc
        try:
            obj = torch.load(path, map_location="cpu", weights_only=False)
        except Exception as again:
            raise CheckpointError(f"{path}: not a loadable torch file ({_first_line(again)})") from again
    except Exception as exc:
        raise CheckpointError(f"{path}: not a loadable torch file ({_first_line(exc)})") from exc
    return _as_module(path, obj, into)


def _as_module(path: Path, obj: Any, into: Any | None) -> Any:
    import torch

    if into is not None:
        state = obj.state_dict() if isinstance(obj, torch.nn.Module) else obj
        if isinstance(state, Mapping) and isinstance(state.get("state_dict"), Mapping):
            state = state["state_dict"]
        if not isinstance(state, Mapping):
            raise CheckpointError(
                f"{path}: holds a {type(state).__name__}, not a state dict to load into a model"
            )
        try:
            into.load_state_dict(state)
        except RuntimeError as exc:
            raise CheckpointError(f"{path}: the weights do not fit the model: {_first_line(exc)}") from exc
        return into.eval()
    if isinstance(obj, Mapping):  # Ultralytics: {"model": ..., "ema": ..., "optimizer": ..., ...}
        module = next((obj[k] for k in ("ema", "model") if isinstance(obj.get(k), torch.nn.Module)), None)
        if module is None:
            raise CheckpointError(
                f"{path}: a state dict ({len(obj)} entries) has no architecture: build the model, load "
                "the weights into it (load_pt(path, into=model)) and gate it with "
                "kernelgate.module(model, input, layers)"
            )
        obj = module
    if not isinstance(obj, torch.nn.Module):
        raise CheckpointError(f"{path}: holds a {type(obj).__name__}, not a model")
    return obj.float().eval()


def layers_of(model: Any) -> Layers:
    """Top-level layers: ``model.N`` of an Ultralytics model, else the module's direct children."""
    import torch

    from kernelgate.attribute import Layers

    inner = getattr(model, "model", None)
    if isinstance(inner, torch.nn.Sequential):
        return Layers({f"model.{i}": type(layer).__name__ for i, layer in enumerate(inner)})
    return Layers({name: type(child).__name__ for name, child in model.named_children()})


def load_checkpoint(path: Path, spec: YoloSpec, device: str, *, trust: bool) -> tuple[Any, Layers]:
    """The model of ``path`` ready to gate: on ``device``, at ``spec.precision``, no gradients."""
    if spec.precision not in PRECISIONS:
        raise ValueError(f"precision {spec.precision!r}: use one of {PRECISIONS}")
    model = load_pt(path, trust=trust)
    for param in model.parameters():
        param.requires_grad_(False)
    model = model.to(device)
    if spec.precision == "fp16":
        model = model.half()
    return model, layers_of(model)
