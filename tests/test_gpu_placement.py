"""On a real GPU: a configuration measured in four placements (kernelgate.measure.placement) — the
copies sit elsewhere in GPU memory, their activations stay in their own pools, and the averaged record
holds together as a record of one place does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu


def _placed(spec: Any, folder: Path) -> tuple[Any, Any]:
    import torch

    from kernelgate.measure import execution, placement, profile
    from kernelgate.measure.pipeline import GPU_SCHEDULE, measure_module
    from kernelgate.models.yolo import build_detection_model, layers_of, make_input

    net = build_detection_model(spec, "cuda")
    host_input = make_input(spec, "cuda")
    with torch.no_grad():
        runner = execution.prepare(torch, net, spec, "cuda", host_input)

    def build(copied: Any) -> Any:
        with torch.no_grad():
            return execution.prepare(torch, copied, spec, "cuda", host_input)

    places = placement.Placements(torch, runner, placement.copier(net, build), placement.PLACEMENTS)
    layers = layers_of(net).adding(dict(runner.extra_layers))
    schedule = profile.Schedule(GPU_SCHEDULE.wait, GPU_SCHEDULE.warmup, GPU_SCHEDULE.active)
    with torch.no_grad():
        found = measure_module(
            torch, places.runner(), layers, bench_id=spec.id, device="cuda", schedule=schedule,
            wall_us=[], trace_path=folder / f"{spec.id}.json",
        )  # fmt: skip
    return placement.averaged(found, places.count), places


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("ultralytics")
    return Path(tmp_path_factory.mktemp("placed"))


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_a_placed_record_holds_together(folder: Path, mode: str) -> None:
    from kernelgate.measure import integrity
    from kernelgate.models.yolo import YoloSpec

    m, places = _placed(YoloSpec("yolov8n", "fp16", mode=mode), folder)
    assert m.reliable, m.unreliable_reasons
    assert m.placements == 4 and m.iterations == 6 and places.count == 4
    assert integrity.check_record(m) == []  # layers and kernels add up to the total, iteration by iteration
    names = {lay.name for lay in m.layers}
    assert {"input", "model.0", "model.22"} <= names
    # every copy's parameters sit elsewhere, each copy's in its own pool
    nets = [r.net for r in places.runners()]
    pointers = {next(iter(net.parameters())).data_ptr() for net in nets}
    assert len(pointers) == 4


def test_each_copys_activations_come_from_its_own_pool(folder: Path) -> None:
    import torch

    from kernelgate.models.yolo import YoloSpec

    _, places = _placed(YoloSpec("yolov8n", "fp16"), folder)

    def inside(pointer: int, pool: Any) -> bool:
        return any(seg["address"] <= pointer < seg["address"] + seg["total_size"] for seg in pool.snapshot())

    pools = [p.pool for p in places.placed[1:]]
    for k, placed in enumerate(places.placed):
        seen: list[int] = []
        hook = placed.runner.net.model[0].register_forward_hook(
            lambda m, a, out, seen=seen: seen.append(out.data_ptr())
        )
        try:
            with torch.no_grad():
                placed.runner.step()
        finally:
            hook.remove()
        (pointer,) = seen
        owners = [i + 1 for i, pool in enumerate(pools) if inside(pointer, pool)]
        assert owners == (
            [] if k == 0 else [k]
        )  # the first copy's in the default pool, each other's in its own
