"""A same-host round's child started ahead of its turn waits for its go, then runs only what it names
(kernelgate.plugin.standby)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelgate.plugin import standby

SUITE = """
import pathlib


def test_one():
    pathlib.Path("ran-one").write_text("x")


def test_two():
    pathlib.Path("ran-two").write_text("x")
"""


def start(folder: Path, go: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--kernelgate",
               "--kernelgate-device=cpu", f"--kernelgate-standby={go}", "test_suite.py"]  # fmt: skip
    return subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_child_waits_for_its_go_and_runs_only_what_it_names(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    go = pytester.path / "go.json"
    child = start(pytester.path, go)
    try:
        deadline = time.monotonic() + 120
        while not (pytester.path / standby.READY).exists() and time.monotonic() < deadline:
            time.sleep(0.1)  # it starts, collects and imports torch, then says it is ready
        time.sleep(1.0)
        assert child.poll() is None, child.communicate()[0]  # ready, and still waiting: nothing ran
        assert not (pytester.path / "ran-one").exists() and not (pytester.path / "ran-two").exists()
        standby.release(go, ["test_suite.py::test_two"])
        out, _ = child.communicate(timeout=120)
    finally:
        child.kill()
    assert child.returncode == 0, out
    assert (pytester.path / "ran-two").exists()
    assert not (pytester.path / "ran-one").exists()
    assert "1 passed, 1 deselected" in out


def test_a_child_released_with_nothing_runs_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    go = pytester.path / "go.json"
    standby.release(go, [])
    child = start(pytester.path, go)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, out
    assert not list(pytester.path.glob("ran-*"))


def test_a_go_that_never_comes_runs_nothing(tmp_path: Path) -> None:
    assert standby.wait(tmp_path / "never.json", limit_s=0.05) == []


def test_the_go_file_is_written_whole(tmp_path: Path) -> None:
    go = tmp_path / "go.json"
    standby.release(go, ["a::b", "c::d[x]"])
    assert standby.wait(go) == ["a::b", "c::d[x]"]
    assert not list(tmp_path.glob("*.tmp"))


def test_await_ready_returns_once_every_child_is_ready_or_gone(tmp_path: Path) -> None:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    ready_dir = tmp_path / "said-ready"
    ready_dir.mkdir()
    (ready_dir / standby.READY).write_text("ready")
    children = [
        standby.Child("base", ready_dir, done, (tmp_path / "a.log").open("w")),
        standby.Child("head", tmp_path, done, (tmp_path / "b.log").open("w")),  # exited without a word
    ]
    start = time.monotonic()
    standby.await_ready(children, timeout_s=60)
    assert time.monotonic() - start < 5
    waiting = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        start = time.monotonic()
        standby.await_ready([standby.Child("head", tmp_path, waiting, children[1].log)], timeout_s=0.3)
        assert 0.3 <= time.monotonic() - start < 5  # neither ready nor gone: until the limit
    finally:
        waiting.kill()
        for child in children:
            child.log.close()


@pytest.mark.parametrize("cold", [False, True])
def test_a_child_of_cold_starts_alone_imports_nothing_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cold: bool
) -> None:
    # the judge says so in the child's environment (a base checkout's older kernelgate has no option
    # for it and runs the child all the same)
    warmed: list[bool] = []
    monkeypatch.setattr(standby, "prewarm", lambda: warmed.append(True))
    if cold:
        monkeypatch.setenv(standby.COLD_VAR, "1")
    else:
        monkeypatch.delenv(standby.COLD_VAR, raising=False)
    go = tmp_path / standby.GO
    standby.release(go, [])

    class Config:
        class hook:  # pytest's config.hook, as select calls it
            @staticmethod
            def pytest_deselected(items: list[object]) -> None:
                pass

    standby.select(Config(), [], go)  # type: ignore[arg-type]
    assert warmed == ([] if cold else [True])
    assert (tmp_path / standby.READY).is_file()


# a child of cold starts as the judge starts it: it waits a moment (its set-up), then runs its
# processes, each when granted, and logs when each began and ended
TURNS_CHILD = """
import json, sys, time
from pathlib import Path
from kernelgate.plugin import standby
folder, name, runs, ask = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4] == "ask"
time.sleep(0.2 if name == "base" else 0.05)
for _ in range(runs):
    with standby.turn(folder) if ask else open(folder / "null", "w"):
        began = time.monotonic()
        time.sleep(0.15)
        with open(folder.parent / "log.jsonl", "a") as log:
            log.write(json.dumps([name, began, time.monotonic()]) + "\\n")
    time.sleep(0.05)  # between two processes: its record, the next one's set-up
"""


def _turn_children(tmp_path: Path, runs: dict[str, int], ask: dict[str, bool]) -> list[standby.Child]:
    children = []
    for name in ("base", "head"):
        out = tmp_path / name
        out.mkdir()
        command = [sys.executable, "-c", TURNS_CHILD, str(out), name, str(runs[name]),
                   "ask" if ask[name] else "free"]  # fmt: skip
        children.append(standby.start(name, command, Path.cwd(), dict(os.environ), out))
    return children


def _take_turns(tmp_path: Path, runs: dict[str, int], ask: dict[str, bool]) -> tuple[bool, list[str]]:
    """Whether the children took turns, and which side ran each process, in order; no process may
    begin before the one before it ended."""
    children = _turn_children(tmp_path, runs, ask)
    interleaved = standby.take_turns(children, timeout_s=60)
    for child in children:
        assert standby.finish(child, 60) is None
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    log = [(str(n), float(a), float(b)) for n, a, b in map(json.loads, lines)]
    for (_, _, end), (_, began, _) in itertools.pairwise(log):
        assert began >= end  # no process runs beside another
    return interleaved, [name for name, _, _ in log]


def test_cold_start_children_take_turns_run_by_run_in_both_orders(tmp_path: Path) -> None:
    # base, head, head, base, base, head: each side first in every other pair, though the base is the
    # slower to start
    assert _take_turns(tmp_path, {"base": 3, "head": 3}, {"base": True, "head": True}) == (
        True,
        ["base", "head", "head", "base", "base", "head"],
    )


def test_a_child_that_never_asks_runs_alone_and_the_round_is_not_interleaved(tmp_path: Path) -> None:
    # a base checkout's older kernelgate: its child runs its processes unheld; the head's wait until
    # it has ended
    assert _take_turns(tmp_path, {"base": 2, "head": 2}, {"base": False, "head": True}) == (
        False,
        ["base", "base", "head", "head"],
    )
