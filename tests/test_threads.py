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


def four_gpu_host(monkeypatch: pytest.MonkeyPatch, visible: str | None = "3") -> None:
    """A 64-CPU host of four GPUs; this job given ``visible`` of them (None: every one)."""
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(*[FakeGpu(uuid=f"GPU-{i}") for i in range(4)]))
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setattr(os, "cpu_count", lambda: 64)


def test_a_gpu_benchmark_shares_the_cpus_with_the_host_s_other_gpus(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    four_gpu_host(monkeypatch)  # this job's GPU 3: the other three have jobs too
    assert threads.for_device("cuda", None, None, {})[0] == 16
    assert threads.for_device("cuda:0", None, None, {})[0] == 16
    assert threads.for_device("cpu", None, None, {})[0] == 64  # a CPU run has no GPUs to share with
    assert threads.for_device("cuda", 2, None, {})[0] == 2  # what the config says stands
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")  # one job given every GPU: every CPU
    assert threads.for_device("cuda", None, None, {})[0] == 64


def test_a_cold_start_child_on_a_shared_gpu_host_gets_the_job_s_share(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # four jobs' cold starts at once, each child with 64 threads: build 3.0-12.5 s against 0.65-3.0 s
    four_gpu_host(monkeypatch)
    assert threads.for_coldstart("cuda", None, {}) == {"OMP_NUM_THREADS": "16"}
    assert threads.for_coldstart("cuda:0", None, {"PATH": "/bin"}) == {"OMP_NUM_THREADS": "16"}
    # `import ultralytics` in this process set OMP_NUM_THREADS=1 after the run was configured: the
    # share still stands (the children would otherwise run one thread after any kernel benchmark)
    assert threads.for_coldstart("cuda", None, {"OMP_NUM_THREADS": "1"}) == {"OMP_NUM_THREADS": "16"}
    four_gpu_host(monkeypatch, "2,3")
    assert threads.for_coldstart("cuda", None, {}) == {"OMP_NUM_THREADS": "32"}


@pytest.mark.parametrize(
    ("device", "at_start", "environ", "visible"),
    [
        ("cuda", "1", {"OMP_NUM_THREADS": "1"}, "3"),  # the run's own setting stands, whatever it is
        ("cuda", "x", {"OMP_NUM_THREADS": "x"}, "3"),
        ("cuda", None, {SHARE_VAR: "0-7"}, "3"),  # a pytest-xdist worker's CPUs bound the child already
        ("cuda", None, {}, None),  # a job given every GPU: a user's process, every CPU
        ("cpu", None, {}, "3"),  # a CPU run shares nothing with GPUs
    ],
)
def test_a_cold_start_child_is_left_as_a_user_s_process_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
    device: str,
    at_start: str | None,
    environ: dict[str, str],
    visible: str | None,
) -> None:
    four_gpu_host(monkeypatch, visible)
    assert threads.for_coldstart(device, at_start, environ) == {}


def test_the_plugin_hands_the_share_to_the_cold_start_children_under_the_caller_s_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from types import SimpleNamespace

    from kernelgate.plugin import coldstart

    four_gpu_host(monkeypatch)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv(SHARE_VAR, raising=False)
    given: list[dict[str, str]] = []

    class Stop(Exception):
        pass

    dropped: list[list[str]] = []

    def runner(spec: object, scenario: object, work: Path, env: dict[str, str], unset: list[str]) -> None:
        given.append(dict(env))
        dropped.append(list(unset))
        raise Stop

    monkeypatch.setattr(coldstart, "Runner", runner)

    # a process of a same-host round: no baseline is read before the children start
    def kg(at_start: str | None) -> SimpleNamespace:
        options = SimpleNamespace(confirm_out=tmp_path, threads_env=at_start)
        return SimpleNamespace(state=SimpleNamespace(options=options))

    spec = coldstart.child_spec("cuda", "yolov8n", "fp16", 1, 640, "eager", None, 8)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as `import ultralytics` leaves it in this process
    for at_start, env in ((None, {}), (None, {"OMP_NUM_THREADS": "4", "X": "1"}), ("2", {})):
        with pytest.raises(Stop):
            coldstart.run(kg(at_start), spec, "warm", 1, True, env)  # type: ignore[arg-type]
    assert given == [{"OMP_NUM_THREADS": "16"}, {"OMP_NUM_THREADS": "4", "X": "1"}, {}]
    # the variable ultralytics set in this process does not reach the children; the run's own does
    assert dropped == [["OMP_NUM_THREADS"], ["OMP_NUM_THREADS"], []]


def test_a_cold_start_child_starts_without_what_a_library_set_in_the_parent(tmp_path: Path) -> None:
    from kernelgate.coldstart.phases import ChildSpec
    from kernelgate.coldstart.runner import Runner
    from kernelgate.coldstart.scenarios import SCENARIOS

    spec = ChildSpec("yolov8n", "fp32", 1, 32, "cpu", 2, False, "eager", "", 0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMP_NUM_THREADS", "1")
        dropped = Runner(spec, SCENARIOS["empty"], tmp_path, unset=["OMP_NUM_THREADS"])._environ(tmp_path)
        given = Runner(
            spec, SCENARIOS["empty"], tmp_path, {"OMP_NUM_THREADS": "16"}, unset=["OMP_NUM_THREADS"]
        )
        kept = Runner(spec, SCENARIOS["empty"], tmp_path)._environ(tmp_path)
        assert "OMP_NUM_THREADS" not in dropped
        assert given._environ(tmp_path)["OMP_NUM_THREADS"] == "16"  # what the caller sets wins
        assert kept["OMP_NUM_THREADS"] == "1"  # kernelgate coldstart, the command: as the caller has it


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
