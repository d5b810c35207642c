"""The two processes of a same-host round start together, and measure one after the other: the
plugin's side of the same-host judge's measure step.

Each round of the judge (:mod:`kernelgate.plugin.samehost`) is a fresh pytest process per side. Their
start-up needs no GPU (Python, pytest and its plugins, collection, ``import torch`` and ultralytics:
about half of a child measuring one configuration), so both start at once.
Each collects the suspects it may be asked for, imports what the measurement needs, says it is ready
(``ready`` beside the go file) and waits before its first test for the go file
(``--kernelgate-standby=PATH``): the node ids to run now, or none. The judge lets one go, waits for it,
then the other: no process starts up, or does anything else, while one measures, since a process
starting beside one that measures slows its host side by tens of % and fails an A/A run
(docs/sensitivity.md, "Structure, host side, three H100 hosts").

Cold starts take turns instead (:func:`take_turns`): both children of a round run at once, and each
asks before every fresh process it starts (:func:`turn`); the judge lets one side's process run
while the other child waits, base, head, head, base, ... So one round holds both orders, run by run,
and no process starts beside another.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

GO = "go.json"
READY = "ready"
POLL_S = 0.01
WAIT_S = 7200.0  # a parent gone for two hours: the child gives up and runs nothing
PREWARM = ("torch", "ultralytics.nn.tasks")
# set by the judge for a child of cold starts alone (its environment, not an option: a base checkout's
# older kernelgate, which has no such option, runs the child all the same)
COLD_VAR = "KERNELGATE_STANDBY_COLD"
# set by the judge for a child of cold starts that takes turns (:func:`turn`): its folder of turn files
TURNS_VAR = "KERNELGATE_STANDBY_TURNS"
WANT, TURN, DONE = "want", "turn", "done"  # the turn files: the child's last asked and done, the granted


def prewarm() -> None:
    """Import the heavy, GPU-free modules the benchmarks will import anyway."""
    for name in PREWARM:
        if importlib.util.find_spec(name.partition(".")[0]) is None:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # the test that needs it reports the failure itself
            continue


def wait(go: Path, limit_s: float = WAIT_S) -> list[str]:
    """Block until the parent writes ``go``; the node ids to run (none if it never comes)."""
    deadline = time.monotonic() + limit_s
    while not go.exists():
        if time.monotonic() > deadline:
            return []
        time.sleep(POLL_S)
    data = json.loads(go.read_text(encoding="utf-8"))
    return [str(n) for n in data.get("run", [])]


def release(go: Path, nodeids: Sequence[str]) -> None:
    """The parent's side: let the child at ``go`` run ``nodeids`` (written atomically)."""
    tmp = go.with_name(go.name + ".tmp")
    tmp.write_text(json.dumps({"run": list(nodeids)}), encoding="utf-8")
    os.replace(tmp, go)


def select(config: pytest.Config, items: list[pytest.Item], go: Path) -> None:
    """Say ready, wait for the go, then keep the items it names (the others are deselected). A child
    of cold starts alone (:data:`COLD_VAR` set) imports nothing ahead: each cold start is a process of
    its own, and ``import torch`` is about a third of such a child's CPU time (docs/measurements.md,
    "Figures behind the code's rules")."""
    if os.environ.get(COLD_VAR) != "1":
        prewarm()
    go.with_name(READY).write_text("ready", encoding="utf-8")
    chosen = set(wait(go))
    keep = [i for i in items if i.nodeid in chosen]
    dropped = [i for i in items if i.nodeid not in chosen]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def _number(path: Path) -> int:
    """The count in a turn file (0 where there is none yet)."""
    try:
        return int(path.read_text(encoding="utf-8") or 0)
    except (FileNotFoundError, ValueError):
        return 0


