"""The real regression of the report tests: yolov8n fp16 on the lent H200, model.2 slowed.

Baseline: the committed H200 baseline's entry; current: the same benchmark measured in another
process with ``--kernelgate-slow-layer model.2`` (2026-11-21, torch 2.11.0+cu130, cuDNN 9.19.0,
driver 580.159.04, ultralytics 8.4.190).
"""

from __future__ import annotations

import os
from pathlib import Path

from kernelgate import baseline, diff, publish
from kernelgate.compare import compare
from kernelgate.config import GateConfig

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "golden"
BASE = DATA / "h200-yolov8n-fp16-baseline.json"
SLOWED = DATA / "h200-yolov8n-fp16-model2-slowed.json"


def entry(path: Path) -> baseline.Entry:
    (only,) = baseline.load(path).values()
    return only


def slowed_item() -> publish.Item:
    base, current = entry(BASE).measurement, entry(SLOWED).measurement
    return publish.Item(compare(base, current, GateConfig()), base, current)


def slowed_diff() -> diff.BenchmarkDiff:
    item = slowed_item()
    return diff.build(item.comparison, item.base, item.current)


def check_golden(path: Path, text: str) -> None:
    """``text`` must equal the file; ``KERNELGATE_UPDATE_GOLDEN=1`` rewrites it after an intended change."""
    if os.environ.get("KERNELGATE_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
