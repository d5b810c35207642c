"""On a machine with two or more GPUs of one kind: ``-n auto`` gives each worker a GPU and a CPU share
of its own (the CPU tests in test_pinning.py and test_xdist.py check the same rules on a fake NVML)."""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.gpu

SUITE = """
import json, os

import pytest
import torch


@pytest.mark.parametrize("n", range(4))
def test_where(n, worker_id):
    props = torch.cuda.get_device_properties(0)
    record = {
        "worker": worker_id,
        "count": torch.cuda.device_count(),
        "uuid": str(props.uuid),
        "cpus": sorted(os.sched_getaffinity(0)),
        "threads": torch.get_num_threads(),
    }
    with open(f"where-{n}.json", "w") as out:
        json.dump(record, out)
"""


def test_each_worker_has_its_own_gpu_and_cpus(
    pytester: pytest.Pytester, plugin_args: tuple[str, ...]
) -> None:
    from kernelgate.machine.visible import visible_gpus

    gpus = visible_gpus()
    if len(gpus) < 2 or len({g.key for g in gpus}) > 1:
        pytest.skip(f"needs two GPUs of one kind, found {len(gpus)}: run on a 2-GPU machine (nvidia-h200-x2)")
    pytest.importorskip("xdist")
    pytester.makepyprojecttoml("[tool.kernelgate]\n")
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess(
        *plugin_args, "-p", "no:cacheprovider", "-n", "2", "--kernelgate-device=cuda"
    )
    result.assert_outcomes(passed=4)
    records = [json.loads((pytester.path / f"where-{n}.json").read_text()) for n in range(4)]
    by_worker: dict[str, dict[str, object]] = {}
    for record in records:
        assert record["count"] == 1  # each worker sees exactly one GPU
        by_worker.setdefault(str(record["worker"]), record)
        assert by_worker[str(record["worker"])]["uuid"] == record["uuid"]  # and always the same one
    assert sorted(by_worker) == ["gw0", "gw1"]
    first, second = by_worker["gw0"], by_worker["gw1"]
    assert first["uuid"] != second["uuid"]
    cpus0, cpus1 = set(first["cpus"]), set(second["cpus"])
    assert cpus0 and cpus1 and not cpus0 & cpus1
    if "OMP_NUM_THREADS" not in os.environ:  # else the user's setting stands
        assert first["threads"] == len(cpus0) and second["threads"] == len(cpus1)
