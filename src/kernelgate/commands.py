"""The command lines that kernelgate's messages print: one way to write each."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

#: The folder of the gate benchmarks where nothing says otherwise (this repository's).
TESTS = "benchmarks"

#: The test paths of the pytest run in this process, as typed (set by the plugin, see use_tests);
#: None outside a run that collected gate tests.
_RUN: list[str] | None = None


def use_tests(paths: Sequence[str] | None) -> None:
    """The test paths (or node ids) of this process's pytest run, as the user gave them (pytest's
    arguments, else its ``testpaths``; none where pytest ran the folder it was started in):
    commands printed without a known test select them. The plugin sets them when the run collects
    gate tests and clears them (None) at its end."""
    global _RUN
    _RUN = None if paths is None else [p for p in paths if p and not p.startswith("-")]


def selection() -> tuple[str, ...]:
    """Where the gate benchmarks are, for a printed command that knows no test: the test paths of
    this process's pytest run (a repository whose benchmarks live in ``perf/`` gets ``pytest perf
    ...``; none, ``pytest ...``, where it ran the folder it was started in), else ``benchmarks``."""
    return (TESTS,) if _RUN is None else tuple(_RUN)


def default_target() -> str:
    """The first of :func:`selection`, or ``.``: the target of a command about one test when its
    node id is not known."""
    return next(iter(selection()), ".")


def record_command(*targets: str) -> str:
    """The one command every message prints to (re-)record baselines: ``pytest TARGET...
    --kernelgate-save``, each target (a test file, or a node id such as
    ``benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]``) quoted for a POSIX shell. A node
    id selects exactly that test, where ``-k NAME`` would also pick ``NAME-graph``; with no target,
    the run's test paths (:func:`selection`)."""
    return shlex.join(["pytest", *(targets or selection()), "--kernelgate-save"])


def append_command(*targets: str) -> str:
    """The command that adds this runner's round to a baseline: :func:`record_command`'s, with
    ``--kernelgate-append``."""
    return f"{record_command(*targets)} --kernelgate-append"


def record_rounds_command(*targets: str, rounds: int = 3, append: bool = False) -> str:
    """The command that records a baseline afresh in ``rounds`` fresh processes: ``kernelgate record
    --rounds 3 -- TARGET...`` (quoted as :func:`record_command`; with no target, the run's test paths,
    or ``.`` where pytest ran the folder it was started in); with ``append``, rounds added to it."""
    chosen = targets or selection() or (".",)
    more = ["--append"] if append else []
    return shlex.join(["kernelgate", "record", "--rounds", str(rounds), *more, "--", *chosen])


def node_target(nodeid: str, rootdir: Path | None = None, cwd: Path | None = None) -> str:
    """A pytest node id (relative to the rootdir) as the argument that selects that test when pytest
    is started from ``cwd`` (the folder the user ran pytest in); unchanged where either is unknown."""
    if rootdir is None or cwd is None:
        return nodeid
    file, sep, rest = nodeid.partition("::")
    return os.path.relpath(rootdir / file, cwd) + sep + rest
