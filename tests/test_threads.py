"""The intra-op thread count of a run: chosen once, never from what a library set on import
(kernelgate.machine.threads), and on a CPU a reason not to compare (kernelgate.verdict.yardstick)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from factories import measurement
from fake_nvml import FakeGpu, fake_pynvml

from kernelgate.config import ConfigError, from_table
from kernelgate.machine import threads
from kernelgate.machine.pinning import SHARE_VAR
from kernelgate.measure.results import Measurement
from kernelgate.verdict import yardstick


def test_the_configured_count_wins() -> None:
    assert threads.choose(3, "8", {SHARE_VAR: "0-3"}) == (3, "threads in [tool.kernelgate]")


def test_the_run_s_own_variable_wins_over_a_share_and_the_cpus() -> None:
    assert threads.choose(None, "8", {SHARE_VAR: "0-3"})[0] == 8


def test_a_variable_set_later_by_a_library_is_not_read() -> None:
    # ultralytics sets OMP_NUM_THREADS=1 when imported; the run was configured without it
    count, why = threads.choose(None, None, {"OMP_NUM_THREADS": "1"})
    assert count == len(os.sched_getaffinity(0)) and why == "the CPUs this process may run on"


def test_a_worker_takes_its_share() -> None:
    assert threads.choose(None, None, {SHARE_VAR: "0-3,8"}) == (
        5,
        "this pytest-xdist worker's share of the CPUs",
    )


def test_on_a_host_of_several_gpus_a_job_takes_an_even_share(monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 jobs of 64 threads on a 64-CPU, 4-GPU host: rounds twice as long, 2 of 4 A/A runs red
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert threads.choose(None, None, {}, gpus_on_host=4, gpus_visible=1) == (
        16,
        "the host's 64 CPUs shared among its GPUs, this job's 1 of its 4 GPUs",
    )
    assert threads.choose(None, None, {}, 4, 2)[0] == 32  # a job given two of the four GPUs
    assert threads.choose(None, None, {}, 4, 4) == (64, "the CPUs this process may run on")  # all its own
    assert threads.choose(None, None, {}, 1, 1) == (64, "the CPUs this process may run on")
    assert threads.choose(None, None, {}, 0, 0)[0] == 64  # no NVML: not shared
    # a job already held to 16 CPUs (taskset, a cpuset) on an 8-GPU host of 128: its 16, not 16 / 8
    monkeypatch.setattr(os, "cpu_count", lambda: 128)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)))
    assert threads.choose(None, None, {}, 8, 1)[0] == 16
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert threads.choose(None, None, {}, 8, 1)[0] == 1  # never none
    # what the run set itself, and a pytest-xdist worker's share, are not divided again
    assert threads.choose(None, "32", {}, 4, 1)[0] == 32
    assert threads.choose(None, None, {SHARE_VAR: "0-7"}, 4, 1)[0] == 8


def test_a_gpu_benchmark_shares_the_cpus_with_the_host_s_other_gpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(*[FakeGpu(uuid=f"GPU-{i}") for i in range(4)]))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # this job's GPU: the other three have jobs too
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert threads.for_device("cuda", None, None, {})[0] == 16
    assert threads.for_device("cuda:0", None, None, {})[0] == 16
    assert threads.for_device("cpu", None, None, {})[0] == 64  # a CPU run has no GPUs to share with
    assert threads.for_device("cuda", 2, None, {})[0] == 2  # what the config says stands
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")  # one job given every GPU: every CPU
    assert threads.for_device("cuda", None, None, {})[0] == 64


@pytest.mark.parametrize("value", ["0", "-2", "x", ""])
def test_a_variable_that_is_no_count_is_ignored(value: str) -> None:
    assert threads.choose(None, value, {})[0] == len(os.sched_getaffinity(0))


def test_threads_in_the_config_is_a_whole_number(tmp_path: Path) -> None:
    assert from_table({"threads": 2}, "t", tmp_path).threads == 2
    for bad in (0, "4", 1.5, True):
        with pytest.raises(ConfigError, match="threads"):
            from_table({"threads": bad}, "t", tmp_path)


def on(arch: str, count: str) -> Measurement:
    m = measurement(layers={"0": 100.0}, arch=arch)
    return replace(m, environment={**m.environment, "torch_threads": count})


def test_on_a_cpu_another_thread_count_is_not_compared() -> None:
    found = yardstick.thread_mismatch(on("cpu-x86", "8"), on("cpu-x86", "2"))
    assert found and "baseline ran with 8, this run with 2" in found[0] and "threads = 8" in found[0]
    assert yardstick.thread_mismatch(on("cpu-x86", "8"), on("cpu-x86", "8")) == []


def test_on_a_gpu_another_thread_count_is_only_an_environment_change() -> None:
    assert yardstick.thread_mismatch(on("sm90-x", "8"), on("sm90-x", "2")) == []
