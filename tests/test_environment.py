"""GPU identity and state through NVML (on a fake pynvml), torch's kernel images, environment changes."""

from __future__ import annotations

import sys

import pytest
from fake_nvml import FAILS, FakeGpu, fake_pynvml

from kernelgate.machine.envdiff import Change, changes, gpu_differences
from kernelgate.machine.identity import (
    architecture_name,
    cpu_arch_key,
    detect_arch_key,
    read_identity,
    same_architecture,
)
from kernelgate.machine.nvml import nvml_error
from kernelgate.machine.software import KernelImages
from kernelgate.machine.state import clock_event_names, gpu_state, read_state


@pytest.fixture
def nvml(monkeypatch: pytest.MonkeyPatch) -> list[FakeGpu]:
    """Two fake GPUs behind a fake pynvml; tests edit them in place."""
    gpus = [FakeGpu(), FakeGpu(name="NVIDIA H100 PCIe", uuid="GPU-1111", power_limit_mw=350_000)]
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(*gpus))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return gpus


def test_identity_of_the_visible_gpu(nvml: list[FakeGpu]) -> None:
    identity = read_identity()
    assert identity is not None
    assert identity.name == "NVIDIA H200"
    assert identity.architecture == "Hopper"
    assert identity.compute_capability == (9, 0)
    assert identity.sm == "sm_90"
    assert identity.key == "sm90-nvidia-h200"
    assert identity.driver == "580.159.04"
    assert identity.cuda_driver == "13.0"
    assert identity.memory_mib == 143771
    assert (identity.sm_clock_max_mhz, identity.mem_clock_max_mhz) == (1980, 3201)
    assert (identity.power_limit_w, identity.power_default_w) == (700.0, 700.0)
    assert detect_arch_key() == "sm90-nvidia-h200"


def test_cuda_visible_devices_picks_the_gpu_by_index_or_uuid(
    nvml: list[FakeGpu], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    assert detect_arch_key() == "sm90-nvidia-h100-pcie"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1111")
    assert detect_arch_key() == "sm90-nvidia-h100-pcie"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert read_identity() is None
    assert detect_arch_key().startswith("cpu-")


def test_no_nvml_means_no_identity_and_the_cpu_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error="Driver Not Loaded"))
    assert read_identity() is None
    assert read_state() is None
    assert nvml_error() == "NVMLError: Driver Not Loaded"
    assert gpu_state() == {}
    assert detect_arch_key() == cpu_arch_key()


def test_unsupported_readings_are_none_not_errors(nvml: list[FakeGpu]) -> None:
    nvml[0].architecture = FAILS
    nvml[0].power_default_mw = FAILS
    nvml[0].processes = FAILS
    nvml[0].slowdown_temperature = FAILS
    identity = read_identity()
    state = read_state()
    assert identity is not None and state is not None
    assert identity.architecture == "Hopper"  # from the compute capability
    assert identity.power_default_w is None
    assert state.processes is None and state.slowdown_temperature_c is None
    assert state.temperature_c == 34


def test_state_reads_clocks_reasons_processes(nvml: list[FakeGpu]) -> None:
    nvml[0].reasons = 0x4 | 0x40
    nvml[0].processes = [(4242, 2 * 2**30), (77, None)]
    nvml[0].utilization = 87
    state = read_state()
    assert state is not None
    assert state.sm_clock_mhz == 1980 and state.mem_clock_mhz == 3201
    assert state.clock_event_reasons == 0x44
    assert clock_event_names(0x44) == ("sw_power_cap", "hw_thermal_slowdown")
    assert [(p.pid, p.used_mib) for p in state.processes or ()] == [(4242, 2048.0), (77, None)]
    assert state.utilization_pct == 87
    assert state.persistence_mode is True and state.mig_enabled is False
    assert state.compute_mode == "default"


def test_gpu_state_strings_keep_the_recorded_keys(nvml: list[FakeGpu]) -> None:
    state = gpu_state()
    # the keys of the committed H200 baseline's environment, plus the new identity fields
    for key, value in {
        "driver": "580.159.04",
        "sm_clock_mhz": "1980",
        "sm_clock_max_mhz": "1980",
        "mem_clock_mhz": "3201",
        "temperature_c": "34",
        "power_w": "120.5",
        "power_limit_w": "700.0",
        "clock_event_reasons": "0x1",
        "architecture": "Hopper",
        "cuda_driver": "13.0",
        "memory_mib": "143771",
        "persistence_mode": "True",
    }.items():
        assert state[key] == value, key


def test_clock_event_names_keep_unknown_bits() -> None:
    assert clock_event_names(0) == ()
    assert clock_event_names(0x1 | 0x10000) == ("gpu_idle", "0x10000")


