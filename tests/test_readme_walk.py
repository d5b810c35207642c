"""README's "The first run, in order", run in that order on the CPU in a fresh clone of this
repository: each command does what its comment says after the ones before it (once, `bash
.ci/gate` recorded only yolov8n and the next command failed on yolo11n for want of a baseline).
Around it, the end-to-end checks of the gate on the real benchmarks (this test took over
test_e2e_cpu's, sharing its recorded baseline): before any baseline, a run fails naming the command
that records it; after the walk, a slowed layer (model.2 run 9 times) fails naming model.2 only,
in colour at the terminal's 80 columns, and pytest-benchmark's own --benchmark-compare (in the
same run) reads the baseline.

The clone's `.ci/setup` uses this test environment (KERNELGATE_PYTHON, and `.venv` links to it)
instead of installing one; the cold start times one run per scenario (KERNELGATE_COLDSTART_RUNS=1)
to keep the test short."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from wheels import source_copy

pytest.importorskip("ultralytics")

README = Path(__file__).parent.parent / "README.md"
# Commands whose exit status is a verdict on CPU timings (README says so). `kernelgate compare` and
# `report` exit 1 where a figure moved past its threshold between the two files, which two processes'
# CPU timings on a shared 2-core machine can (yolo11n's latency 14.4 -> 32.5 ms in one clean-clone
# .ci/run, 2026-11-26, beside the other pytest-xdist worker); the gate (.ci/gate's comparison, pytest
# benchmarks) exits 1 where base and head measured on this machine do not agree (inconclusive: host
# model.22 +53.6 % between processes of the same code after 6 a side, the suite's 2 workers and a busy
# loop on the 2 cores, 2026-11-26). These tests check what the commands do, not this machine's speed:
# exit 1 passes only with the verdict stated; 2 (usage, input) or 3 (internal error) never does.
VERDICT_EXITS = ("kernelgate compare", "kernelgate report", "pytest benchmarks", "bash .ci/gate")
GATE_VERDICT = re.compile(r"^FAILED [^:\n]+: (regression|inconclusive)\b", re.M)


def states_a_verdict(command: str, text: str) -> bool:
    if command.startswith(("kernelgate compare", "kernelgate report")):
        return bool(re.search(r"regress|over threshold|slower", text, re.I))
    return bool(GATE_VERDICT.search(text))


def walk() -> list[str]:
    section = README.read_text().split("### The first run, in order\n", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split(" # ")[0].strip() for line in block.splitlines() if line.strip()]


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=repo, check=True, capture_output=True,
    )  # fmt: skip


# The same-host judge's processes a side in the walk's gated runs: 2, the least the configuration allows
# (confirm_min_rounds = confirm_max_rounds = 2), not 3 to 6. The gate's base is this very tree (an A/A),
# and on the 2-core CI machine beside the suite's other worker the screen suspects yolov8n and yolo11n
# at the 2.5 % threshold: up to 6 rounds of a base and a head process each, building both models, in
# `.ci/gate` and again in `pytest benchmarks -q`, took the walk from 60 s alone to 270 s in the suite
# under `-n 2` (2026-11-26), and 155 s with 3 a side (2-core CI-like machine, 2026-11-27). The verdict
# the walk accepts is the same either way (a pass, or exit 1 with the verdict stated); the judge's
# statistics are tested in tests/test_samehost_e2e.py (3 a side, the default least) and test_samehost.py.
JUDGE_ROUNDS = 2


def judge_at_most(pyproject: Path, rounds: int) -> None:
    text = pyproject.read_text()
    assert "\n[tool.kernelgate]\n" in text and "confirm_max_rounds" not in text
    assert "confirm_min_rounds" not in text
    table = f"\n[tool.kernelgate]\nconfirm_min_rounds = {rounds}\nconfirm_max_rounds = {rounds}\n"
    pyproject.write_text(text.replace("\n[tool.kernelgate]\n", table, 1))


def clone_of_this_tree(tmp_path: Path, judge_rounds: int | None = None) -> Path:
    """A fresh clone of this tree (origin/main: the same-host judge's base), whose ``.venv`` is this
    test environment; ``judge_rounds``: the judge's most processes a side in it."""
    origin = source_copy(tmp_path / "origin")
    if judge_rounds is not None:
        judge_at_most(origin / "pyproject.toml", judge_rounds)
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "kernelgate")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    (clone / ".venv").symlink_to(Path(sys.executable).parent.parent)
    return clone


def walk_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KERNELGATE_"))}
    return env | {"KERNELGATE_PYTHON": sys.executable, "KERNELGATE_COLDSTART_RUNS": "1", "COLUMNS": "100"}


