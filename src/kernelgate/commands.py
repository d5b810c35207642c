"""The command lines that kernelgate's messages print: one way to write each."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

#: The folder of the gate benchmarks: where a printed command points when no test is known.
TESTS = "benchmarks"


def record_command(*targets: str) -> str:
    """The one command every message prints to (re-)record baselines: ``pytest TARGET...
    --kernelgate-save``, each target (a test file, or a node id such as
    ``benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]``) quoted for a POSIX shell. A node
    id selects exactly that test, where ``-k NAME`` would also pick ``NAME-graph``; with no target,
    the whole benchmark folder."""
    return shlex.join(["pytest", *(targets or (TESTS,)), "--kernelgate-save"])


def node_target(nodeid: str, rootdir: Path | None = None, cwd: Path | None = None) -> str:
    """A pytest node id (relative to the rootdir) as the argument that selects that test when pytest
    is started from ``cwd`` (the folder the user ran pytest in); unchanged where either is unknown."""
    if rootdir is None or cwd is None:
        return nodeid
    file, sep, rest = nodeid.partition("::")
    return os.path.relpath(rootdir / file, cwd) + sep + rest
