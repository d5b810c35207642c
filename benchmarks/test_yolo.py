"""Per-layer kernel gate for Ultralytics YOLO detection models (built from yaml, random weights)."""

from __future__ import annotations

from typing import Any


def test_yolo(kernelgate: Any, yolo_case: tuple[str, str, int, int]) -> None:
    model, precision, batch, imgsz = yolo_case
    result = kernelgate.yolo(model=model, precision=precision, batch=batch, imgsz=imgsz)
    # The sum over layers (buckets included) is the total device time of every iteration.
    layers = sum(layer.time.median for layer in result.measurement.layers)
    assert result.measurement.layers, "no layer was measured"
    assert result.measurement.total.median > 0
    assert abs(
        sum(sum(lay.time.samples) for lay in result.measurement.layers)
        - sum(result.measurement.total.samples)
    ) < 1e-3 * max(1.0, layers)
