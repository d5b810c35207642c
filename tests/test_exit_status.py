"""The run's exit status is the gate's verdict, whatever the test does with it: a regressed
benchmark marked ``xfail``, or a test that catches pytest's ``Failed``, still fails the run; the
report and the terminal say so too (CPU, a small torch module, real measurements)."""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE = """
import pytest
import torch
from kernelgate.models.layers import Layers

LAYERS = Layers({"0": "Conv2d", "1": "ReLU", "2": "Conv2d"})


def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3)).eval()


def test_warm_up():  # not a gate test: the first forwards of a process are far slower on a CPU
    for _ in range(20):
        net()(torch.rand(1, 3, 48, 48))


@pytest.mark.xfail(reason="known slow")
def test_marked_xfail(kernelgate):
    kernelgate.module(net(), torch.rand(1, 3, 48, 48), LAYERS, name="tiny-xfail")


def test_catches_failed(kernelgate):
    try:
        kernelgate.module(net(), torch.rand(1, 3, 48, 48), LAYERS, name="tiny-caught")
    except pytest.fail.Exception:
        pass
"""

ARGS = ("-p", "no:cacheprovider", "--kernelgate", "--kernelgate-device=cpu", "--benchmark-min-rounds=2")
# the layer "2" run 30 more times per forward, a wide threshold, the screen alone
SLOW = (
    "--kernelgate-slow-layer=2:30", "--kernelgate-threshold=100%", "--kernelgate-floor-us=100",
    "--kernelgate-no-confirm",
)  # fmt: skip


def test_a_regression_marked_xfail_or_caught_still_fails_the_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # threads spinning against other work on 2 cores
    pytester.makepyfile(test_suite=SUITE)
    pytester.runpytest_subprocess(*ARGS, "--kernelgate-save").assert_outcomes(passed=2, xpassed=1)

    result = pytester.runpytest_subprocess(*ARGS, *SLOW)
    result.assert_outcomes(passed=2, xfailed=1)  # what pytest alone would call a green run
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAILED tiny-xfail: regression: total regressed, 2 regressed; if intended, re-record: *",
            "FAILED tiny-caught: regression: total regressed, 2 regressed; if intended, re-record: *",
        ]
    )
    report = Path(pytester.path, ".kernelgate", "report", "report.md").read_text()
    assert report.splitlines()[1].startswith("### ❌ kernelgate:")


def test_a_crash_the_test_catches_still_fails_the_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_suite="""
import pytest
import torch
from kernelgate.models.layers import Layers


class Crash(torch.nn.Module):
    def forward(self, x):
        raise RuntimeError("CUDA error: an illegal memory access was encountered (simulated)")


@pytest.mark.xfail(raises=RuntimeError)
def test_crash(kernelgate):
    kernelgate.module(Crash(), torch.zeros(1), Layers({}), name="crash")
"""
    )
    result = pytester.runpytest_subprocess(*ARGS, "--kernelgate-on-nothing-compared=warn")
    result.assert_outcomes(xfailed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["FAILED test_suite.py::test_crash: not compared: RuntimeError: CUDA error: an illegal*"]
    )
