"""README's "The first run, in order", run in that order on the CPU in a fresh clone of this
repository: each command does what its comment says after the ones before it (once, `bash
.ci/gate` recorded only yolov8n and the next command failed on yolo11n for want of a baseline).

The clone's `.ci/setup` uses this test environment (KERNELGATE_PYTHON, and `.venv` links to it)
instead of installing one; the cold start times one run per scenario (KERNELGATE_COLDSTART_RUNS=1)
to keep the test short."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from wheels import source_copy

pytest.importorskip("ultralytics")

README = Path(__file__).parent.parent / "README.md"


def walk() -> list[str]:
    section = README.read_text().split("### The first run, in order\n", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=repo, check=True, capture_output=True,
    )  # fmt: skip


@pytest.mark.slow
def test_the_first_run_commands_of_the_readme_work_in_order_on_the_cpu(tmp_path: Path) -> None:
    commands = walk()
    assert commands[0] == "bash .ci/gate" and len(commands) >= 6
    origin = source_copy(tmp_path / "origin")
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "kernelgate")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))  # origin/main: the same-host judge's base
    (clone / ".venv").symlink_to(Path(sys.executable).parent.parent)
    script = "\n".join(
        f'echo "<<<{i}"; {command}; echo ">>>{i} $?"' for i, command in enumerate(commands)
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KERNELGATE_"))}
    env |= {"KERNELGATE_PYTHON": sys.executable, "KERNELGATE_COLDSTART_RUNS": "1", "COLUMNS": "100"}
    done = subprocess.run(
        ["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, timeout=1500, check=False
    )
    found = re.findall(r"<<<(\d+)\n(.*?)>>>\d+ (\d+)\n", done.stdout, re.S)
    assert len(found) == len(commands), done.stdout[-4000:] + done.stderr[-3000:]
    outputs = {commands[int(i)]: (int(rc), text) for i, text, rc in found}
    for command, (rc, text) in outputs.items():
        assert rc == 0, f"{command} exited {rc}:\n{text[-4000:]}\n{done.stderr[-3000:]}"
    gate = outputs["bash .ci/gate"][1]
    assert "no baseline for cpu-" in gate and "recording one on this machine first" in gate
    (baseline,) = clone.glob("baselines/cpu-*/0001_kernelgate.json")
    assert outputs["kernelgate arch --path --cpu"][1].strip() == str(baseline.relative_to(clone))
    doctor = outputs["kernelgate doctor"][1]
    assert "CPU mode: no CUDA GPU visible" in doctor and "fit to benchmark in CPU mode" in doctor
    quiet = outputs["pytest benchmarks -q"][1]
    assert re.search(r"^kernelgate: \d+ benchmark\(s\) compared, none failed$", quiet, re.M), quiet[-3000:]
    assert "no baseline" not in quiet
    assert (clone / ".kernelgate" / "offline" / "report.md").is_file()
    groups = next(text for command, (_, text) in outputs.items() if command.startswith("kernelgate groups"))
    assert "yolov8n-fp32-bs1-160" in groups and "yolo11n-fp32-bs1-160" in groups
