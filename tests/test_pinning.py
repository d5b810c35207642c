"""One GPU per pytest-xdist worker: CUDA_VISIBLE_DEVICES as CUDA reads it, the controller's table of
GPUs, a worker's pin, and how a pinned measurement records its environment (fake NVML, no GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fake_nvml import FakeGpu, fake_pynvml

from kernelgate.machine import envdiff, pinning, software, visible
from kernelgate.machine.pinning import PinningError, Slots
from kernelgate.machine.visible import VisibleGpu, cuda_visible_entries


@pytest.mark.parametrize(
    ("value", "count", "expected"),
    [
        (None, 3, ("0", "1", "2")),
        (None, 0, ()),
        ("2,3", 4, ("2", "3")),
        (" 1 , 0 ", 2, ("1", "0")),
        ("GPU-8932f937-d72c,MIG-1234", 0, ("GPU-8932f937-d72c", "MIG-1234")),
        ("0,-1,1", 2, ("0",)),  # CUDA stops at the first entry it cannot use ...
        ("0,5,1", 2, ("0",)),  # ... an index out of range
        ("1,1,0", 2, ("1",)),  # ... a repeated one
        ("0,nvidia0", 2, ("0",)),  # ... or one it cannot parse
        ("", 2, ()),
        ("-1", 2, ()),
        ("01", 2, ("1",)),
    ],
)
def test_cuda_visible_entries_follow_cuda(value: str | None, count: int, expected: tuple[str, ...]) -> None:
    assert cuda_visible_entries(value, count) == expected


@pytest.fixture
def three_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [FakeGpu(uuid=f"GPU-{i}") for i in range(2)] + [
        FakeGpu(name="NVIDIA A100-SXM4-80GB", capability=(8, 0), uuid="GPU-2")
    ]
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(*gpus))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_visible_gpus_are_read_through_nvml_in_cuda_order(
    three_gpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    h200, a100 = "sm90-nvidia-h200", "sm80-nvidia-a100-sxm4-80gb"
    assert visible.visible_gpus() == (VisibleGpu("0", h200), VisibleGpu("1", h200), VisibleGpu("2", a100))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,0")
    assert visible.visible_gpus() == (VisibleGpu("2", a100), VisibleGpu("0", h200))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-1,GPU-9,GPU-0")  # NVML knows no GPU-9: CUDA stops there
    assert visible.visible_gpus() == (VisibleGpu("GPU-1", h200),)


def test_the_host_s_gpus_are_counted_whatever_cuda_visible_devices_hides(
    three_gpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")  # a CI job given one GPU of the host
    assert visible.host_gpu_count() == 3 and visible.gpu_counts() == (3, 1)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert visible.gpu_counts() == (3, 3)
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error="Driver Not Loaded"))
    assert visible.host_gpu_count() == 0 and visible.gpu_counts() == (0, 0)


def test_no_nvml_means_no_visible_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error="Driver Not Loaded"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert visible.visible_gpus() == ()


def test_workers_get_the_gpus_of_the_parent_list_in_order() -> None:
    slots = Slots(("2", "3"))
    assert (slots.claim("gw0"), slots.claim("gw1")) == ("2", "3")
    assert slots.claim("gw1") == "3"  # asking again changes nothing
    assert slots.summary() == "gw0 on GPU 2, gw1 on GPU 3"
    uuids = Slots(("GPU-aa", "GPU-bb"))
    assert (uuids.claim("gw1"), uuids.claim("gw0")) == ("GPU-bb", "GPU-aa")


def test_a_replacement_worker_gets_the_gpu_that_was_freed() -> None:
    slots = Slots(("2", "3"))
    slots.claim("gw0")
    slots.claim("gw1")
    slots.release("gw1")  # crashed; pytest-xdist starts gw2 in its place
    assert slots.claim("gw2") == "3"
    slots.release("gw0")
    assert slots.claim("gw3") == "2"
    assert slots.holders == {"3": "gw2", "2": "gw3"}


def test_no_two_live_workers_share_a_gpu() -> None:
    slots = Slots(("0",))
    slots.claim("gw0")
    with pytest.raises(PinningError, match=r"no free GPU for worker gw1: all 1 are held \(gw0 on 0\).*-n 1"):
        slots.claim("gw1")


def test_too_many_workers_names_the_numbers_and_the_fix() -> None:
    assert pinning.too_many(2, ["2", "3"]) is None
    message = pinning.too_many(3, ["2", "3"])
    assert message is not None
    assert "-n 3 starts 3 workers, but 2 GPU(s) are visible (CUDA_VISIBLE_DEVICES entries: 2, 3)" in message
    assert message.endswith("Use -n auto (one worker per GPU) or -n 2.")


def test_worker_ids_are_pytest_xdist_ones() -> None:
    assert pinning.worker_index("gw12") == 12
    with pytest.raises(PinningError, match="'main' is not a pytest-xdist worker id"):
        pinning.worker_index("main")


def test_a_pin_keeps_what_the_run_started_with() -> None:
    env = {"CUDA_VISIBLE_DEVICES": "2,3"}
    pinning.pin(env, "3")
    assert env == {
        "CUDA_VISIBLE_DEVICES": "3",
        pinning.PINNED_VAR: "3",
        pinning.PARENT_VAR: "2,3",
    }
    assert pinning.pinned(env) == "3" and pinning.user_visible_devices(env) == "2,3"
    unset: dict[str, str] = {}
    pinning.pin(unset, "0")
    assert pinning.PARENT_VAR not in unset and pinning.user_visible_devices(unset) is None
    # a process that changed the variable after the pin is no longer pinned
    unset["CUDA_VISIBLE_DEVICES"] = "1"
    assert pinning.pinned(unset) is None and pinning.user_visible_devices(unset) == "1"


def test_a_pinned_measurement_records_the_users_variable_and_the_gpu_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    plain = software.collect(torch, "cpu")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    monkeypatch.setenv(pinning.PINNED_VAR, "3")
    monkeypatch.setenv(pinning.PARENT_VAR, "2,3")
    pinned = software.collect(torch, "cpu")
    assert pinned["env.CUDA_VISIBLE_DEVICES"] == "2,3" and pinned["pinned_gpu"] == "3"
    # the same suite, with and without xdist: no environment change to explain a regression
    assert envdiff.changes(plain, pinned) == []
    monkeypatch.delenv(pinning.PARENT_VAR)
    assert "env.CUDA_VISIBLE_DEVICES" not in software.collect(torch, "cpu")


def test_each_gpu_gets_a_disjoint_equal_share_of_the_cpus() -> None:
    cores = [(c,) for c in range(32)]
    assert pinning.cpu_shares(cores, ("2", "3")) == {"2": tuple(range(16)), "3": tuple(range(16, 32))}
    # in the order given, the remainder unused
    assert pinning.cpu_shares([(5,), (1,), (3,)], ("0", "1")) == {"0": (5,), "1": (1,)}
    assert pinning.cpu_shares([(0,)], ("0", "1")) == {"0": (), "1": ()}  # fewer cores than GPUs: no pinning


def test_hyperthreads_of_one_core_go_to_one_worker() -> None:
    # 8 cores with 2 hyperthreads each, Linux numbering: CPU n and n + 8 share a core
    siblings = {cpu: (cpu % 8, cpu % 8 + 8) for cpu in range(16)}
    cores = pinning.cores(range(16), siblings)
    assert cores == [(c, c + 8) for c in range(8)]
    shares = pinning.cpu_shares(cores, ("0", "1"))
    # a share of CPUs 0-7 and 8-15 would put both workers on every core
    assert shares == {"0": (0, 1, 2, 3, 8, 9, 10, 11), "1": (4, 5, 6, 7, 12, 13, 14, 15)}
    # an affinity mask leaving out one hyperthread: the core keeps the other
    assert pinning.cores([0, 1, 9], siblings) == [(0,), (1, 9)]
    assert pinning.parse_cpu_list("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert pinning.cpu_list((0, 1, 2, 3, 8, 10, 11)) == "0-3,8,10-11"


def test_each_gpu_takes_the_cores_of_its_numa_node_first() -> None:
    cores = [(c,) for c in range(8)]
    # GPU 0 sits on the node of CPUs 4-7, GPU 1 on that of CPUs 0-3 (NVML's CPU affinity)
    near = {"0": (4, 5, 6, 7), "1": (0, 1, 2, 3)}
    assert pinning.cpu_shares(cores, ("0", "1"), near) == {"0": (4, 5, 6, 7), "1": (0, 1, 2, 3)}
    # both on one node: the near cores are split, the rest fills up
    near = {"0": (0, 1, 2), "1": (0, 1, 2)}
    assert pinning.cpu_shares(cores, ("0", "1"), near) == {"0": (0, 1, 2, 3), "1": (4, 5, 6, 7)}
    assert pinning.mask_cpus([0xF0, 0x1]) == (4, 5, 6, 7, 64)


def test_visible_gpus_carry_their_near_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = [FakeGpu(uuid="GPU-0", cpu_affinity=[0xFF00]), FakeGpu(uuid="GPU-1")]
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(*gpus))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    found = visible.visible_gpus()
    assert [g.near_cpus for g in found] == [tuple(range(8, 16)), ()]  # unsupported: none known


def test_a_worker_takes_its_cpus_and_threads_from_the_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from kernelgate.plugin import workers

    class Node:
        def __init__(self) -> None:
            self.workerinput: dict[str, object] = {"workerid": "gw1"}

    node = Node()
    workers.hand_out(Slots(("0", "1"), cpus=pinning.cpu_shares([(c,) for c in range(8)], ("0", "1"))), node)
    assert node.workerinput[workers.GPU_KEY] == "1"
    assert node.workerinput[workers.CPUS_KEY] == [4, 5, 6, 7]
    taken: list[object] = []
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cpus: taken.append(cpus))
    monkeypatch.delenv(workers.THREADS_VAR, raising=False)
    monkeypatch.delenv(pinning.SHARE_VAR, raising=False)
    workers.share_cpus([4, 5, 6, 7])
    assert taken == [[4, 5, 6, 7]] and os.environ[workers.THREADS_VAR] == "4"
    assert os.environ[pinning.SHARE_VAR] == "4-7"
    monkeypatch.setenv(workers.THREADS_VAR, "2")  # the user's setting wins
    workers.share_cpus([4, 5, 6, 7])
    assert os.environ[workers.THREADS_VAR] == "2"


def test_the_host_cores_are_read_from_sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from kernelgate.plugin import workers

    for cpu, siblings in {0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"}.items():
        folder = tmp_path / f"cpu{cpu}" / "topology"
        folder.mkdir(parents=True)
        (folder / "thread_siblings_list").write_text(siblings + "\n")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4})
    assert workers.host_cores(tmp_path) == [(0, 2), (1, 3), (4,)]  # cpu4: no topology, a core alone
    slots = Slots(("0", "1"), cpus=pinning.cpu_shares(workers.host_cores(tmp_path), ("0", "1")))
    slots.claim("gw0")
    slots.claim("gw1")
    assert slots.summary() == "gw0 on GPU 0 (CPUs 0,2), gw1 on GPU 1 (CPUs 1,3)"


def test_a_workers_cpu_share_is_recorded_and_its_thread_count_is_no_change() -> None:
    plain = {"torch_threads": "32", "env.OMP_NUM_THREADS": "1", "cudnn": "91900"}
    worker = {"torch_threads": "16", "env.OMP_NUM_THREADS": "16", "cudnn": "91900", "cpu_share": "0-15"}
    assert envdiff.changes(plain, worker) == []
    # without a kernelgate share, the same difference is the machine's and may explain a change
    worker.pop("cpu_share")
    assert [c.key for c in envdiff.changes(plain, worker)] == ["torch_threads", "env.OMP_NUM_THREADS"]
    # and a share does not hide anything else
    newer = {**worker, "cudnn": "92000", "cpu_share": "0-15"}
    assert [str(c) for c in envdiff.changes(plain, newer)] == ["cudnn 91900 -> 92000"]
