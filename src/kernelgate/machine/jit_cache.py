"""The CUDA JIT cache: the folder where the driver keeps kernels it compiled from PTX
(``CUDA_CACHE_PATH``, or the driver's default), and how many bytes a folder holds.
"""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_path() -> str:
    """``CUDA_CACHE_PATH``, or the driver's default ``~/.nv/ComputeCache`` where it is unset."""
    return os.environ.get("CUDA_CACHE_PATH") or str(Path.home() / ".nv" / "ComputeCache")


def folder_bytes(path: Path) -> int:
    """Bytes of the files below ``path`` (the JIT cache a run left)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else 0