def run_in_order(commands: list[str], clone: Path, env: dict[str, str]) -> dict[str, tuple[int, str]]:
    """Each command in one shell, after the ones before it: its exit status and output. Every one
    exits 0, or (a command whose status is a verdict) 1 with the verdict stated."""
    script = "\n".join(
        f'echo "<<<{i}"; {command}; rc=$?; echo; echo ">>>{i} $rc"' for i, command in enumerate(commands)
    )  # fmt: skip
    done = subprocess.run(
        ["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, timeout=2400, check=False
    )
    found = re.findall(r"^<<<(\d+)\n(.*?)^>>>\1 (\d+)$", done.stdout, re.S | re.M)
    assert len(found) == len(commands), done.stdout[-4000:] + done.stderr[-3000:]
    outputs = {commands[int(i)]: (int(rc), text) for i, text, rc in found}
    for command, (rc, text) in outputs.items():
        if command.startswith(VERDICT_EXITS) and rc == 1:
            assert states_a_verdict(command, text), f"{command} exited 1 with no verdict:\n{text[-4000:]}"
            continue
        assert rc == 0, f"{command} exited {rc}:\n{text[-4000:]}\n{done.stderr[-3000:]}"
    return outputs


@pytest.mark.slow
def test_the_first_run_commands_of_the_readme_work_in_order_on_the_cpu(tmp_path: Path) -> None:
    commands = walk()
    assert commands[0] == "bash .ci/gate" and len(commands) >= 6
    clone = clone_of_this_tree(tmp_path, JUDGE_ROUNDS)
    env = walk_env()

    def pytest_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "benchmarks/test_yolo.py", "-k", "yolov8n", "-p",
             "no:cacheprovider", "--kernelgate-device=cpu", *args],
            cwd=clone, env=env, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip

    first = pytest_run()  # no baseline yet: fails, naming the test and the command that records it
    assert first.returncode == 1, first.stdout[-3000:]
    node = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp32-bs1-160]"
    assert f"record it with: pytest '{node}' --kernelgate-save" in first.stdout.splitlines()
    assert "no baseline: yolov8n-fp32-bs1-160" in first.stdout.splitlines()
    assert not list(clone.glob("baselines/cpu-*/0001_kernelgate.json"))
    outputs = run_in_order(commands, clone, env)
    gate = outputs["bash .ci/gate"][1]
    assert "no baseline for cpu-" in gate and "recording one on this machine first" in gate
    (baseline,) = clone.glob("baselines/cpu-*/0001_kernelgate.json")
    assert outputs["kernelgate arch --path --cpu"][1].strip() == str(baseline.relative_to(clone))
    doctor = outputs["kernelgate doctor"][1]
    assert "CPU mode: no CUDA GPU visible" in doctor and "fit to benchmark in CPU mode" in doctor
    quiet_rc, quiet = outputs["pytest benchmarks -q"]
    if quiet_rc == 0:  # else a verdict, checked above: -q then shows the failing rows
        assert re.search(r"^kernelgate: \d+ benchmark\(s\) compared, none failed$", quiet, re.M), quiet[
            -3000:
        ]
    assert "no baseline" not in quiet
    assert "where the time goes (medians):" not in quiet  # -q: no time split
    assert (clone / ".kernelgate" / "offline" / "report.md").is_file()
    groups = next(text for command, (_, text) in outputs.items() if command.startswith("kernelgate groups"))
    assert "yolov8n-fp32-bs1-160" in groups and "yolo11n-fp32-bs1-160" in groups

    saved = json.loads(baseline.read_text())
    assert saved["kernelgate"]["schema_version"] == 2
    bench = next(b for b in saved["benchmarks"] if b["fullname"] == node)
    layers = [lay["name"] for lay in bench["extra_info"]["kernelgate"]["layers"]]
    assert layers[:3] == ["input", "model.0", "model.1"] and "model.22" in layers
    assert bench["stats"]["rounds"] >= 3

    # the screen alone (tests/test_samehost_e2e.py covers the same-host judge), on a terminal of 80
    env["COLUMNS"] = "80"
    # 10 profiled forwards against the baseline's 5: one preempted forward of either side leaves the
    # Mann-Whitney test significant (with 5 a side it may not be: test_report_plugin's note). The same
    # run asks pytest-benchmark for its own comparison (--benchmark-compare): a process less than a
    # run of its own for it
    slowed = pytest_run(
        "--kernelgate-slow-layer=model.2:8",
        "--kernelgate-no-confirm",
        "--color=yes",
        "--kernelgate-iterations=10",
        "--benchmark-compare",
    )
    out = re.sub(r"\x1b\[[0-9;]*m", "", slowed.stdout)
    assert slowed.returncode == 1, out[-3000:]
    assert GATE_VERDICT.search(out), out[-3000:]
    # model.2's CPU ops, or its host time where the CPU ops of this busy machine stayed inside their
    # noise (+509 %, p=0.04 against the baseline's 5 forwards, once in a clean-clone CI run, 2026-11-26):
    # model.2 either way, named first. Not "no other layer": with the screen alone (no same-host
    # judge) on the shared 2-core machine another layer's CPU time can pass its limit too (model.22
    # +54.5 % against 50 %, a clean-clone CI run, 2026-11-26); CPU tests check logic, not speed
    regressed = re.findall(r"REGRESSED (?:host time of )?(model\.\d+) \w+: .*threshold 50 %", out)
    assert regressed and regressed[0] == "model.2", out[-3000:]
    assert re.search(r"REGRESSED model\.2 C2f:.*floor (1000 µs|1(\.000)? ms)", out) or re.search(
        r"REGRESSED host time of model\.2 C2f:", out
    ), out[-3000:]
    section = slowed.stdout.split(" kernelgate ")[-1].split("where the time goes")[0]
    assert "\x1b[1;31mregressed\x1b[0m" in section
    assert max(len(re.sub(r"\x1b\[[0-9;]*m", "", line)) for line in section.splitlines()[1:]) <= 80

    # pytest-benchmark's own comparison read the baseline
    assert "test_yolo[yolov8n-fp32-bs1-160] (0001_kernelg)" in out, out[-3000:]
    assert "test_yolo[yolov8n-fp32-bs1-160] (NOW)" in out, out[-3000:]


