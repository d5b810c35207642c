"""The software a measurement ran on: versions as people read them."""

from __future__ import annotations

import re


def cudnn_version(raw: str) -> str:
    """torch.backends.cudnn.version(): 91900 -> 9.19.0 (cuDNN 9), 8907 -> 8.9.7 (cuDNN 8)."""
    if not re.fullmatch(r"\d+", raw):
        return raw
    v = int(raw)
    if v >= 90000:
        return f"{v // 10000}.{v % 10000 // 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 100}.{v % 100}"
