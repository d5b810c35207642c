"""pytest-xdist: one worker per GPU, each pinned to its own, and results merged as if one process ran.

On the CPU with a small torch module (no GPU needed): the pinning runs against a fake NVML that a
conftest.py installs in every process of the run (controller, workers, confirm runs). Each pytest
run with ``-n`` is a fresh process, as in CI (the one without, in this process); ``OMP_NUM_THREADS=1``
(tests/conftest.py) keeps two CPU workers on a small machine from spinning against each other.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernelgate.baseline import store as baseline
from kernelgate.plugin import hooks as plugin

pytest.importorskip("xdist")

SUITE = """
import os
from pathlib import Path

import pytest
import torch
from kernelgate.models.layers import Layers

LAYERS = Layers({"firstconv": "Conv2d", "midrelu": "ReLU", "lastconv": "Conv2d"})


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.firstconv = torch.nn.Conv2d(3, 8, 3)
        self.midrelu = torch.nn.ReLU()
        self.lastconv = torch.nn.Conv2d(8, 8, 3)

    def forward(self, x):
        return self.lastconv(self.midrelu(self.firstconv(x)))


@pytest.mark.parametrize("size", [32, 40])
def test_tiny(kernelgate, request, size):
    confirm = request.config.getoption("kernelgate_confirm_out")
    role = "confirm" if confirm else os.environ.get("PYTEST_XDIST_WORKER", "main")
    seen = Path(os.environ["SEEN_DIR"]) / f"{request.node.name}.{role}"
    seen.write_text(os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)"))
    kernelgate.module(Net().eval(), torch.rand(1, 3, size, size), LAYERS, name=f"tiny-{size}")
"""

# Records, in every process of the run, whether the controller imported torch.
CONFTEST = """
import os
import sys
from pathlib import Path


def pytest_unconfigure(config):
    role = getattr(config, "workerinput", {}).get("workerid", "controller")
    Path(os.environ["SEEN_DIR"], f"torch.{role}").write_text(str("torch" in sys.modules))
"""

# Fake GPUs (names from FAKE_GPUS) behind a fake pynvml, in every process of the run.
FAKE_NVML_CONFTEST = """
import os
import sys

from fake_nvml import FakeGpu, fake_pynvml

