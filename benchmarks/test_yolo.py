"""Per-layer kernel gate for Ultralytics YOLO models (built from yaml, random weights): one test per
configuration of ``[tool.kernelgate.matrix]`` in pyproject.toml (``--kernelgate-matrix full``)."""

from __future__ import annotations

from typing import Any


def test_yolo(kernelgate: Any, kernelgate_case: Any) -> None:
    result = kernelgate.run(kernelgate_case)
    assert result.measurement.layers, "no layer was measured"
    assert result.measurement.total.median > 0
    # The sum over layers (buckets included) is the total device time of every iteration.
    layers = sum(layer.time.median for layer in result.measurement.layers)
    assert abs(
        sum(sum(lay.time.samples) for lay in result.measurement.layers)
        - sum(result.measurement.total.samples)
    ) < 1e-3 * max(1.0, layers)
