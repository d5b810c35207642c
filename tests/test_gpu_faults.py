"""On a real GPU: real profiles pass the integrity checks; an OOM fails its benchmark alone.

Skipped without a CUDA GPU (CI); run with ``pytest -m gpu`` on a GPU machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")]


@pytest.mark.parametrize("precision", ["fp16", "fp32"])
def test_real_yolo_profiles_hold_together(tmp_path: Path, precision: str) -> None:
    """No false alarm: 20 profiled iterations of yolov8n pass every integrity check."""
    pytest.importorskip("ultralytics")
    import torch

    from kernelgate.measure import aggregate as measure
    from kernelgate.measure import attribute, integrity, profile, trace
    from kernelgate.measure.execution import eager
    from kernelgate.models.yolo import YoloSpec, build_yolo, make_input

    spec = YoloSpec("yolov8n", precision, 1, 640)
    net, layers = build_yolo(spec, "cuda")
    host = make_input(spec, "cuda")

    step = eager(torch, net, host, "cuda").step  # the gate's own step: input copy, forward, sync

    schedule = profile.Schedule(1, 2, 20)
    with torch.no_grad():
        for _ in range(3):
            step()
        profile.run(step, net, gpu=True, schedule=schedule, trace_path=tmp_path / "t.json")
    parsed = trace.parse(tmp_path / "t.json", gpu=True)
    frame = attribute.attribute(parsed, layers)
    m = measure.build(
        frame, benchmark=spec.id, arch="x", device="cuda", iterations=20, wall_us=[], environment={}
    )
    assert integrity.check_profile(parsed, frame, 20, gpu=True) == []
    assert integrity.check_record(m) == []


SUITE = """
import torch
from kernelgate.models.layers import Layers

LAYERS = Layers({"0": "Conv2d", "1": "Module"})


class Fault(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        if self.kind == "oom":
            torch.empty(1 << 50, dtype=torch.uint8, device=x.device)  # a petabyte
        if self.kind == "assert":
            index = torch.tensor([x.numel() + 10], device=x.device)
            x = x.flatten()[index]  # out of bounds: a device-side assert, sticky
            torch.cuda.synchronize()
        return x


def net(kind):
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), Fault(kind)).eval().cuda()


def test_a_fault(kernelgate, kind):
    kernelgate.module(net(kind), torch.rand(1, 3, 32, 32).pin_memory(), LAYERS, name="tiny-" + kind)


def test_z_after(kernelgate):
    kernelgate.module(net("none"), torch.rand(1, 3, 32, 32).pin_memory(), LAYERS, name="tiny-after")
"""

CONFTEST = """
import os
import pytest


@pytest.fixture
def kind():
    return os.environ["KG_FAULT"]
"""

ARGS = ("-p", "no:cacheprovider", "--kernelgate", "--kernelgate-device=cuda", "--kernelgate-save")


def run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str, plugin: tuple[str, ...]
) -> Any:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makeconftest(CONFTEST)
    monkeypatch.setenv("KG_FAULT", kind)
    return pytester.runpytest_subprocess(*plugin, *ARGS, "--kernelgate-iterations=3")


def test_out_of_memory_fails_its_benchmark_and_the_next_one_runs_and_is_saved(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, plugin_args: tuple[str, ...]
) -> None:
    result = run(pytester, monkeypatch, "oom", plugin_args)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*OutOfMemoryError*", "*kernelgate: benchmark 'test_a_fault' ran out of GPU memory*"]
    )
    (path,) = pytester.path.glob("baselines/sm*/0001_kernelgate.json")
    assert "tiny-after" in path.read_text()
