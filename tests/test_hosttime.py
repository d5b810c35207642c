"""The host side of each layer (kernelgate.measure.hosttime), on synthetic Kineto traces."""

from __future__ import annotations

import time
from typing import Any

import pytest
from factories import launched, module_range, runtime, step

from kernelgate.measure import hosttime
from kernelgate.measure.aggregate import build
from kernelgate.measure.attribute import attribute
from kernelgate.measure.results import Measurement, combine
from kernelgate.measure.trace import parse_gpu
from kernelgate.models.layers import Layers

LAYERS = Layers({"model.1": "Conv", "model.2": "SPPF"})


def iteration(n: int, t0: float, model2_us: float, sync: bool, copy: bool) -> list[dict[str, object]]:
    """One forward: model.1 (20 µs on the host, a kernel), model.2 (``model2_us``, a kernel), optional
    waits in model.1's conv (a device sync) and in model.2 (a synchronous device-to-host copy)."""
    end = t0 + 20 + model2_us + 10
    events = [
        step(n, t0, end),
        module_range("model.1", t0 + 2, t0 + 22),
        module_range("model.1.conv", t0 + 3, t0 + 12),
        module_range("model.2", t0 + 22, t0 + 22 + model2_us),
        *launched("conv_kernel", 10 * n + 1, t0 + 5, t0 + 6, 4.0),
        *launched("silu_kernel", 10 * n + 2, t0 + 25, t0 + 30, 2.0),
    ]
    if sync:
        events.append(runtime(10 * n + 3, t0 + 8, name="cudaDeviceSynchronize"))
    if copy:
        events.append(runtime(10 * n + 4, t0 + 26, name="cudaMemcpy"))
    return events


def trace(
    model2_us: float = 20.0, sync: bool = False, copy_in: tuple[int, ...] = ()
) -> list[dict[str, object]]:
    return [e for n in range(2) for e in iteration(n, 1000.0 * n, model2_us, sync, n in copy_in)]


def test_each_layer_s_host_time_is_timed_by_hooks_and_the_stages_by_the_clock() -> None:
    torch = pytest.importorskip("torch")

    class Waits(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            time.sleep(0.002)
            return x + 1

    net = torch.nn.Sequential(torch.nn.Identity(), Waits(), torch.nn.Identity())
    layers = Layers({"0": "Identity", "1": "Waits", "2": "Identity"})

    def step() -> None:
        with hosttime.stage(torch.profiler.record_function, "input"):
            x = torch.zeros(4)
        net(x)

    times = hosttime.layer_host_us(step, net, layers, iterations=3)
    assert list(times) == ["input", "0", "1", "2"]  # the order they ran in
    assert all(len(v) == 3 for v in times.values())
    assert min(times["1"]) >= 2000.0  # the layer that sleeps 2 ms
    assert not net[1]._forward_hooks and not net[1]._forward_pre_hooks  # the hooks are gone again
    assert not hosttime.CLOCK.on
    step()  # outside the timed steps the clock keeps nothing
    assert hosttime.CLOCK.spent == {}


def test_a_graph_replay_has_host_times_of_its_stages_only() -> None:
    torch = pytest.importorskip("torch")

    def step() -> None:
        with hosttime.stage(torch.profiler.record_function, "input"):
            torch.zeros(4)

    assert list(hosttime.layer_host_us(step, None, LAYERS, iterations=2)) == ["input"]


def test_waits_and_copies_are_counted_per_layer_and_iteration() -> None:
    parsed = parse_gpu(trace(sync=True, copy_in=(1,)))
    assert [c.name for c in parsed.syncs] == ["cudaDeviceSynchronize", "cudaDeviceSynchronize", "cudaMemcpy"]
    calls = hosttime.sync_calls(parsed, LAYERS)
    assert calls == {"model.1": {"cudaDeviceSynchronize": 1.0}, "model.2": {"cudaMemcpy": 0.5}}


def test_kernel_launches_are_no_waits() -> None:
    assert hosttime.sync_calls(parse_gpu(trace()), LAYERS) == {}


def test_a_new_wait_is_a_change_and_an_unsteady_one_is_not() -> None:
    base = hosttime.sync_calls(parse_gpu(trace()), LAYERS)
    synced = hosttime.sync_calls(parse_gpu(trace(sync=True)), LAYERS)
    assert hosttime.sync_changes(base, synced) == {"model.1": (("cudaDeviceSynchronize", 0, 1),)}
    assert hosttime.sync_changes(synced, base) == {"model.1": (("cudaDeviceSynchronize", 1, 0),)}
    assert hosttime.describe((("cudaDeviceSynchronize", 0, 1),)) == "cudaDeviceSynchronize 0 -> 1 a forward"
    half = hosttime.sync_calls(parse_gpu(trace(copy_in=(1,))), LAYERS)  # in one iteration of two
    assert hosttime.sync_changes(base, half) == {}


def measured(model2_us: float = 20.0, **kwargs: object) -> Measurement:
    parsed = parse_gpu(trace(model2_us, **kwargs))  # type: ignore[arg-type]
    return build(
        attribute(parsed, LAYERS),
        benchmark="b",
        arch="sm90-x",
        device="cuda",
        iterations=2,
        wall_us=[300.0, 310.0],
        environment={},
        host_us={"model.1": [20.0, 20.0], "model.2": [model2_us, model2_us]},
        host_calls=hosttime.sync_calls(parsed, LAYERS),
    )


def test_the_record_keeps_the_host_side_through_json_and_rounds() -> None:
    m = measured(model2_us=250.0, sync=True)
    assert [(lay.name, lay.type, lay.time.samples) for lay in m.host_layers] == [
        ("model.1", "Conv", (20.0, 20.0)),
        ("model.2", "SPPF", (250.0, 250.0)),
    ]
    again = Measurement.from_json(m.to_json())
    assert again.host_layers == m.host_layers and again.host_calls == m.host_calls
    both = combine([m, measured()])  # a round without the sync: half a call per forward
    assert both.host_calls == {"model.1": {"cudaDeviceSynchronize": 0.5}}
    model2 = both.host_layer("model.2")
    assert model2 is not None and model2.time.samples == (250.0, 250.0, 20.0, 20.0)
    assert model2.time.rounds == (2, 2)


def test_a_record_without_the_host_side_still_reads() -> None:
    data = measured().to_json()
    data.pop("host_layers"), data.pop("host_calls", None)
    old = Measurement.from_json(data)
    assert old.host_layers == () and old.host_calls == {}
