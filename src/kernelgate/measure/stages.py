"""The stages around inference, as Ultralytics' predictor runs them: preprocess and postprocess.

Ultralytics reports ``speed = {preprocess, inference, postprocess}``; here each stage is a profiler
range (``kg/preprocess``, ``kg/postprocess``), so its kernels are gated like a layer's.

- preprocess: ``LetterBox`` on the host (OpenCV), stack, copy to the device as uint8, BHWC to
  BCHW, BGR to RGB, cast and divide by 255 (``BasePredictor.preprocess`` of ultralytics 8.4);
- postprocess: ``ultralytics.utils.nms.non_max_suppression`` (torchvision NMS) and
  ``scale_boxes`` back to the original image, on the real images that ultralytics ships
  (``assets/bus.jpg``, ``assets/zidane.jpg``, alternating over the batch).

Weights are random, so every anchor scores about sigmoid(bias) = 1.6e-4: at the predictor's
``conf=0.25`` no box would reach NMS and the stage would measure nothing. The gate runs NMS at
``conf=0``: every anchor enters NMS (8400 per image at 640), the heaviest NMS workload, and the
box count is fixed by the image, the weights' seed and ``max_det``.

ultralytics 8.4 calls ``torchvision.ops.nms`` only where torchvision is already imported, else a
Python-loop NMS of its own (80 ms of GPU time, 420 ms wall per image at conf=0 on the H200:
docs/matrix.md); a predictor process has torchvision imported, so :func:`pipeline` imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelgate.config import HOST_COUPLED
from kernelgate.measure.hosttime import stage

IMAGES = ("bus.jpg", "zidane.jpg")
CONF = 0.0
IOU = 0.7  # the predictor's default (cfg/default.yaml)
MAX_DET = 300
STAGE_TYPES = {"preprocess": "LetterBox+normalize", "postprocess": "NMS"}
# Layers whose time depends on the host more than on the GPU (the H2D copy of the input, CPU-side
# pre/post-processing): across hosts of one GPU model they move by tens of %, so they are judged by
# the same-host A/B alone (kernelgate.verdict.samehost), never by their offset from the baseline,
# with their own threshold; config.HOST_COUPLED names them (tests/test_config.py checks the stages).
__all__ = ["HOST_COUPLED", "IMAGES", "STAGE_TYPES", "Pipeline", "load_images", "pipeline"]


def load_images(batch: int) -> list[Any]:
    """``batch`` BGR uint8 images (numpy HWC) from ultralytics' assets, as cv2.imread reads them."""
    import cv2
    from ultralytics.utils import ASSETS

    images = []
    for name in IMAGES:
        image = cv2.imread(str(ASSETS / name))
        if image is None:
            raise FileNotFoundError(f"{ASSETS / name}: not found or unreadable; reinstall ultralytics")
        images.append(image)
    return [images[i % len(images)] for i in range(batch)]


@dataclass
class Pipeline:
    """Preprocess, run and postprocess one batch; ``boxes`` holds the last box count per image."""

    torch: Any
    imgsz: int
    device: str
    dtype: Any
    end2end: bool
    images: list[Any]
    boxes: list[int] = field(default_factory=list)

    def preprocess(self) -> Any:
        import numpy as np
        from ultralytics.data.augment import LetterBox

        letterbox = LetterBox((self.imgsz, self.imgsz), auto=False, stride=32)
        arrays: list[Any] = [letterbox(image=im) for im in self.images]
        batch = np.stack(arrays) if len(arrays) > 1 else arrays[0][None]
        x = self.torch.from_numpy(batch).to(self.device, non_blocking=True)
        x = x.permute(0, 3, 1, 2).contiguous().flip(1)  # BHWC to BCHW, BGR to RGB
        return x.to(self.dtype).div_(255)

    def postprocess(self, preds: Any, x: Any) -> list[Any]:
        from ultralytics.utils import nms, ops

        found = nms.non_max_suppression(preds, CONF, IOU, max_det=MAX_DET, end2end=self.end2end)
        for det, image in zip(found, self.images, strict=True):
            det[:, :4] = ops.scale_boxes(x.shape[2:], det[:, :4], image.shape)
        self.boxes = [len(det) for det in found]
        return list(found)

    def step(self, forward: Callable[[Any], Any], sync: Callable[[], None]) -> Callable[[], None]:
        """One image batch end to end, each stage in its own ``kg/`` range."""
        record = self.torch.profiler.record_function

        def run() -> None:
            with stage(record, "preprocess"):
                x = self.preprocess()
            preds = forward(x)
            with stage(record, "postprocess"):
                self.postprocess(preds, x)
            sync()

        return run


def pipeline(torch: Any, model: Any, imgsz: int, batch: int, device: str, dtype: Any) -> Pipeline:
    """The stages for an Ultralytics detection model (not RT-DETR: its postprocess is not NMS)."""
    head = type(model.model[-1]).__name__ if hasattr(model, "model") else type(model).__name__
    if head == "RTDETRDecoder" or not hasattr(model, "stride"):
        raise ValueError(
            f"the pipeline stage needs a YOLO detection model with NMS postprocessing; {head} has none. "
            "Gate its inference only (stage = inference)."
        )
    import torchvision  # noqa: F401  (ultralytics' NMS uses torchvision only once it is imported)

    end2end = bool(getattr(model, "end2end", False) or getattr(model.model[-1], "end2end", False))
    return Pipeline(torch, imgsz, device, dtype, end2end, load_images(batch))
