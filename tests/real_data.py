"""The real regression of the report tests: yolov8n fp16 on the lent H200, model.2 slowed.

Baseline: the committed H200 baseline's entry; current: the same benchmark measured in another
process with ``--kernelgate-slow-layer model.2`` (2026-11-21, torch 2.11.0+cu130, cuDNN 9.19.0,
driver 580.159.04, ultralytics 8.4.190). The records predate layer groups; the reports are fed
them with yolov8n's groups as :func:`kernelgate.models.groups.groups_of` gives them (``YOLOV8N_GROUPS``).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from kernelgate.baseline import store as baseline
from kernelgate.config import GateConfig
from kernelgate.measure.results import Measurement
from kernelgate.models.groups import yolo_groups
from kernelgate.report import publish
from kernelgate.verdict import diff
from kernelgate.verdict.compare import compare

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "golden"
BASE = DATA / "h200-yolov8n-fp16-baseline.json"
SLOWED = DATA / "h200-yolov8n-fp16-model2-slowed.json"
# yolov8n: 23 layers, model.0-9 the backbone (yolov8n.yaml), model.22 Detect the head
YOLOV8N_GROUPS = yolo_groups(23, 10)


def entry(path: Path) -> baseline.Entry:
    (only,) = baseline.load(path).values()
    return only


def grouped(m: Measurement) -> Measurement:
    return dataclasses.replace(m, groups=YOLOV8N_GROUPS)


def slowed_item() -> publish.Item:
    base, current = grouped(entry(BASE).measurement), grouped(entry(SLOWED).measurement)
    return publish.Item(compare(base, current, GateConfig()), base, current)


def slowed_diff() -> diff.BenchmarkDiff:
    item = slowed_item()
    return diff.build(item.comparison, item.base, item.current)


def check_golden(path: Path, text: str) -> None:
    """``text`` must equal the file; ``KERNELGATE_UPDATE_GOLDEN=1`` rewrites it after an intended change."""
    if os.environ.get("KERNELGATE_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
