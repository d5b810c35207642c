"""A second repository adopts kernelgate: tests/adopter/ (its own tiny model in src/tinydet, its test
in perf/, its baselines in perf-baselines/) calls the reusable workflow from its own workflow file
and installs kernelgate as the built wheel. The test runs, on the CPU, the steps of kernelgate.yml
that its caller's inputs shape: the doctor, the gate and the job summary; the baseline is recorded
with the oldest allowed pytest-benchmark (4.0.0, with pytest 8.0.0) and the gate runs with the
newest (this environment's); the recording runs under pytest-xdist, where measure/timing.py reads
pytest-benchmark's internals (tests/test_xdist.py runs them with the newest)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from gh_expressions import interpolate
from test_workflows import BIN, load, tool
from wheels import fresh_venv

ADOPTER = Path(__file__).parent / "adopter"
README = Path(__file__).parent.parent / "README.md"
CALLED = "kernelgate/kernelgate/.github/workflows/kernelgate.yml@"
OLDEST = ("pytest-benchmark==4.0.0", "pytest==8.0.0")


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=repo, check=True, capture_output=True,
    )  # fmt: skip


def inputs_of(caller: dict[str, Any]) -> dict[str, Any]:
    """The inputs kernelgate.yml gets from ``caller``'s ``with:``, its defaults for the rest."""
    declared = load("kernelgate.yml")[True]["workflow_call"]["inputs"]
    given = caller["with"]
    assert set(given) <= set(declared), set(given) - set(declared)
    assert {k for k, v in declared.items() if v.get("required")} <= set(given)
    return {k: v.get("default") for k, v in declared.items()} | given


def step(name: str) -> dict[str, Any]:
    (found,) = [s for s in load("kernelgate.yml")["jobs"]["gate"]["steps"] if s.get("name") == name]
    return found


