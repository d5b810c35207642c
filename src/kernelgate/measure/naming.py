"""Short names of kernels and modules, as every report shows them."""

from __future__ import annotations


def kernel_label(name: str) -> str:
    """``at::native::batch_norm_transform_input_kernel<c10::Half, …>`` -> its plain name."""
    head = name.split("<", 1)[0].strip()
    return head.rsplit("::", 1)[-1] or name


def module_label(module: str, layer: str) -> str:
    """``model.2.cv1.bn`` in layer ``model.2`` -> ``cv1.bn``; the layer itself stays as it is."""
    if module.startswith(layer + "."):
        return module[len(layer) + 1 :]
    return module
