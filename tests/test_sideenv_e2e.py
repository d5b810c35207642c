"""A dependency upgrade in the head, end to end on the CPU (each child of the judge a fresh process):
base and head pin another ``fastlib`` in requirements.txt, and the head's makes every Conv2d 21 times
slower. The run's environment has the head's (as CI installs it); without environments of their
own both sides of the same-host A/B would import it and agree. ``env_install`` is a ``python -c``
that writes ``kgprobe.py`` with the side's requirements.txt into the side's overlay (no network).

Also ``kernelgate ab``: each side's pytest imports its own overlay (a plain test, no torch).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = (
    "{python} -c \"import pathlib, sys; t = pathlib.Path('requirements.txt').read_text().strip(); "
    "pathlib.Path(sys.argv[1], 'kgprobe.py').write_text('VERSION = %r' % t)\" {target}"
)
PYPROJECT = f"""
[tool.kernelgate]
layer_threshold = "1000%"
kernel_threshold = "1000%"
total_threshold = "1000%"
floor_us = 300.0
kernel_floor_us = 300.0
confirm_min_rounds = 2
confirm_max_rounds = 2
env_install = '''{PROBE}'''
"""

# the head's fastlib makes every Conv2d forward 21 times slower; each process writes what it saw
SUITE = """
import json, os, sys
import torch
import kgprobe
from kernelgate.models.layers import Layers

LAYERS = Layers({"0": "Conv2d", "1": "ReLU", "2": "Conv2d"})
if kgprobe.VERSION == "fastlib==2":
    _forward = torch.nn.Conv2d.forward

    def _slow(self, x):
        for _ in range(20):
            _forward(self, x)
        return _forward(self, x)

    torch.nn.Conv2d.forward = _slow

    def teardown_module():  # a run in the tests' own process leaves torch as it was
        torch.nn.Conv2d.forward = _forward


def test_tiny(kernelgate):
    child = any(a.startswith("--kernelgate-confirm-out") for a in sys.argv)
    with open(os.environ["KG_SEEN"], "a") as f:
        f.write(json.dumps({"file": __file__, "version": kgprobe.VERSION, "child": child}) + "\\n")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3))
    kernelgate.module(net.eval(), torch.rand(1, 3, 48, 48), LAYERS, name="tiny-fastlib")
"""


def git(path: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=path, check=True, capture_output=True,
    )  # fmt: skip


def commit(path: Path, message: str) -> None:
    git(path, "add", "-A")
    git(path, "commit", "-qm", message)


def installed(monkeypatch: pytest.MonkeyPatch, site: Path, version: str) -> None:
    """The run's own environment holds ``fastlib`` ``version`` (a folder on PYTHONPATH, and on this
    process's sys.path for the runs in it)."""
    site.mkdir(exist_ok=True)
    (site / "kgprobe.py").write_text(f"VERSION = {version!r}\n")
    # as pip does, no bytecode of the version before (its .pyc would pass for this one: the same size,
    # and written in the same second where the run between the two took less than one)
    shutil.rmtree(site / "__pycache__", ignore_errors=True)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    monkeypatch.syspath_prepend(str(site))


@pytest.mark.slow
def test_a_dependency_upgrade_is_measured_with_each_sides_own_packages(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KERNELGATE_CACHE", str(tmp_path / "cache"))
    seen = tmp_path / "seen.jsonl"
    monkeypatch.setenv("KG_SEEN", str(seen))
    site = tmp_path / "site"
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(test_suite=SUITE)
    pytester.path.joinpath("requirements.txt").write_text("fastlib==1\n")
    pytester.path.joinpath(".gitignore").write_text(".kernelgate/\n")
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "base")
    common = ("-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-min-rounds=3")
    installed(monkeypatch, site, "fastlib==1")
    pytester.runpytest(*common, "--kernelgate-save").assert_outcomes(passed=1)
    commit(pytester.path, "baseline")
    git(pytester.path, "checkout", "-q", "-b", "pr")
    pytester.path.joinpath("requirements.txt").write_text("fastlib==2\n")
    commit(pytester.path, "fastlib 2")
    installed(monkeypatch, site, "fastlib==2")  # CI installed the head's requirements

    result = pytester.runpytest(*common)
    out = result.stdout.str()
    assert "the dependency files differ from the base (requirements.txt)" in out, out[-3000:]
    result.stdout.fnmatch_lines(["*kernelgate: base environment * (built in * s): torch *"])
    result.stdout.fnmatch_lines(["*kernelgate: head environment * (built in * s): torch *"])
    runs = [json.loads(line) for line in seen.read_text().splitlines()]
    children = [r for r in runs if r["child"]]
    base = [r["version"] for r in children if "kernelgate-judge-" in r["file"]]
    head = [r["version"] for r in children if "kernelgate-judge-" not in r["file"]]
    assert base == ["fastlib==1"] * 2 and head == ["fastlib==2"] * 2, runs
    result.stdout.fnmatch_lines(["*REGRESSION (same-host A/B): base -> head on this runner: *"])
    assert result.ret == 1, out[-3000:]


def test_kernelgate_ab_runs_each_side_in_its_own_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KERNELGATE_CACHE", str(tmp_path / "cache"))
    seen = tmp_path / "seen.txt"
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(
        test_plain=f"""
        import kgprobe

        def test_plain():
            with open({str(seen)!r}, "a") as f:
                f.write(kgprobe.VERSION + "\\n")
        """
    )
    pytester.path.joinpath("requirements.txt").write_text("fastlib==1\n")
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "base")
    pytester.path.joinpath("requirements.txt").write_text("fastlib==2\n")  # the working tree's
    installed(monkeypatch, tmp_path / "site", "fastlib==2")

    def ab(*config: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kernelgate.cli", "ab", "--base", "HEAD", "--rounds", "1",
             "--work", str(tmp_path / "work"), *config, "--", "test_plain.py"],
            cwd=pytester.path, capture_output=True, text=True, check=False,
        )  # fmt: skip

    done = ab()
    # a plain test saves no gate result: the A/B ends there, after one round a side
    assert "the A/B rounds wrote no results" in done.stdout, done.stdout + done.stderr
    assert "kernelgate: base environment " in done.stdout and "kernelgate: head environment " in done.stdout
    assert seen.read_text().split() == ["fastlib==1", "fastlib==2"]

    failing = PYPROJECT.replace(PROBE, "{python} -c 'exit(4)' {target}")
    pytester.path.joinpath("pyproject.toml").write_text(failing)
    failed = ab()
    assert failed.returncode == 2
    assert "the base side's environment could not be built: " in failed.stdout
    assert "exited 4: no output" in failed.stdout and "stopping the A/B run" in failed.stdout