NAMES = {"h200": ("NVIDIA H200", (9, 0)), "a100": ("NVIDIA A100-SXM4-80GB", (8, 0))}
GPUS = [
    FakeGpu(name=NAMES[kind][0], capability=NAMES[kind][1], uuid=f"GPU-{i}")
    for i, kind in enumerate(os.environ["FAKE_GPUS"].split(","))
]
sys.modules["pynvml"] = fake_pynvml(*GPUS)
"""

# 16 profiled iterations: over 8, a few baseline iterations as slow as the slowed ones (a loaded 2-core
# machine) leave a 20-fold slowdown at p = 0.01, ambiguous, and the test of a slowed layer passes
BASE = ("-p", "no:cacheprovider", "--kernelgate", "--kernelgate-device=cpu", "--kernelgate-iterations=16")
# Only lastconv can fail: every other layer, kernel and the total have thresholds far over CPU noise.
SLOW = (
    "--kernelgate-slow-layer=lastconv:30",
    "--kernelgate-threshold=100000%",
    "--kernelgate-rule=*:lastconv=100%",
    "--kernelgate-floor-us=100",
    "--kernelgate-total-threshold=100000%",
    "--kernelgate-kernel-threshold=100000%",
)
# Nothing can fail: thresholds far over the noise of a loaded CPU, for layers, kernels and the total.
WIDE = (
    "--kernelgate-threshold=100000%",
    "--kernelgate-kernel-threshold=100000%",
    "--kernelgate-total-threshold=100000%",
    "--kernelgate-floor-us=1000000",
)


@pytest.fixture
def seen(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = pytester.path / "seen"
    folder.mkdir()
    monkeypatch.setenv("SEEN_DIR", str(folder))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    pytester.makepyfile(test_suite=SUITE)
    return folder


def fake_gpus(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    kinds: str,
    visible: str | None,
    extra: str = "",
) -> None:
    """Fake GPUs ``kinds`` (``h200,a100``) behind a fake pynvml in every process of the run, with
    CUDA_VISIBLE_DEVICES ``visible`` (None: unset); ``extra`` is added to the conftest."""
    pytester.makepyfile(fake_nvml=(Path(__file__).parent / "fake_nvml.py").read_text())
    pytester.makeconftest(FAKE_NVML_CONFTEST + extra)
    monkeypatch.setenv("FAKE_GPUS", kinds)
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)


def workers_of(folder: Path) -> dict[str, str]:
    """test name -> the worker that ran it (the last run's)."""
    return {p.name.rsplit(".", 1)[0]: p.name.rsplit(".", 1)[1] for p in folder.glob("test_tiny*.gw*")}


def failure_messages(result: pytest.RunResult) -> dict[str, str]:
    """The gate's failure message of each failed test."""
    text = result.stdout.str()
    pattern = r"_{3,} (test_tiny\[\d+\]) _{3,}\n(.*?)(?=\n-{3,} Captured|\n_{3,} |\n={3,})"
    return {
        name: "\n".join(line for line in body.splitlines() if not line.startswith("[gw")).strip()
        for name, body in re.findall(pattern, text, re.S)
    }


def masked(messages: dict[str, str]) -> dict[str, str]:
    """Numbers masked, with their unit: CPU timings differ every run (and 990 µs of one run is 1.010 ms
    of the next)."""
    return {name: re.sub(r"\d+(?:\.\d+)?(?: (?:µs|ms|s)\b)?", "N", text) for name, text in messages.items()}


def framed(messages: dict[str, str]) -> dict[str, str]:
    """The lines of a failure message that do not depend on which figures a noisy CPU pushed over their
    threshold in this run: the head up to the baseline key, and the structural note, the baseline and
    the re-record command (the figures and the side line between them do: on the 2-core CI machine the
    host time of the slowed layer failed in one run and stayed under its threshold in the next)."""
    kept = {}
    for name, text in masked(messages).items():
        head, *rest = text.splitlines()
        lines = [": ".join(head.split(": ")[:2])]
        lines += [line for line in rest if line.startswith(("  note:", "  baseline:", "  if this change"))]
        kept[name] = "\n".join(lines)
    return kept


def regressed(message: str) -> list[str]:
    """The figures a failure message calls REGRESSED."""
    return re.findall(r"REGRESSED (.+?): ", message)


def test_two_workers_save_compare_fail_and_report_as_one_process(
    pytester: pytest.Pytester, seen: Path
) -> None:
    pytester.makeconftest(CONFTEST)

    # (a) --kernelgate-save under -n 2: one baseline file with the benchmarks of both workers
    saved = pytester.runpytest_subprocess(*BASE, "-n", "2", "--kernelgate-save")
    saved.assert_outcomes(passed=2)
    assert sorted(workers_of(seen).values()) == ["gw0", "gw1"], "each worker should run one benchmark"
    saved.stdout.fnmatch_lines(["*kernelgate: 2 pytest-xdist workers; the gate timed its rounds itself*"])
    (path,) = pytester.path.glob("baselines/cpu-*/0001_kernelgate.json")
    doc = json.loads(path.read_text())
    names = [b["extra_info"]["kernelgate"]["benchmark"] for b in doc["benchmarks"]]
    assert names == ["tiny-32", "tiny-40"]
    for bench in doc["benchmarks"]:
        assert bench["stats"]["rounds"] == 10 and bench["stats"]["iterations"] == 1
        assert 0 < bench["stats"]["min"] <= bench["stats"]["median"] <= bench["stats"]["max"]
        assert bench["options"]["timer"] == "perf_counter"
        assert bench["extra_info"]["kernelgate"]["wall_us"]["n"] == 10
    for bench in baseline.read_document(path)["benchmarks"]:  # the samples, from the file beside it
        assert len(bench["extra_info"]["kernelgate"]["wall_us"]["samples"]) == 10
    (results,) = pytester.path.glob(".kernelgate/results/cpu-*/0001_kernelgate.json")
    assert len(json.loads(results.read_text())["benchmarks"]) == 2
    # pytest-benchmark's own compare reads it
    table = subprocess.run(
        [sys.executable, "-m", "pytest_benchmark", "compare", str(path)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    assert "test_tiny[32]" in table.stdout and "test_tiny[40]" in table.stdout

    # (b) a second -n 2 run compares with it and passes; (d) its report lists both benchmarks
    passed = pytester.runpytest_subprocess(*BASE, *WIDE, "-n", "2")
    passed.assert_outcomes(passed=2)
    passed.stdout.fnmatch_lines(["*│ tiny-32 *│ total *", "*│ tiny-40 *│ total *"])
    # the controller prints a line per finished test as the workers report them
    progress = [line for line in passed.stdout.lines if line.startswith("kernelgate [")]
    assert [line.split(": ")[0] for line in progress][-1].startswith("kernelgate [2/2] test_tiny[")
    assert all(": passed (" in line for line in progress), progress
    report = pytester.path / ".kernelgate" / "report"
    markdown = (report / "report.md").read_text()
    assert "no regression in 2 benchmark(s)" in markdown
    assert "| tiny-32 |" in markdown and "| tiny-40 |" in markdown
    assert [b["benchmark"] for b in json.loads((report / "report.json").read_text())["benchmarks"]] == [
        "tiny-32",
        "tiny-40",
    ]

    # (c) a slowed layer fails under -n 2 with the message of a run without xdist
    slowed = pytester.runpytest_subprocess(*BASE, *SLOW, "-n", "2", "--kernelgate-no-confirm")
    slowed.assert_outcomes(failed=2)
    assert (seen / "torch.controller").read_text() == "False", "the controller must not import torch"
    assert (seen / "torch.gw0").read_text() == "True"  # the check can fail
    # the same run without xdist (in this process: the runs above were the processes of -n 2)
    alone = pytester.runpytest(*BASE, *SLOW, "-p", "no:xdist", "--kernelgate-no-confirm")
    alone.assert_outcomes(failed=2)
    distributed, single = failure_messages(slowed), failure_messages(alone)
    assert sorted(distributed) == ["test_tiny[32]", "test_tiny[40]"]
    assert framed(distributed) == framed(single)
    for messages in (distributed, single):  # what failed is the slowed layer, seen from either side
        for name, message in messages.items():
            figures = regressed(message)
            assert figures and all(f.endswith("lastconv Conv2d") for f in figures), (name, figures)
    # the slowed layer is named: its CPU time, or its host time (which the 30 extra runs move as much)
    # where a noisy 2-core machine leaves the CPU time ambiguous
    assert re.search(r"REGRESSED (host time of )?lastconv Conv2d", distributed["test_tiny[32]"])
    doc = json.loads((report / "report.json").read_text())
    assert doc["failed"] and [b["benchmark"] for b in doc["benchmarks"]] == ["tiny-32", "tiny-40"]


def test_each_worker_is_pinned_to_its_own_gpu_and_the_judge_runs_both_sides_on_one(
    pytester: pytest.Pytester, seen: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three fake H200s, CUDA_VISIBLE_DEVICES=2,0: -n auto starts two workers, on GPU 2 and GPU 0."""
    fake_gpus(pytester, monkeypatch, "h200,h200,h200", "2,0")
    # the judge's fewest rounds (2 a side): what is checked is where its children run, not how long
    pytester.makepyprojecttoml("[tool.kernelgate]\nconfirm_min_rounds = 2\nconfirm_max_rounds = 2\n")
    args = ("-p", "no:cacheprovider", "--kernelgate", "-n", "auto")  # device auto: torch sees no GPU here
    saved = pytester.runpytest_subprocess(*args, "--kernelgate-save")
    saved.assert_outcomes(passed=2)
    saved.stdout.fnmatch_lines(
        [
            "*created: 2/2 workers*",
            "*2 pytest-xdist workers: gw0 on GPU 2*, gw1 on GPU 0*;*",
            # longest first, round robin: one test each
            "*time in tests per worker: gw0 1 tests in *s, gw1 1 tests in *s",
        ]
    )
    pins = {test: (seen / f"{test}.{worker}").read_text() for test, worker in workers_of(seen).items()}
    assert sorted(pins.values()) == ["0", "2"]
    (results,) = pytester.path.glob(".kernelgate/results/cpu-*/0001_kernelgate.json")
    for bench in json.loads(results.read_text())["benchmarks"]:
        environment = bench["extra_info"]["kernelgate"]["environment"]
        assert environment["env.CUDA_VISIBLE_DEVICES"] == "2,0"  # what the run started with
        assert environment["pinned_gpu"] in ("0", "2")

    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *command],
                       cwd=pytester.path, check=True, capture_output=True)  # fmt: skip
    # the same-host judge: the controller measures base and head of both suspects at session end,
    # each child under the controller's environment: base and head see the same GPU (the first)
    slowed = pytester.runpytest_subprocess(*args, *SLOW)
    assert slowed.ret == 1
    slowed.stdout.fnmatch_lines(["*same-host judge: base*", "*REGRESSION (same-host A/B)*lastconv*"])
    for test in workers_of(seen):
        assert (seen / f"{test}.confirm").read_text() == "2,0"


def test_more_workers_than_gpus_is_a_usage_error(
    pytester: pytest.Pytester, seen: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_gpus(pytester, monkeypatch, "h200,h200,h200", "1,2")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kernelgate", "-n", "3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*kernelgate: -n 3 starts 3 workers, but 2 GPU(s) are visible "
            "(CUDA_VISIBLE_DEVICES entries: 1, 2)*Use -n auto (one worker per GPU) or -n 2."
        ]
    )
    monkeypatch.setenv("FAKE_GPUS", "h200,a100")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    mixed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kernelgate", "-n", "2")
    assert mixed.ret == pytest.ExitCode.USAGE_ERROR
    mixed.stderr.fnmatch_lines(
        ["*the visible GPUs are of 2 kinds (0 sm90-nvidia-h200, 1 sm80-nvidia-a100-sxm4-80gb)*"
         "CUDA_VISIBLE_DEVICES=0 pytest benchmarks -n auto"]
    )  # fmt: skip


def test_a_worker_that_cannot_pin_itself_fails_the_run_saying_why(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conftest.py that initialised CUDA at import time (a stand-in torch here) leaves no way to pin."""
    fake_gpus(
        pytester,
        monkeypatch,
        "h200,h200",
        None,
        "\nimport types\nif os.environ.get('PYTEST_XDIST_WORKER'):\n"
        "    cuda = types.SimpleNamespace(is_initialized=lambda: True)\n"
        "    sys.modules['torch'] = types.SimpleNamespace(cuda=cuda)\n",
    )
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--kernelgate", "-n", "2", "--max-worker-restart=0"
    )
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "FAILED kernelgate: pytest-xdist worker(s) went down before sending their measurements "
            "(pytest.UsageError: kernelgate: pytest-xdist worker gwN cannot pin itself to GPU *: CUDA was "
            "initialised before kernelgate's pytest_configure*Move that CUDA call into a fixture or test*"
        ]
    )


# --- -n auto --------------------------------------------------------------------------------------


@pytest.fixture
def gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_nvml import FakeGpu, fake_pynvml

    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(*(FakeGpu(uuid=f"GPU-{i}") for i in range(4))))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)