@pytest.mark.parametrize(
    ("cc", "name"),
    [
        ((7, 0), "Volta"),
        ((7, 5), "Turing"),
        ((8, 0), "Ampere"),
        ((8, 6), "Ampere"),
        ((8, 9), "Ada"),
        ((9, 0), "Hopper"),
        ((10, 0), "Blackwell"),
        ((12, 0), "Blackwell"),
        ((99, 1), "sm991"),
    ],
)
def test_architecture_name(cc: tuple[int, int], name: str) -> None:
    assert architecture_name(*cc) == name


# --- torch's kernel images against the device ------------------------------------------------------

CU130 = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120")


def test_native_sass_on_an_h200_and_no_usable_ptx() -> None:
    images = KernelImages(CU130, (9, 0))
    assert images.native
    assert images.ptx == ("compute_120",)
    assert images.usable_ptx == ()  # compute_120 cannot be compiled for sm_90


def test_binary_compatible_sass_of_an_earlier_minor() -> None:
    images = KernelImages(("sm_80", "sm_86", "sm_90a"), (8, 9))
    assert not images.native
    assert images.compatible_sass == "sm_86"
    assert KernelImages(("sm_90a",), (9, 1)).compatible_sass is None  # an 'a' variant runs on 9.0 only


def test_a_newer_gpu_than_the_build_jit_compiles_ptx() -> None:
    images = KernelImages(CU130, (13, 0))  # the seed case: no SASS for the GPU, PTX for an earlier one
    assert not images.native and images.compatible_sass is None
    assert images.usable_ptx == ("compute_120",)
    assert KernelImages(("sm_80", "junk", "compute_90a"), (10, 0)).usable_ptx == ()


# --- comparing environments -------------------------------------------------------------------------


def test_changes_list_versions_and_variables_that_may_explain_a_regression() -> None:
    base = {"torch": "2.10.0", "driver": "570.1", "cudnn": "91900", "temperature_c": "34", "env.X": "1"}
    cur = {
        "torch": "2.11.0",
        "driver": "570.1",
        "cudnn": "91900",
        "temperature_c": "60",
        "cuda_driver": "13.0",
    }
    cur |= {"env.CUDA_CACHE_DISABLE": "1"}
    found = changes(base, cur)
    assert [str(c) for c in found] == [
        "torch 2.10.0 -> 2.11.0",
        "CUDA_CACHE_DISABLE (unset) -> 1",
        "X 1 -> (unset)",
    ]
    assert changes(base, base) == []


def test_gpu_differences_name_memory_clock_and_power_limit() -> None:
    h100_sxm = {"gpu": "NVIDIA H100 80GB HBM3", "power_limit_w": "700.0", "sm_clock_max_mhz": "1980"}
    h100_pcie = {"gpu": "NVIDIA H100 PCIe", "power_limit_w": "350.0", "sm_clock_max_mhz": "1755"}
    assert gpu_differences(h100_sxm, h100_pcie) == [
        Change("gpu", "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"),
        Change("sm_clock_max_mhz", "1980", "1755"),
        Change("power_limit_w", "700.0", "350.0"),
    ]
    same = dict(h100_sxm, power_limit_w="700.4", temperature_c="80")
    assert gpu_differences(h100_sxm, same) == []  # within 1 % of the limit; state is not identity
    assert gpu_differences({"gpu": "A"}, {}) == []  # an older record without the field


def test_same_architecture_keys() -> None:
    keys = ["sm90-nvidia-h200", "sm90-nvidia-h100-pcie", "sm80-nvidia-a100", "cpu-x86-64-amd"]
    assert same_architecture("sm90-nvidia-h100-80gb-hbm3", keys) == [
        "sm90-nvidia-h100-pcie",
        "sm90-nvidia-h200",
    ]
    assert same_architecture("sm90-nvidia-h200", keys) == ["sm90-nvidia-h100-pcie"]
    assert same_architecture("cpu-x86-64-amd-epyc", keys) == []


def test_which_gpu_of_the_same_product_a_job_was_given_explains_nothing() -> None:
    base = {"gpu": "NVIDIA H200", "torch": "2.11.0"}
    job = {"gpu": "NVIDIA H200", "torch": "2.11.0", "env.CUDA_VISIBLE_DEVICES": "1"}
    assert changes(base, job) == []
    other = {**job, "gpu": "NVIDIA H100 80GB HBM3"}  # another product: both are said
    assert [c.key for c in changes(base, other)] == ["gpu", "env.CUDA_VISIBLE_DEVICES"]
    cpu = {"torch": "2.11.0", "env.CUDA_VISIBLE_DEVICES": ""}  # no GPU recorded: as before
    assert [c.key for c in changes({"torch": "2.11.0"}, cpu)] == ["env.CUDA_VISIBLE_DEVICES"]