@pytest.mark.gpu
@pytest.mark.slow
def test_the_first_run_commands_of_the_readme_work_in_order_on_a_gpu(tmp_path: Path) -> None:
    """The same walk on a GPU machine, without ``--cpu`` (README: "no --cpu on a GPU"): the committed
    baseline of its architecture is found, not recorded, and `pytest benchmarks` gates against it
    twice, with the same-host judge for what the screen suspects. Run where kernelgate is installed
    in the test environment (its ``pytest11`` entry point and ``kernelgate`` command), e.g. a venv
    with the GPU image's torch: ``python3 -m venv --system-site-packages V; V/bin/pip install
    --no-deps kernelgate-*.whl ultralytics-*.whl ultralytics_thop-*.whl``; then
    ``V/bin/python -m pytest tests/test_readme_walk.py -m gpu``."""
    import importlib.metadata

    try:
        importlib.metadata.distribution("kernelgate")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("kernelgate is not installed here: the walk needs its pytest plugin and command")
    commands = [command.replace(" --cpu", "") for command in walk()]
    clone = clone_of_this_tree(tmp_path)
    env = walk_env()
    arch = subprocess.run(
        [sys.executable, "-m", "kernelgate", "arch"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    committed = clone / "baselines" / arch / "0001_kernelgate.json"
    outputs = run_in_order(commands, clone, env)
    gate = outputs["bash .ci/gate"][1]
    assert f"kernelgate: device cuda, baseline key {arch}" in gate
    assert ("recording one on this machine first" in gate) is not committed.is_file()
    assert outputs["kernelgate arch --path"][1].strip() == str(committed.relative_to(clone))
    doctor_rc, doctor = outputs["kernelgate doctor"]
    assert "CPU mode" not in doctor and ("fit to benchmark" in doctor or "NOT fit" in doctor), doctor
    assert re.search(r"^=+ kernelgate =+$", gate, re.M), gate[-3000:]  # the gate's section
    for command in ("bash .ci/gate", "pytest benchmarks -q"):
        assert "no baseline" not in outputs[command][1], outputs[command][1][-3000:]
    quiet_rc, quiet = outputs["pytest benchmarks -q"]
    if quiet_rc == 0:  # else a verdict, checked by run_in_order
        none_failed = r"^kernelgate: \d+ benchmark\(s\) compared, none failed$"
        assert re.search(none_failed, quiet, re.M), quiet[-3000:]
    assert (clone / ".kernelgate" / "offline" / "report.md").is_file()
    groups = next(text for command, (_, text) in outputs.items() if command.startswith("kernelgate groups"))
    assert "yolov8n-fp16-bs1-640" in groups and "yolo11n-fp16-bs1-640" in groups
    print({command: rc for command, (rc, _) in outputs.items()}, f"doctor exit {doctor_rc}")
