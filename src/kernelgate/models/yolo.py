"""The models under test: Ultralytics YOLO built from its bundled yaml configs (no weights), or
users' own ``.pt`` files (:func:`load_pt`, safe by default).

Also the one deliberate fault the gate must catch: a layer made slower by running its forward
more than once (a real change of the layer's computation, on CPU and GPU alike).
"""

from __future__ import annotations

import functools
import pickle
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelgate.models.layers import Layers

# fp16/bf16: weights and input cast (``model.half()``); amp-*: fp32 weights under torch.autocast.
PRECISIONS = ("fp32", "fp16", "bf16", "amp-fp16", "amp-bf16")
MODES = ("eager", "graph", "compile")
STAGES = ("inference", "pipeline")
SEED = 0
TRUST_OPTION = "--kernelgate-trust-pt"


class CheckpointError(ValueError):
    """A ``.pt`` file cannot be loaded as asked; the message says why and what to do."""


@dataclass(frozen=True)
class YoloSpec:
    """One configuration of the matrix: what model, how it runs, and what part of inference.

    ``model`` is an Ultralytics yaml name (``yolov8n``, ``yolo26n``, ``rtdetr-l``), a path to a
    custom ``.yaml`` or a ``.pt`` file, or ``package.module:factory`` (any ``nn.Module``; ``shape``
    then gives one input's shape, default ``(3, imgsz, imgsz)``).
    """

    model: str = "yolov8n"
    precision: str = "fp16"
    batch: int = 1
    imgsz: int = 640
    mode: str = "eager"
    stage: str = "inference"
    channels_last: bool = False
    fuse: bool = False
    shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        for value, allowed, what in (
            (self.precision, PRECISIONS, "precision"),
            (self.mode, MODES, "mode"),
            (self.stage, STAGES, "stage"),
        ):
            if value not in allowed:
                raise ValueError(f"{what} {value!r}: use one of {', '.join(allowed)}")
        if self.mode == "graph" and self.stage == "pipeline":
            raise ValueError(
                "mode graph with stage pipeline: NMS has data-dependent shapes, which a CUDA graph cannot "
                "capture; gate graph mode with stage = inference"
            )
        if self.batch < 1 or self.imgsz < 32:
            raise ValueError(f"batch {self.batch}, imgsz {self.imgsz}: need batch >= 1 and imgsz >= 32")

    @property
    def name(self) -> str:
        """The model's short name: the yaml/.pt file stem or the factory's name."""
        if is_factory(self.model):
            return self.model.rpartition(":")[2]
        return Path(self.model).stem if Path(self.model).suffix in (".yaml", ".yml", ".pt") else self.model

    @property
    def id(self) -> str:
        """Stable benchmark id: ``yolov8n-fp16-bs1-640`` plus one suffix per non-default axis."""
        size = "x".join(map(str, self.shape)) if self.shape else str(self.imgsz)
        parts = [self.name, self.precision, f"bs{self.batch}", size]
        parts += ["cl"] if self.channels_last else []
        parts += ["fused"] if self.fuse else []
        parts += [self.mode] if self.mode != "eager" else []
        parts += [self.stage] if self.stage != "inference" else []
        return "-".join(parts)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return (self.batch, *(self.shape or (3, self.imgsz, self.imgsz)))

    @property
    def autocast(self) -> str | None:
        """The autocast dtype name (``float16``/``bfloat16``) of an ``amp-*`` precision, else None."""
        return {"amp-fp16": "float16", "amp-bf16": "bfloat16"}.get(self.precision)

    @property
    def dtype(self) -> str:
        """The dtype of the weights and the input tensor."""
        return {"fp16": "float16", "bf16": "bfloat16"}.get(self.precision, "float32")


def is_factory(model: str) -> bool:
    """``package.module:factory`` (not a file path)."""
    return re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", model) is not None


def build_yolo(spec: YoloSpec, device: str) -> tuple[Any, Layers]:
    """The model of ``spec`` in eval mode on ``device``, at its precision and memory format, with
    seeded random weights (yaml), the file's weights (.pt, see :func:`load_pt`) or the factory's."""
    model = build_detection_model(spec, device)
    return model, layers_of(model)