def test_auto_starts_one_worker_per_visible_gpu(
    pytester: pytest.Pytester, gpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = pytester.parseconfig("--kernelgate")
    assert plugin.pytest_xdist_auto_num_workers(config) == 4
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert plugin.pytest_xdist_auto_num_workers(config) == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert plugin.pytest_xdist_auto_num_workers(config) == 1  # no GPU: one worker


def test_auto_on_the_cpu_is_one_worker_and_leaves_other_runs_to_xdist(
    pytester: pytest.Pytester, gpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (
        plugin.pytest_xdist_auto_num_workers(pytester.parseconfig("--kernelgate", "--kernelgate-device=cpu"))
        == 1
    )
    assert plugin.pytest_xdist_auto_num_workers(pytester.parseconfig()) is None  # kernelgate is off
    assert (
        plugin.pytest_xdist_auto_num_workers(pytester.parseconfig("--kernelgate", "--kernelgate-disable"))
        is None
    )
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")  # the user's number: xdist reads it
    assert plugin.pytest_xdist_auto_num_workers(pytester.parseconfig("--kernelgate")) is None


def test_auto_reaches_pytest_xdist(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gpus(pytester, monkeypatch, "h200,h200,h200", None)
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kernelgate", "-n", "auto")
    result.stdout.fnmatch_lines(["*created: 3/3 workers*", "*1 passed*"])
