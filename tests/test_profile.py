"""Module ranges on the CPU: shared submodules are named after the parent that calls them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelgate.measure import attribute, profile, trace
from kernelgate.measure.profile import pick_name


class Block(torch.nn.Module):
    def __init__(self, act: torch.nn.Module) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.act = act  # shared between blocks, like ultralytics' Conv.default_act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x))


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        shared = torch.nn.SiLU()
        self.model = torch.nn.ModuleList([Block(shared), Block(shared), Block(shared)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.model:
            x = block(x)
        return x


def test_pick_name_prefers_the_calling_parent() -> None:
    names = ["model.0.act", "model.1.act", "model.2.act"]
    assert pick_name(names, "model.1") == "model.1.act"
    assert pick_name(names, None) == "model.0.act"
    assert pick_name(["a.b"], "zzz") == "a.b"


def test_a_shared_activation_is_attributed_to_each_calling_layer(tmp_path: Path) -> None:
    net = Net().eval()
    x = torch.rand(1, 4, 8, 8)
    path = tmp_path / "trace.json"
    with torch.no_grad():
        profile.run(lambda: net(x), net, gpu=False, schedule=profile.Schedule(0, 1, 2), trace_path=path)
    frame = attribute.attribute(
        trace.parse(path, gpu=False), attribute.Layers({f"model.{i}": "" for i in range(3)})
    )
    silu = frame[frame["kernel"] == "aten::silu"]
    assert sorted(set(silu["module"])) == ["model.0.act", "model.1.act", "model.2.act"]
    assert silu.groupby("iteration").size().tolist() == [3, 3]
    assert (silu.groupby(["iteration", "layer"]).size() == 1).all()


class Odd(torch.nn.Module):
    """Module names the profiler's trace writer would change: a backslash, a slash, a percent sign,
    a quote, a non-ASCII letter."""

    NAMES = ("a\\b", "c/d", "e%41", 'f"g', "hé")

    def __init__(self) -> None:
        super().__init__()
        self.model = torch.nn.Sequential()
        self.model.add_module("0", torch.nn.Conv2d(4, 4, 3, padding=1))
        self.model.add_module("x\\y", torch.nn.Sequential())
        for i, name in enumerate(self.NAMES):
            self.model.get_submodule("x\\y").add_module(name, torch.nn.ReLU() if i % 2 else torch.nn.SiLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)


def test_a_module_named_with_a_backslash_keeps_its_name_and_layer(tmp_path: Path) -> None:
    net = Odd().eval()
    x = torch.rand(1, 4, 8, 8)
    path = tmp_path / "trace.json"
    with torch.no_grad():
        profile.run(lambda: net(x), net, gpu=False, schedule=profile.Schedule(0, 1, 2), trace_path=path)
    assert "kg/model.x%5Cy.a%5Cb" in path.read_text()  # encoded in the trace, not turned into a path
    layers = attribute.Layers({"model.0": "Conv2d", "model.x\\y": "Sequential"})
    frame = attribute.attribute(trace.parse(path, gpu=False), layers)
    expected = {"model.0"} | {f"model.x\\y.{name}" for name in Odd.NAMES}
    assert set(frame["module"]) == expected
    assert set(frame["layer"]) == {"model.0", "model.x\\y"}  # no stray layer, nothing unattributed
    assert frame[frame["module"] == "model.x\\y.a\\b"]["kernel"].tolist() == ["aten::silu", "aten::silu"]


def test_while_profiling_the_profiler_sees_inductor_only_where_it_is_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torch.profiler asks ``hasattr(torch, "_inductor")``, which imports Inductor where nothing has
    (measure/profile.py): under ``_no_inductor_import`` it is true only where Inductor is imported, and
    the profiler's module is left as it was."""
    import sys

    from torch.profiler import profiler as module

    inductor = sys.modules.get("torch._inductor")
    monkeypatch.delitem(sys.modules, "torch._inductor", raising=False)
    monkeypatch.delenv("TORCHINDUCTOR_CUDAGRAPHS", raising=False)
    assert "hasattr" not in vars(module)
    with profile._no_inductor_import():
        assert module.hasattr(torch, "_inductor") is False
        assert "torch._inductor" not in sys.modules  # not imported by the question
        assert module.hasattr(torch, "nn") and not module.hasattr(torch, "no_such_name")
        monkeypatch.setitem(sys.modules, "torch._inductor", inductor or object())
        assert module.hasattr(torch, "_inductor") is True
    assert "hasattr" not in vars(module)


def test_with_inductors_cuda_graph_variable_set_the_profiler_asks_as_it_did(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``TORCHINDUCTOR_CUDAGRAPHS`` gives Inductor's CUDA-graph setting its default, which the profiler
    reads: there the profiler's module is left alone."""
    from torch.profiler import profiler as module

    monkeypatch.setenv("TORCHINDUCTOR_CUDAGRAPHS", "1")
    with profile._no_inductor_import():
        assert "hasattr" not in vars(module)
