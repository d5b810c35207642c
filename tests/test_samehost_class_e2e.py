"""The same-host judge for a gate test inside a class, with the user's whole invocation in every
child, and its decision in the results file, so that ``kernelgate report`` on the same two files
says what the run said (CPU, a small torch module, a git repository; each step a pytest run of its
own in this process, each child of the judge a fresh process).

A ``-p`` plugin slows every Conv2d 21 times in every process that loads it: against the baseline
recorded without it the screen (half of the 1000 % threshold) suspects the benchmark; base and head,
both run with the plugin, agree: pass. (The threshold is wide: on a loaded 2-core machine the two
sides of one A/B were seen +265 % apart.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelgate.offline import JUDGE_KEY

PYPROJECT = """
[tool.kernelgate]
layer_threshold = "1000%"
kernel_threshold = "1000%"
total_threshold = "1000%"
floor_us = 300.0
kernel_floor_us = 300.0
confirm_min_rounds = 2
confirm_max_rounds = 2
"""

SUITE = """
import torch
from kernelgate.models.layers import Layers

LAYERS = Layers({"0": "Conv2d", "1": "ReLU", "2": "Conv2d"})


class TestGate:
    def test_tiny(self, kernelgate):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3))
        kernelgate.module(net.eval(), torch.rand(1, 3, 48, 48), LAYERS, name="tiny-in-a-class")
"""

# every Conv2d forward 20 times, and a line per process with its arguments
PLUGIN = """
import json, os, sys
import torch

_forward = torch.nn.Conv2d.forward


def _slow(self, x):
    for _ in range(20):
        _forward(self, x)
    return _forward(self, x)


torch.nn.Conv2d.forward = _slow
with open(os.environ["KG_ARGV"], "a") as f:
    f.write(json.dumps(sys.argv) + "\\n")


def pytest_unconfigure(config):  # the run's end: a run in the tests' own process leaves torch as it was
    torch.nn.Conv2d.forward = _forward
"""


def kernelgate(*args: str) -> subprocess.CompletedProcess[str]:
    """The ``kernelgate`` command in a fresh process (pytester restores sys.modules after each test,
    and numpy cannot be imported twice into one process)."""
    return subprocess.run(
        [sys.executable, "-m", "kernelgate.cli", *args], capture_output=True, text=True, check=False
    )


def git(path: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=path, check=True, capture_output=True,
    )  # fmt: skip


def commit(path: Path, message: str) -> None:
    git(path, "add", "-A")
    git(path, "commit", "-qm", message)


@pytest.mark.slow
def test_a_gate_test_in_a_class_is_judged_with_every_option_and_report_agrees(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    argv_log = tmp_path / "argv.jsonl"
    monkeypatch.setenv("KG_ARGV", str(argv_log))
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_suite=SUITE, slowconv=PLUGIN)
    pytester.path.joinpath(".gitignore").write_text(".kernelgate/\n")
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "base")
    common = ("-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-min-rounds=3")
    pytester.runpytest(*common, "--kernelgate-save").assert_outcomes(passed=1)
    commit(pytester.path, "baseline")

    pytester.syspathinsert()  # `-p slowconv`, as `python -m pytest` finds it in its folder
    result = pytester.runpytest(*common, "-p", "slowconv", "--kernelgate-trust-pt")
    out = result.stdout.str()
    assert "1 suspect(s) against the stored baseline" in out
    assert "wrote no record" not in out, out[-3000:]
    result.stdout.fnmatch_lines(["*kernelgate: tiny-in-a-class: pass: base and head agree on this runner*"])
    assert result.ret == 0, out[-3000:]
    # the PR comment lists what the judge decided, and why the screen sent it there
    md = (pytester.path / ".kernelgate" / "report" / "report.md").read_text()
    assert "Decided on this runner (base and head measured here): 1 suspect(s)" in md, md
    assert "| tiny-in-a-class | " in md and " | pass | 2 | base and head agree on this runner" in md, md

    runs = [json.loads(line) for line in argv_log.read_text().splitlines()]
    children = [argv for argv in runs if any(a.startswith("--kernelgate-confirm-out") for a in argv)]
    assert len(children) == 4  # 2 rounds x (base, head)
    for argv in children:
        assert "--kernelgate-trust-pt" in argv and "--kernelgate-device=cpu" in argv
        assert any(a.endswith("test_suite.py::TestGate::test_tiny") for a in argv)

    (base,) = pytester.path.glob("baselines/cpu-*/0001_kernelgate.json")
    (current,) = pytester.path.glob(".kernelgate/results/cpu-*/0001_kernelgate.json")
    (bench,) = json.loads(current.read_text())["benchmarks"]
    assert bench["extra_info"][JUDGE_KEY]["outcome"] == "pass"
    config = str(pytester.path / "pyproject.toml")
    report = tmp_path / "report"
    done = kernelgate("report", str(base), str(current), "--out", str(report), "--config", config)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (report / "report.md").read_text().splitlines()[1].startswith("### ✅ kernelgate: no regression")
    done = kernelgate("compare", str(base), str(current), "--config", config)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdicts of the run's same-host judge: pass" in done.stdout