def _from_factory(text: str) -> Any:
    import importlib

    import torch

    module_name, _, attr = text.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"model {text!r}: cannot import {attr!r} from {module_name!r} ({exc}); give "
            "'package.module:factory' where factory() returns a torch.nn.Module, importable from the rootdir"
        ) from exc
    net = factory()
    if not isinstance(net, torch.nn.Module):
        raise ValueError(
            f"model {text!r}: the factory returned a {type(net).__name__}, not a torch.nn.Module"
        )
    return net


def _from_yaml(spec: YoloSpec) -> Any:
    from ultralytics.nn.tasks import DetectionModel, RTDETRDetectionModel

    yaml = spec.model if Path(spec.model).suffix in (".yaml", ".yml") else f"{spec.model}.yaml"
    cls = RTDETRDetectionModel if spec.name.startswith("rtdetr") else DetectionModel
    model: Any = cls(yaml, verbose=False)  # type: ignore[no-untyped-call]
    if model.yaml.get("end2end"):  # YOLO26: the NMS-free one-to-one head, as its trained checkpoints run
        model.end2end = True
    return model


def build_detection_model(spec: YoloSpec, device: str, *, trust: bool = False) -> Any:
    """:func:`build_yolo` without the layer table (imports neither pandas nor the profiler: cold starts)."""
    import os

    # ultralytics resolves public DNS names at import to decide whether it is online; a CI gate
    # needs no network, so say so unless the user decided otherwise.
    os.environ.setdefault("YOLO_OFFLINE", "1")
    import torch

    torch.manual_seed(SEED)
    if spec.model.endswith(".pt"):
        model: Any = load_pt(Path(spec.model), trust=trust)
    elif is_factory(spec.model):
        model = _from_factory(spec.model)
    else:
        model = _from_yaml(spec)
    model = model.eval()
    if spec.fuse:
        if not hasattr(model, "fuse"):
            raise ValueError(
                f"{spec.id}: fuse needs an Ultralytics model (model.fuse()); {spec.model} has none"
            )
        model = model.fuse(verbose=False)
    for param in model.parameters():
        param.requires_grad_(False)
    model = model.to(device, dtype=getattr(torch, spec.dtype))
    if spec.channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model


def make_input(spec: YoloSpec, device: str) -> Any:
    """A seeded host image batch in [0, 1] (pinned for a fast, asynchronous copy to the GPU)."""
    import torch

    gen = torch.Generator().manual_seed(SEED)
    image = torch.rand(*spec.input_shape, generator=gen).to(getattr(torch, spec.dtype))
    if spec.channels_last:
        image = image.contiguous(memory_format=torch.channels_last)
    return image.pin_memory() if device.startswith("cuda") else image


def find_module(model: Any, name: str) -> Any:
    modules = dict(model.named_modules())
    if name not in modules:
        top = sorted({n.split(".")[0] + "." + n.split(".")[1] for n in modules if n.count(".") >= 1})[:5]
        raise ValueError(f"no module named {name!r} in the model (layers look like {top} ...)")
    return modules[name]


def slow_down(model: Any, name: str, extra_runs: int) -> None:
    """Make module ``name`` run its forward ``1 + extra_runs`` times per call (same output).

    The slower forward is a method bound to the module, so that ``copy.deepcopy`` binds a copy's to
    the copy (kernelgate.measure.placement measures copies): a closure over the module's bound forward
    would run the first copy's weights in every copy."""
    module = find_module(model, name)
    original = module.forward
    func = original.__func__ if getattr(original, "__self__", None) is module else None

    def slower(self: Any, *args: Any, **kwargs: Any) -> Any:
        run = functools.partial(func, self) if func is not None else original
        for _ in range(extra_runs):
            run(*args, **kwargs)
        return run(*args, **kwargs)

    module.forward = types.MethodType(slower, module)


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

    from kernelgate.models.groups import groups_of
    from kernelgate.models.layers import Layers

    inner = getattr(model, "model", None)
    if isinstance(inner, torch.nn.Sequential):
        types = {f"model.{i}": type(layer).__name__ for i, layer in enumerate(inner)}
    else:
        types = {name: type(child).__name__ for name, child in model.named_children()}
    return Layers(types, groups_of(model))


def load_checkpoint(path: Path, spec: YoloSpec, device: str, *, trust: bool) -> tuple[Any, Layers]:
    """The model of ``path`` ready to gate: on ``device``, at ``spec.precision``, no gradients."""
    from dataclasses import replace

    model = build_detection_model(replace(spec, model=str(path)), device, trust=trust)
    return model, layers_of(model)