def run_step(name: str, inputs: dict[str, Any], repo: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """One ``run:`` step of kernelgate.yml's gate job, in ``repo``, its env from ``inputs``."""
    found = step(name)
    ctx = {"inputs": inputs, "matrix": {"arch": "cpu"}}
    env = {k: interpolate(str(v), ctx) for k, v in found.get("env", {}).items()}
    env = {**os.environ, **env, **extra}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", found["run"]],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_the_step_form_in_the_readme_is_the_adopters_workflow_and_lints_clean() -> None:
    """README's lines for the composite action are the job of tests/adopter's perf-step.yml; the
    inputs they give exist in action.yml; actionlint and zizmor find nothing in that workflow."""
    workflow = ADOPTER / ".github" / "workflows" / "perf-step.yml"
    job = yaml.safe_load(workflow.read_text())["jobs"]["perf"]
    section = README.read_text().split("## Adopt it in another repository", 1)[1].split("\n## ", 1)[0]
    snippets = [yaml.safe_load(block.split("```", 1)[0]) for block in section.split("```yaml\n")[1:]]
    assert job in snippets, "README's step-level lines differ from the adopter's perf-step.yml"
    action = yaml.safe_load((README.parent / "action.yml").read_text())
    (used,) = [s for s in job["steps"] if s.get("uses", "").startswith("kernelgate/kernelgate@")]
    assert set(used["with"]) <= set(action["inputs"]), set(used["with"]) - set(action["inputs"])
    assert job["steps"][0]["with"]["fetch-depth"] == 0  # the judge's base commit needs the history
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    config = ADOPTER / ".github" / "actionlint.yaml"
    linted = subprocess.run([tool("actionlint"), "-no-color", "-config-file", str(config), str(workflow)],
                            capture_output=True, text=True, check=False, env=env)  # fmt: skip
    assert linted.returncode == 0, linted.stdout + linted.stderr
    audited = subprocess.run([tool("zizmor"), "--offline", "--no-progress", str(workflow)],
                             capture_output=True, text=True, check=False, env=env)  # fmt: skip
    assert audited.returncode == 0 and "No findings" in audited.stdout, audited.stdout + audited.stderr


@pytest.mark.slow
def test_another_repository_adopts_kernelgate_through_the_workflow_and_the_wheel(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    repo = tmp_path / "tinydet"
    shutil.copytree(ADOPTER, repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tinydet")
    workflow = repo / ".github" / "workflows" / "perf.yml"
    caller = yaml.safe_load(workflow.read_text())["jobs"]["kernelgate"]
    assert caller["uses"].startswith(CALLED)
    readme = README.read_text().split("## Adopt it in another repository", 1)[1]
    shown = yaml.safe_load(readme.split("```yaml\n", 1)[1].split("```", 1)[0])["jobs"]["kernelgate"]
    assert shown | {"uses": caller["uses"]} == caller  # the README's lines are the ones tested here
    inputs = inputs_of(caller)
    assert (inputs["tests"], inputs["baseline-dir"]) == ("perf", "perf-baselines")
    linted = subprocess.run(
        [tool("actionlint"), "-no-color", str(workflow)], capture_output=True, text=True, check=False,
        env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
    )  # fmt: skip
    assert linted.returncode == 0, linted.stdout + linted.stderr

    # the baseline, recorded as README tells a new repository to: with the oldest allowed versions
    old = fresh_venv(tmp_path / "old", str(built[0]), "-e", str(repo), *OLDEST)
    record = subprocess.run(
        [str(old), "-m", "pytest", "--kernelgate-device=cpu", "--kernelgate-save", "-n", "1",
         "-p", "no:cacheprovider"],
        cwd=repo, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert record.returncode == 0, record.stdout[-3000:] + record.stderr[-2000:]
    (saved,) = (repo / "perf-baselines").glob("*/0001_kernelgate.json")
    data = json.loads(saved.read_text())
    assert data["version"] == "4.0.0"
    names = sorted(b["fullname"] for b in data["benchmarks"])
    assert names == [f"perf/test_tiny_model.py::test_tiny_model[{n}]" for n in (32, 48)]
    assert data["benchmarks"][0]["stats"]["rounds"] >= 1  # timed by timing.py under xdist

    # the gate job on a runner: the install step's .venv, then the steps as kernelgate.yml has them,
    # on the CPU (the runner here has no GPU) in one process, with the newest pytest-benchmark
    fresh_venv(repo / ".venv", str(built[0]), "-e", str(repo))
    inputs |= {"device": "cpu", "workers": "0", "pytest-args": "-v"}
    doctor = run_step("Is the runner fit to benchmark?", inputs, repo)
    assert doctor.returncode == 0, doctor.stdout[-2000:] + doctor.stderr[-2000:]
    assert "fit to benchmark in CPU mode" in doctor.stdout
    gate = run_step("Gate (kernels and cold start)", inputs, repo)
    out = gate.stdout
    assert gate.returncode == 0, out[-3000:] + gate.stderr[-2000:]
    assert "2 passed" in out
    # a line per finished gate test, with the gate's verdict; every layer with -v
    progress = [line for line in out.splitlines() if line.startswith("kernelgate [")]
    assert [line.split(": ")[0] for line in progress] == [
        "kernelgate [1/2] test_tiny_model[32]",
        "kernelgate [2/2] test_tiny_model[48]",
    ], out[-3000:]
    assert all(line.split(": ", 1)[1].startswith(("pass (", "suspect: ")) for line in progress)
    assert "tinydet-fp32-32 on cpu-" in out and "tinydet-fp32-48 on cpu-" in out
    results = json.loads(next((repo / ".kernelgate" / "results").glob("*/0001_kernelgate.json")).read_text())
    from importlib.metadata import version

    assert results["version"] == version("pytest-benchmark")
    summary = tmp_path / "summary.md"
    done = run_step("Job summary", inputs, repo, GITHUB_STEP_SUMMARY=str(summary))
    assert done.returncode == 0
    text = summary.read_text()
    assert text.startswith("<!-- kernelgate-report -->") and "tinydet-fp32-48" in text
    assert "### ✅ kernelgate: no regression in 2 benchmark(s)" in text
    assert sys.executable not in out  # the runner's own .venv ran it
