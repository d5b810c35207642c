"""The nightly's history wiring (docs/history.md): the GPU job keeps the night, finds the changes,
bisects them on its own runner time-boxed by the bisect-minutes input, writes the job summary and
hands the night to two jobs on GitHub's runners, each with only the permission it needs: one commits
to the kernelgate-history branch, one opens or updates an issue per slowdown."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parent.parent


def nightly() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / ".github" / "workflows" / "nightly.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_bisect_minutes_is_an_input_with_a_default_for_the_schedule() -> None:
    on = nightly().get("on", nightly().get(True))
    spec = on["workflow_dispatch"]["inputs"]["bisect-minutes"]
    assert spec["type"] == "number" and spec["default"] == 30
    (step,) = [s for s in nightly()["jobs"]["full"]["steps"] if "kernelgate.cli)" in s.get("run", "")]
    assert step["env"]["MINUTES"] == "${{ inputs.bisect-minutes || 30 }}"
    assert '--minutes "$MINUTES"' in step["run"]


def test_the_gpu_job_adds_the_night_then_changes_bisect_and_publish_in_that_order() -> None:
    job = nightly()["jobs"]["full"]
    assert job["permissions"] == {"contents": "read"}  # still read-only: the writes are other jobs'
    names = [s.get("name", "") for s in job["steps"]]
    assert names.index(
        "The history so far (branch kernelgate-history; none before the first night)"
    ) < names.index("Gate (full matrix), this repository's own action")
    (checkout,) = [s for s in job["steps"] if s.get("with", {}).get("ref") == "kernelgate-history"]
    assert checkout["continue-on-error"] is True and checkout["with"]["persist-credentials"] is False
    assert checkout["with"]["path"] == ".kernelgate/nights"  # .kernelgate/history is the action's
    (step,) = [s for s in job["steps"] if "kernelgate.cli)" in s.get("run", "")]
    run = step["run"]
    order = [
        run.index(f'"${{kg[@]}}" {verb}') for verb in ("history add", "changes", "bisect", "history publish")
    ]
    assert order == sorted(order)
    assert '--commit "$GITHUB_SHA"' in run and '>> "$GITHUB_STEP_SUMMARY"' in run
    assert step["if"].startswith("${{ !cancelled()")
    assert "history" in next(s for s in job["steps"] if s.get("name") == "Install")["run"]


def test_each_write_has_its_own_job_with_only_that_permission() -> None:
    jobs = nightly()["jobs"]
    assert jobs["issues"]["permissions"] == {"actions": "read", "issues": "write"}
    assert jobs["history"]["permissions"] == {"actions": "read", "contents": "write"}
    for name in ("issues", "history"):
        assert jobs[name]["runs-on"] == "ubuntu-latest" and jobs[name]["needs"] == "full"
        assert not any(
            "checkout@" in s.get("uses", "") for s in jobs[name]["steps"]
        )  # no code of the repo runs
    (issues,) = jobs["issues"]["steps"]
    assert "<!-- kernelgate-change: $key -->" in issues["run"]
    assert re.search(r'"\$\{found#\* \}" = open', issues["run"])  # a closed issue is left closed
    assert "--method PATCH" in issues["run"] and "--method POST" in issues["run"]
