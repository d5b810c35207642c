"""The adopting repository's own kernel benchmark: its model, its layers, the kernelgate fixture."""

from __future__ import annotations

import torch
from kernelgate.models.layers import Layers
from tinydet import build


def test_tiny_model(kernelgate) -> None:  # type: ignore[no-untyped-def]
    layers = Layers({"0": "Conv2d", "1": "ReLU", "2": "Conv2d"}, {"0": "backbone", "1": "backbone", "2": "head"})
    kernelgate.module(build(), torch.rand(1, 3, 32, 32), layers, name="tinydet-fp32")
