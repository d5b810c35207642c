"""Rounds in separate processes: record a multi-round baseline, or A/B two commits on one GPU.

A/B measures the base commit and the working tree in the same job, alternating rounds and which
side starts them (base, head, then head, base, ...: ABBA, as the same-host judge) so that drift of
the machine, and what a process started first meets, fall on both sides alike, then compares
the two multi-round results with the same verdict as the gate. Both sides run the installed
kernelgate; each side's own benchmarks/ and code come from its tree. Where the dependency files
differ between base and head (``side_envs`` in ``[tool.kernelgate]``), each side's packages come from
its own environment (:mod:`kernelgate.machine.sideenv`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kernelgate.baseline import reading as baseline
from kernelgate.config import ConfigError, load_pyproject
from kernelgate.machine import bytecode, sideenv

T = TypeVar("T")


@dataclass(frozen=True)
class Side:
    name: str
    tree: Path
    baseline_dir: Path
    env: dict[str, str] | None = None  # None: this process's environment


def order(sides: Sequence[T], round_index: int) -> list[T]:
    """The sides (base, head) in the order round ``round_index`` (0-based) measures them: base first
    in rounds 1, 3, 5, ..., head first in rounds 2, 4, ...: over an even number of rounds each side
    goes first equally often. The same-host judge's rounds follow it too."""
    return list(sides) if round_index % 2 == 0 else list(reversed(sides))


def pytest_round(
    tree: Path,
    baseline_dir: Path | None,
    first: bool,
    out_dir: Path,
    args: Sequence[str],
    env: dict[str, str] | None = None,
) -> int:
    """One round: a fresh pytest process that saves (or appends) into ``baseline_dir`` (None: where
    the project's configuration says, ``[tool.kernelgate] baseline_dir`` or ``baselines``)."""
    where = [] if baseline_dir is None else [f"--kernelgate-baseline-dir={baseline_dir}"]
    command = [
        sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "--kernelgate",
        "--kernelgate-save", *where, f"--kernelgate-out={out_dir}",
    ]  # fmt: skip
    if not first:
        command.append("--kernelgate-append")
    print("kernelgate:", " ".join(command), f"(in {tree})", flush=True)
    return subprocess.run(command, cwd=tree, env=env, check=False).returncode


def record(rounds: int, args: Sequence[str], tree: Path, append: bool = False) -> int:
    """``rounds`` pytest processes recording one baseline: the first replaces, the rest append; with
    ``append`` all of them append (another runner of the architecture adding its rounds). The baseline
    folder is the project's (its configuration, or a ``--kernelgate-baseline-dir`` among ``args``):
    the command that every message prints must write where the gate reads."""
    for i in range(rounds):
        code = pytest_round(tree, None, i == 0 and not append, tree / ".kernelgate", args)
        if code != 0:
            has = "this run added" if append else "the baseline has"
            print(f"kernelgate: round {i + 1} of {rounds} exited {code}; {has} {i} round(s).")
            return code
    return 0


def remove_worktree(repo: Path, where: Path) -> None:
    """Remove the git worktree at ``where`` from ``repo`` (and what git leaves of it)."""
    subprocess.run(["git", "worktree", "remove", "--force", str(where)], cwd=repo, check=False)
    shutil.rmtree(where, ignore_errors=True)


def worktree(repo: Path, ref: str, where: Path) -> Path:
    """A detached git worktree of ``ref`` at ``where`` (replacing an earlier one)."""
    if where.exists():
        remove_worktree(repo, where)
    subprocess.run(["git", "worktree", "add", "--detach", str(where), ref], cwd=repo, check=True)
    return where


def _sides(repo: Path, ref: str, base_tree: Path, work: Path, config: Path) -> list[Side] | None:
    """Base and head, each in its own environment where the dependency files differ."""
    try:
        gate, _ = load_pyproject(config)
    except ConfigError as exc:
        print(f"kernelgate: {exc}")
        return None
    overlays = sideenv.prepare(repo, base_tree, ref, gate, lambda line: print(line, flush=True))
    if isinstance(overlays, str):
        print(f"kernelgate: {overlays}; stopping the A/B run.")
        return None
    # where every process would compile the sources it imports, the rounds keep their bytecode in the
    # work folder, both sides alike (machine/bytecode.py)
    cache = work.resolve() / "bytecode"
    start = bytecode.kept(os.environ, cache)  # None: this process's environment
    if start is not None:
        print(bytecode.describe(cache, "A/B rounds"), flush=True)
    sides = [Side("base", base_tree, work / "base", start), Side("head", repo, work / "head", start)]
    for i, side in enumerate(sides):
        found = overlays.get(side.name)
        if found is not None:
            env = dict(start or os.environ)
            env["PYTHONPATH"] = sideenv.pythonpath([], found, os.environ.get("PYTHONPATH"))
            print(sideenv.describe(found, env, side.tree), flush=True)
            sides[i] = Side(side.name, side.tree, side.baseline_dir, env)
    return sides


def run_ab(
    repo: Path, ref: str, rounds: int, args: Sequence[str], work: Path, config: Path
) -> tuple[Path, Path] | None:
    """Alternate ``rounds`` rounds of base and head; return the two result files (base, head).
    ``config``: the pyproject.toml whose ``[tool.kernelgate]`` says whether the sides get
    environments of their own."""
    work.mkdir(parents=True, exist_ok=True)
    # outside the repository: pytest must not find the head's pyproject.toml above the base tree
    base_tree = worktree(repo, ref, Path(tempfile.mkdtemp(prefix="kernelgate-ab-")) / "base-tree")
    try:
        sides = _sides(repo, ref, base_tree, work, config)
        if sides is None:
            return None
        for side in sides:
            shutil.rmtree(side.baseline_dir, ignore_errors=True)
        for i in range(rounds):
            for side in order(sides, i):
                out = work / f"out-{side.name}"
                code = pytest_round(side.tree, side.baseline_dir, i == 0, out, args, side.env)
                if code not in (0,):
                    print(f"kernelgate: {side.name} round {i + 1} exited {code}; stopping the A/B run.")
                    return None
    finally:
        remove_worktree(repo, base_tree)
        shutil.rmtree(base_tree.parent, ignore_errors=True)
    files = [next(side.baseline_dir.glob(f"*/{baseline.FILE_NAME}"), None) for side in sides]
    if files[0] is None or files[1] is None:
        print(f"kernelgate: the A/B rounds wrote no results under {work}.")
        return None
    return files[0], files[1]
