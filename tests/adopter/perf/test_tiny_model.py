"""The adopting repository's own kernel benchmark: its model, its layers, the kernelgate fixture."""

from __future__ import annotations

import pytest
import torch
from tinydet import build

from kernelgate.models.layers import Layers

LAYERS = Layers({"0": "Conv2d", "1": "ReLU", "2": "Conv2d"}, {"0": "backbone", "1": "backbone", "2": "head"})


@pytest.mark.parametrize("size", [32, 48])
def test_tiny_model(kernelgate, size: int) -> None:  # type: ignore[no-untyped-def]
    kernelgate.module(build(), torch.rand(1, 3, size, size), LAYERS, name=f"tinydet-fp32-{size}")
