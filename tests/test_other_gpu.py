"""A baseline of another GPU of the same architecture is refused unless --kernelgate-allow-other-gpu."""

from __future__ import annotations

import types
from dataclasses import replace
from pathlib import Path

import pytest
from factories import bench_fields, measurement

from kernelgate.baseline import store as baseline
from kernelgate.config import GateConfig
from kernelgate.measure.results import Measurement
from kernelgate.plugin.fixture import KernelGate
from kernelgate.plugin.session import Options, State

FULLNAME = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
H100_SXM = {"gpu": "NVIDIA H100 80GB HBM3", "power_limit_w": "700.0", "sm_clock_max_mhz": "1980"}
H100_PCIE = {"gpu": "NVIDIA H100 PCIe", "power_limit_w": "350.0", "sm_clock_max_mhz": "1755"}


def record(root: Path, arch: str, env: dict[str, str]) -> None:
    m = replace(measurement({"model.0": 100.0}), arch=arch, environment=env)
    doc = baseline.document(
        [baseline.Entry(FULLNAME, m, bench_fields(FULLNAME))],
        arch,
        {},
        {},
        "2026-11-21T00:00:00+00:00",
        "5.2.3",
    )
    baseline.write_atomic(baseline.path_for(root, arch), baseline.dumps(doc))


def gate(root: Path, allow: bool) -> KernelGate:
    kg = object.__new__(KernelGate)
    kg.state = State(GateConfig(baseline_dir=root), Options(allow_other_gpu=allow))
    kg.benchmark = types.SimpleNamespace(fullname=FULLNAME)
    kg.node_name, kg.device = "test_yolo", "cuda"
    where = types.SimpleNamespace(rootpath=root, invocation_params=types.SimpleNamespace(dir=root))
    kg.node = types.SimpleNamespace(nodeid=FULLNAME, config=where)
    return kg


def current(arch: str, env: dict[str, str]) -> Measurement:
    return replace(measurement({"model.0": 100.0}), arch=arch, environment=env)


def test_another_product_of_the_architecture_is_refused_with_the_option_named(tmp_path: Path) -> None:
    record(tmp_path, "sm90-nvidia-h100-80gb-hbm3", H100_SXM)
    pcie = current("sm90-nvidia-h100-pcie", H100_PCIE)
    with pytest.raises(pytest.fail.Exception) as info:
        gate(tmp_path, allow=False).baseline_entry(pcie)
    message = str(info.value)
    assert "no baseline for 'yolov8n-fp16-bs1-640' on sm90-nvidia-h100-pcie" in message
    assert "other GPUs of the same architecture exist (sm90-nvidia-h100-80gb-hbm3)" in message
    assert "--kernelgate-allow-other-gpu" in message


def test_allowed_it_compares_and_says_so(tmp_path: Path) -> None:
    record(tmp_path, "sm90-nvidia-h100-80gb-hbm3", H100_SXM)
    kg = gate(tmp_path, allow=True)
    found = kg.baseline_entry(current("sm90-nvidia-h100-pcie", H100_PCIE))
    assert found is not None
    entry, path = found
    assert path.parent.name == "sm90-nvidia-h100-80gb-hbm3"
    assert entry.measurement.environment["gpu"] == "NVIDIA H100 80GB HBM3"
    (note,) = kg.state.notes
    assert "compared with another GPU's baseline (gpu NVIDIA H100 80GB HBM3 -> NVIDIA H100 PCIe;" in note


def test_same_key_but_another_power_limit_is_another_gpu(tmp_path: Path) -> None:
    record(tmp_path, "sm90-nvidia-h200", {"gpu": "NVIDIA H200", "power_limit_w": "700.0"})
    capped = current("sm90-nvidia-h200", {"gpu": "NVIDIA H200", "power_limit_w": "450.0"})
    with pytest.raises(pytest.fail.Exception) as info:
        gate(tmp_path, allow=False).baseline_entry(capped)
    assert "was recorded on another GPU (power_limit_w 700.0 -> 450.0)" in str(info.value)
    assert gate(tmp_path, allow=True).baseline_entry(capped) is not None


def test_the_same_gpu_passes_without_a_note(tmp_path: Path) -> None:
    env = {"gpu": "NVIDIA H200", "power_limit_w": "700.0", "sm_clock_max_mhz": "1980", "temperature_c": "30"}
    record(tmp_path, "sm90-nvidia-h200", env)
    kg = gate(tmp_path, allow=False)
    assert kg.baseline_entry(current("sm90-nvidia-h200", dict(env, temperature_c="45"))) is not None
    assert kg.state.notes == []


def test_the_option_reaches_the_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_option(request):
            from kernelgate.plugin.session import STATE_KEY
            assert request.config.stash[STATE_KEY].options.allow_other_gpu is True
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate", "--kernelgate-allow-other-gpu")
    result.assert_outcomes(passed=1)
