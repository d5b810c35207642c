"""What the workflows' scripts do with baselines, run as bash in a scratch git repository with the
GitHub CLI stubbed: the re-record PR says what moved, the history plot gets the older versions with
their samples files in commit order, and the nightly gates every configuration against the commit
its baseline was recorded at."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import yaml
from gh_expressions import interpolate
from real_data import SLOWED
from test_workflows import load

from kernelgate.baseline import slim, summary
from kernelgate.baseline import store as baseline
from kernelgate.baseline.store import FILE_NAME
from kernelgate.report import publish

ROOT = Path(__file__).parent.parent
ARCH = "sm90-nvidia-h200"
COMMITTED = ROOT / "baselines" / ARCH

# gh: the artifacts of the run, their zip, and the pull request calls, recorded in $GH_LOG
GH = """#!/bin/bash
echo "gh $*" >> "$GH_LOG"
case "$1 $2" in
  "api repos/o/r/actions/runs/1/artifacts") echo "7 baseline-sm90-nvidia-h200" ;;
  "api repos/o/r/actions/artifacts/7/zip") cat "$ARTIFACT_ZIP" ;;
  "pr list") cat "$OPEN_PR" 2>/dev/null || true ;;
  "pr create"|"pr edit") shift 2; while [ $# -gt 0 ]; do
      if [ "$1" = --body-file ]; then cp "$2" "$BODY_OUT"; fi; shift; done ;;
esac
"""
# python3 -m venv: a .venv whose python is this interpreter (kernelgate installed), pip a no-op
PYTHON3 = f"""#!/bin/bash
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/bash\\nif [ "$1 $2" = "-m pip" ]; then exit 0; fi\\n' > "$3/bin/python"
  printf 'exec {sys.executable} "$@"\\n' >> "$3/bin/python"
  chmod +x "$3/bin/python"; exit 0
fi
exec {sys.executable} "$@"
"""


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env={**os.environ, **(env or {})}
    )
    return done.stdout.strip()


def stub(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(0o755)


def repository(tmp_path: Path) -> Path:
    """A repository whose main holds the committed H200 baseline, with a bare remote for pushes."""
    work = tmp_path / "work"
    shutil.copytree(COMMITTED, work / "baselines" / ARCH, ignore=shutil.ignore_patterns("traces"))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", ".")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "baselines")
    git(tmp_path, "init", "-q", "--bare", "remote.git")
    return work


def rerecorded(tmp_path: Path) -> Path:
    """The artifact of a re-record: the H200 yolov8n record with model.2 slowed, as its runner saves it."""
    folder = tmp_path / "recorded" / ARCH
    entries = list(baseline.load(SLOWED).values())
    meta: dict[str, Any] = {"machine_info": {}, "commit_info": {"id": "c0ffee"}}
    baseline.save(folder / FILE_NAME, entries, arch=ARCH, **meta, created="2026-11-25T00:00:00+00:00",
                  pytest_benchmark_version="5.2.3")  # fmt: skip
    archive = tmp_path / "artifact.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for path in (
            folder / FILE_NAME,
            slim.sidecar_path(folder / FILE_NAME),
            summary.path_for(folder / FILE_NAME),
        ):
            z.write(path, path.name)
    return archive


def run_step(step: dict[str, Any], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", step["run"]], cwd=cwd, env={**os.environ, **env},
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def test_the_re_record_pr_describes_what_moved_and_is_updated_on_the_next_run(tmp_path: Path) -> None:
    work = repository(tmp_path)
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "gh", GH)
    stub(bin_dir, "python3", PYTHON3)
    (step,) = [s for s in load("baselines.yml")["jobs"]["pull-request"]["steps"] if "run" in s]
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GH_LOG": str(tmp_path / "gh.log"), "ARTIFACT_ZIP": str(rerecorded(tmp_path)),
        "OPEN_PR": str(tmp_path / "open-pr"), "BODY_OUT": str(tmp_path / "body.md"),
        "GH_TOKEN": "x", "REPO": "o/r", "RUN_ID": "1", "RUN_URL": "https://example/run/1", "BASE": "main",
        "SHA": "abc123", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{tmp_path}/remote.git.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/o/r.git",
    }  # fmt: skip
    done = run_step(step, work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    body = (tmp_path / "body.md").read_text()
    assert body.startswith("Baselines re-recorded on the self-hosted GPU runners at abc123 by [run 1]")
    assert "### kernelgate baselines: sm90-nvidia-h200" in body
    # the fixture doubles model.2 of a record of one place: about +100 % against the committed record,
    # whichever H200 host recorded it and in one place or four (+96 % against four: 102 -> 201 µs)
    moved = (
        r"\| yolov8n-fp16-bs1-640 \| `model\.2` C2f \| 10\d µs \| 20\d µs "
        r"\| \+(9[5-9]|100)\.\d % \(\+\d+\.\d µs\) \| 2\.5 % \|"
    )
    assert re.search(moved, body), body
    assert "Gone: coldstart-yolov8n-fp16-bs1-640-empty, coldstart-yolov8n-fp16-bs1-640-warm" in body
    assert (
        "gh pr create --repo o/r --base main --head kernelgate/baselines" in (tmp_path / "gh.log").read_text()
    )
    pushed = git(tmp_path / "remote.git", "ls-tree", "-r", "--name-only", "kernelgate/baselines")
    assert pushed.splitlines() == [
        f"baselines/{ARCH}/{n}" for n in (FILE_NAME, slim.SUFFIX.join(("0001_kernelgate", "")), "SUMMARY.md")
    ]
    # the next re-record: the PR is open, its description replaced
    (tmp_path / "open-pr").write_text("5\n")
    git(work, "reset", "-q", "--hard", "HEAD~1")  # a fresh checkout of main, as the next run's
    shutil.rmtree(work / "old")
    done = run_step(step, work, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gh pr edit 5 --repo o/r --body-file body.md" in (tmp_path / "gh.log").read_text()


def test_the_history_step_keeps_each_version_with_its_samples_file_in_commit_order(tmp_path: Path) -> None:
    """Two versions before HEAD, one of schema 1 (no samples file) and one of schema 2: both kept and
    loaded, oldest first. gate.yml (through kernelgate.yml, with its baseline-dir) and nightly.yml
    (through action.yml) run the same step."""
    work = tmp_path / "work"
    folder = work / "baselines" / ARCH
    folder.mkdir(parents=True)
    git(work, "init", "-q", "-b", "main")
    rerecorded(tmp_path)
    schema2 = tmp_path / "recorded" / ARCH
    for day in (20, 21, 22):
        if day == 20:
            shutil.copy(SLOWED, folder / FILE_NAME)  # schema 1
        else:
            shutil.copytree(schema2, folder, dirs_exist_ok=True)
            (folder / FILE_NAME).write_text(
                (schema2 / FILE_NAME).read_text().replace("c0ffee", f"c0ffee{day}")
            )
        git(work, "add", ".")
        date = f"2026-11-{day}T10:00:00+00:00"
        git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", str(day), "--date", date,
            env={"GIT_COMMITTER_DATE": date})  # fmt: skip
    action = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    for steps in (load("kernelgate.yml")["jobs"]["gate"]["steps"], action):
        (step,) = [s for s in steps if s.get("name") == "Older baselines for the history plot"]
        shutil.rmtree(work / ".kernelgate", ignore_errors=True)
        done = run_step(step, work, {"ARCH": ARCH, "BASELINES": "baselines"})
        assert done.returncode == 0, done.stderr
        names = sorted(p.name for p in (work / ".kernelgate" / "history").iterdir())
        assert [n.split("-", 1)[1].split(".", 1)[1] for n in names] == ["json", "json", "samples.json.xz"], (
            names
        )
        fullname = next(iter(baseline.load(SLOWED)))
        history, notes = publish.load_history(work / ".kernelgate" / "history", [fullname])
        assert notes == []
        labels = [label for label, _ in history[fullname]]
        assert [label[:16] for label in labels] == ["2026-11-20 10:00", "2026-11-21 10:00"], labels


def test_the_nightly_judges_against_the_commit_its_baseline_was_recorded_at(tmp_path: Path) -> None:
    work = repository(tmp_path)
    first = git(work, "rev-parse", "HEAD")
    path = work / "baselines" / ARCH / FILE_NAME
    (work / "code.py").write_text("x = 1\n")
    git(work, "add", ".")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "later")
    steps = load("nightly.yml")["jobs"]["full"]["steps"]
    (base,) = [s for s in steps if s.get("id") == "base"]
    bin_dir = tmp_path / "bin"
    stub(bin_dir, "python3", PYTHON3)
    subprocess.run([str(bin_dir / "python3"), "-m", "venv", str(work / ".venv")], check=True)
    for recorded, expected in (
        (first, first),
        ("0" * 40, first),
    ):  # a commit not in the history: the last change
        path.write_text(path.read_text().replace(json_id(path), recorded))
        out = tmp_path / "out"
        out.unlink(missing_ok=True)
        done = run_step(base, work, {"ARCH": ARCH, "GITHUB_OUTPUT": str(out)})
        assert done.returncode == 0, done.stderr
        assert out.read_text() == f"sha={expected}\n"
        git(work, "checkout", "-q", "--", str(path))
    # the gate is this repository's action (action.yml), given the base the step above found
    (gate,) = [s for s in steps if s.get("uses") == "./"]
    assert "--kernelgate-base ${{ steps.base.outputs.sha }}" in gate["with"]["pytest-args"]
    assert "missing-baseline" not in str(gate["with"])
    action = (ROOT / "action.yml").read_text()
    assert "--kernelgate-history .kernelgate/history" in action
    # the repository's own checkout (the other checks out the history branch into a folder)
    (checkout,) = [s for s in steps if "actions/checkout@" in s.get("uses", "") and "path" not in s["with"]]
    assert checkout["with"]["fetch-depth"] == 0


def json_id(path: Path) -> str:
    return str(json.loads(path.read_text())["commit_info"]["id"])


def test_the_baselines_workflow_records_every_configuration_the_nightly_gates_in_3_rounds(
    tmp_path: Path,
) -> None:
    (step,) = [s for s in load("baselines.yml")["jobs"]["record"]["steps"] if s.get("name") == "Record"]
    # each call's arguments, one per line, then "@@"; the cold-start call exits $COLD_RC
    stub(
        tmp_path / ".venv" / "bin", "python",
        '#!/bin/sh\nprintf "%s\\n" "$@" @@ >>calls.txt\n'
        'case "$*" in *test_coldstart*) exit "${COLD_RC:-0}" ;; esac\n',
    )  # fmt: skip
    # (matrix input, -k, the cold-start call's exit, the step's): exit 5 is no cold start selected
    cases = (("", "", "0", 0), ("quick", "yolov8n", "5", 0), ("", "", "1", 1))
    for matrix, select, cold_rc, expected_rc in cases:
        (tmp_path / "calls.txt").unlink(missing_ok=True)
        given = interpolate(step["env"]["MATRIX"], {"inputs": {"matrix": matrix}})
        env = {"SELECT": select, "MATRIX": given, "WORKERS": "0", "COLD_RC": cold_rc}
        done = run_step(step, tmp_path, env)
        assert done.returncode == expected_rc, done.stderr
        calls = (tmp_path / "calls.txt").read_text().split("@@\n")
        kernels, cold = [c.strip("\n").split("\n") for c in calls[:2]]
        for args in kernels, cold:
            assert args[:6] == ["-m", "kernelgate.cli", "record", "--rounds", "3", "--"]
            assert ("-k" in args) == bool(select)
        # every configuration the nightly gates (its kernel benchmarks, of the set asked for) ...
        assert args_of(kernels) == ("benchmarks/test_yolo.py", matrix or "full")
        # ... and the cold starts gate.yml gates (the quick set's): never the full set's compiled ones
        assert args_of(cold) == ("benchmarks/test_coldstart.py", "quick")


def args_of(args: list[str]) -> tuple[str, str]:
    """The test path and the matrix set of one recorded ``kernelgate record`` call."""
    return args[6], args[args.index("--kernelgate-matrix") + 1]
