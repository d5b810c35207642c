"""Does a layer's GPU time follow where its tensors sit in GPU memory, and do placements average it out?

``copies``: in one process, build a configuration N times (every copy kept, so none reuses another's
memory), measure each in one place, then the first again: the spread of the copies against the first
copy's repeat. ``histories``: in one process, N times: allocate (and keep) another amount of GPU memory,
as configurations measured before would, then measure the configuration as the gate does (its
``PLACEMENTS`` copies averaged: :mod:`kernelgate.measure.placement`), keeping its first copy's record
too: the spread over histories of one placement against that of the average.

    python tools/placement.py copies|histories OUT.json [N] [SPEC...]    SPEC: yolo26n-fp16 ...
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from kernelgate.measure import execution, placement, profile
from kernelgate.measure.pipeline import GPU_SCHEDULE, measure_module
from kernelgate.measure.results import Measurement
from kernelgate.models.yolo import YoloSpec, build_detection_model, layers_of, make_input

DEV = os.environ.get("DEVICE", "cuda")


def medians(m: Measurement) -> dict[str, float]:
    out = {lay.name: lay.time.median for lay in m.layers}
    out["total"] = m.total.median
    return out


def one(
    runner: execution.Runner,
    layers: Any,
    name: str,
    path: Path,
    active: int = 20,  # one place: 20, as before
) -> Measurement:
    schedule = profile.Schedule(GPU_SCHEDULE.wait, GPU_SCHEDULE.warmup, active)
    with torch.no_grad():
        return measure_module(
            torch, runner, layers, bench_id=name, device=DEV, schedule=schedule, wall_us=[], trace_path=path
        )


def build(spec: YoloSpec) -> tuple[execution.Runner, Any, Any, Any]:
    net = build_detection_model(spec, DEV)
    host_input = make_input(spec, DEV)
    with torch.no_grad():
        runner = execution.prepare(torch, net, spec, DEV, host_input)
    return runner, layers_of(net).adding(dict(runner.extra_layers)), net, host_input


def copies(spec: YoloSpec, n: int, tmp: Path, keep: list[Any]) -> list[dict[str, Any]]:
    rows, first = [], None
    for i in range(n):
        keep.append(torch.empty((i * 37 + 1) * 2**20 + i * 4096, dtype=torch.uint8, device=DEV))
        runner, layers, net, _ = build(spec)
        keep.append(net)
        first = first or (runner, layers)
        rows.append({"copy": i, "one": medians(one(runner, layers, spec.id, tmp / "t.json"))})
    rows.append({"copy": "0 again", "one": medians(one(*first, spec.id, tmp / "t.json"))})
    return rows


def histories(spec: YoloSpec, n: int, tmp: Path, keep: list[Any]) -> list[dict[str, Any]]:
    rows = []
    for h in range(n):
        keep.append(torch.empty(h * 7 * 2**20 + h * 12 * 1024 + 512, dtype=torch.uint8, device=DEV))
        runner, layers, net, host_input = build(spec)

        def made(copied: Any, spec: YoloSpec = spec, host_input: Any = host_input) -> execution.Runner:
            with torch.no_grad():
                return execution.prepare(torch, copied, spec, DEV, host_input)

        places = placement.Placements(torch, runner, placement.copier(net, made), placement.PLACEMENTS)
        keep.append(places)
        alone = one(runner, layers, spec.id, tmp / "t.json")
        with torch.no_grad():
            for r in places.runners():
                r.step()
        found = one(places.runner(), layers, spec.id, tmp / "p.json", GPU_SCHEDULE.active)
        rows.append(
            {"history": h, "one": medians(alone), "placed": medians(placement.averaged(found, places.count))}
        )
    return rows


def spread(values: list[float]) -> float:
    return 100 * (max(values) - min(values)) / statistics.median(values)


def main() -> None:
    mode, out = sys.argv[1], Path(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    specs = sys.argv[4:] or ["yolo26n-fp16", "yolov8n-fp16", "yolo11n-fp16"]
    results: dict[str, list[dict[str, Any]]] = {}
    keep: list[Any] = []
    with tempfile.TemporaryDirectory() as tmp:
        for text in specs:
            model, precision, *mode_ = text.split("-")
            spec = YoloSpec(
                model=model, precision=precision, batch=1, imgsz=640, **({"mode": mode_[0]} if mode_ else {})
            )
            results[text] = (copies if mode == "copies" else histories)(spec, n, Path(tmp), keep)
    out.write_text(json.dumps(results, indent=1))
    for text, rows in results.items():
        big = [k for k, v in rows[0]["one"].items() if v >= 20]
        kinds = ["one"] if mode == "copies" else ["one", "placed"]
        print(f"{text} ({mode}, {n}; µs; range over them, % of the median)")
        for k in big:
            line = f"  {k:9s}"
            for kind in kinds:
                vals = [r[kind][k] for r in rows]
                line += f" | {kind}: " + " ".join(f"{v:7.2f}" for v in vals) + f"  {spread(vals):4.1f} %"
            print(line)


if __name__ == "__main__":
    main()