def _write(path: Path, value: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(str(value), encoding="utf-8")
    os.replace(tmp, path)


@contextlib.contextmanager
def turn(folder: Path, limit_s: float = WAIT_S) -> Iterator[None]:
    """The child's side of :func:`take_turns`: ask for the next turn, wait until the judge grants it,
    run the body (one fresh process), say it is done."""
    asked = _number(folder / DONE) + 1
    _write(folder / WANT, asked)
    deadline = time.monotonic() + limit_s
    while _number(folder / TURN) < asked and time.monotonic() < deadline:
        time.sleep(POLL_S)
    try:
        yield
    finally:
        _write(folder / DONE, asked)


def turns_folder() -> Path | None:
    """This child's folder of turn files, where the judge asked it to take turns."""
    found = os.environ.get(TURNS_VAR)
    return Path(found) if found else None


def take_turns(children: Sequence[Child], timeout_s: float) -> bool:
    """The judge's side of :func:`turn`: the children (released at once, the first in this round's
    order first) run their processes one at a time, the sides alternating first, second, second,
    first, ... A turn is granted only while every other child waits for its own or has ended, so
    nothing else runs beside it (a child between two processes writes its record and sets up the
    next). A child that never asks (a base checkout's older kernelgate) runs on its own when the
    other has ended. True where every child took each of its processes in turn."""
    deadline = time.monotonic() + timeout_s
    ended = [False] * len(children)
    asked = [False] * len(children)

    def quiet(i: int) -> bool:
        child = children[i]
        if child.proc.poll() is not None:
            ended[i] = True
            return True
        want, done = _number(child.out / WANT), _number(child.out / DONE)
        return want > done and _number(child.out / TURN) < want

    k = 0
    while not all(ended) and time.monotonic() < deadline:
        k += 1
        pair = list(range(len(children)))
        for i in pair if k % 2 else reversed(pair):
            while not all(quiet(j) for j in range(len(children))) and time.monotonic() < deadline:
                time.sleep(POLL_S)
            if ended[i] or _number(children[i].out / WANT) != k:
                continue  # it ended, or it asks for no turn (an older kernelgate): it runs unheld
            asked[i] = True
            _write(children[i].out / TURN, k)
            while (
                _number(children[i].out / DONE) < k
                and children[i].proc.poll() is None
                and time.monotonic() < deadline
            ):
                time.sleep(POLL_S)
    return all(asked)


@dataclass
class Child:
    """One side's pytest process of one round of the judge."""

    name: str  # the side: base or head
    out: Path  # its records, its log, its go file
    proc: subprocess.Popen[bytes]
    log: IO[str]

    @property
    def go(self) -> Path:
        return self.out / GO


def start(name: str, command: Sequence[str], cwd: Path, env: Mapping[str, str], out: Path) -> Child:
    """Start a child (``command`` carries ``--kernelgate-standby=out/go.json``); its output goes to
    ``out/child.log``."""
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "child.log").open("w", encoding="utf-8")
    proc = subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT)
    return Child(name, out, proc, log)


def await_ready(children: Sequence[Child], timeout_s: float) -> None:
    """Until every child said it is ready (or ended: :func:`finish` says why)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not all(
        (c.out / READY).exists() or c.proc.poll() is not None for c in children
    ):
        time.sleep(POLL_S)


def finish(child: Child, timeout_s: float) -> str | None:
    """Wait for ``child``; why it measured nothing, if it failed as a whole."""
    try:
        code = child.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.proc.kill()
        child.proc.wait()
        return f"the {child.name} process did not finish in {timeout_s:.0f} s (killed)"
    finally:
        child.log.close()
    if code not in (0, 1):  # 1: a benchmark failed in the child; its record says what
        lines = (child.out / "child.log").read_text("utf-8", errors="replace").strip().splitlines()
        return f"the {child.name} process exited {code}: {' | '.join(lines[-4:])}"
    return None


def keep_log(child: Child, folder: Path, round_no: int, kind: str = "") -> None:
    """Copy ``child``'s output to ``folder/round<N>-<side>[-<kind>].log`` (its work folder is removed
    after the judge): what a reader of a red or inconclusive verdict opens first."""
    folder.mkdir(parents=True, exist_ok=True)
    source = child.out / "child.log"
    if source.is_file():
        shutil.copyfile(source, folder / f"round{round_no}-{child.name}{'-' + kind if kind else ''}.log")
