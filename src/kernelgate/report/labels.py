"""How names and numbers are shown in the published reports (Markdown, HTML, JSON hints)."""

from __future__ import annotations

import enum
import re
from typing import Any

from kernelgate.verdict.compare import Delta

DASH = "—"


def kernel_label(name: str) -> str:
    """``at::native::batch_norm_transform_input_kernel<c10::Half, …>`` -> its plain name."""
    head = name.split("<", 1)[0].strip()
    return head.rsplit("::", 1)[-1] or name


def module_label(module: str, layer: str) -> str:
    """``model.2.cv1.bn`` in layer ``model.2`` -> ``cv1.bn``; the layer itself stays as it is."""
    if module.startswith(layer + "."):
        return module[len(layer) + 1 :]
    return module


def us(value: float | None) -> str:
    return DASH if value is None else f"{value:.1f} µs"


def signed_us(value: float | None) -> str:
    return DASH if value is None else f"{value:+.1f} µs"


def pct(value: float | None) -> str:
    return DASH if value is None else f"{value:+.1f} %"


def calls(value: float | None) -> str:
    return DASH if value is None else f"{value:g}"


def p_value(delta: Delta) -> str:
    """The significance of a delta where the verdict provides one (``p_value``), else a dash."""
    value: Any = getattr(delta, "p_value", None)
    if value is None:
        return DASH
    value = float(value)
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def verdict(value: enum.Enum) -> str:
    """Any verdict, also one this module does not know, by its value."""
    return str(value.value)


def threshold(delta: Delta) -> str:
    return f"{100 * delta.threshold.rel:g} % / {delta.threshold.floor_us:g} µs"


def cudnn_version(raw: str) -> str:
    """torch.backends.cudnn.version(): 91900 -> 9.19.0 (cuDNN 9), 8907 -> 8.9.7 (cuDNN 8)."""
    if not re.fullmatch(r"\d+", raw):
        return raw
    v = int(raw)
    if v >= 90000:
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 100}.{v % 100}"
