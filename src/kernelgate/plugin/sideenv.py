"""Each side of the same-host A/B in the environment its own tree declares.

The most common real regression is a dependency upgrade (torch, cuDNN, ultralytics). The runner's
environment is the head's: measured as it is, base and head would both run the head's packages and
such a regression would never be reproduced. So when the dependency files (``dependency_files``:
pyproject.toml, requirements*.txt, lock files, ...) differ between the base commit and the head's
working tree, each side gets an overlay folder built from its own tree by ``env_install`` (a
command with ``{python}`` and ``{target}``; by default ``pip install --target`` of the tree's
requirements.txt) and put on its ``PYTHONPATH`` in front of the runner's site-packages, behind the
side's own source folders. What an overlay does not pin comes from the runner's environment.

Overlays are cached under ``$KERNELGATE_CACHE/envs`` (default ``~/.cache/kernelgate/envs``) by a
hash of the command, the Python version and the side's dependency files; a folder is built under a
temporary name and renamed when complete, so a half-built one is never used. A build that fails
leaves the suspects inconclusive, with the command and its last lines of output.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DONE = ".kernelgate-env-complete"
BUILD_TIMEOUT_S = 3600


@dataclass(frozen=True)
class Overlay:
    side: str
    path: Path
    built: bool  # False: taken from the cache
    seconds: float


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)


def matches(path: str, patterns: Sequence[str]) -> bool:
    """Whether a repository path (``/``-separated, from the root) is a dependency file."""
    return any(fnmatch.fnmatchcase(path, p) for p in patterns)


def changed(head_root: Path, base_sha: str, patterns: Sequence[str]) -> list[str]:
    """The dependency files that differ between the base commit and the head's working tree
    (committed or not, added or deleted)."""
    diff = _git(head_root, "diff", "--name-only", "--no-renames", base_sha)
    untracked = _git(head_root, "ls-files", "--others", "--exclude-standard")
    paths = (diff.stdout + "\n" + untracked.stdout).split()
    return sorted({p for p in paths if matches(p, patterns)})


def files_of(tree: Path, patterns: Sequence[str]) -> list[str]:
    """The dependency files present in a checkout, as repository paths."""
    found = set()
    for pattern in patterns:
        found |= {p.relative_to(tree).as_posix() for p in tree.glob(pattern) if p.is_file()}
    return sorted(found)


def key(tree: Path, patterns: Sequence[str], command: str) -> str:
    """The cache key of a side's overlay: command, Python version and dependency files' contents."""
    digest = hashlib.sha256(f"{command}\0{sys.version}\0".encode())
    for path in files_of(tree, patterns):
        digest.update(path.encode() + b"\0" + (tree / path).read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def cache_root() -> Path:
    base = os.environ.get("KERNELGATE_CACHE") or str(Path.home() / ".cache" / "kernelgate")
    return Path(base) / "envs"


def build(side: str, tree: Path, patterns: Sequence[str], template: str, root: Path) -> Overlay | str:
    """The overlay of one side (from the cache, or built now), or why it could not be built."""
    start = time.monotonic()
    target = root / key(tree, patterns, template)
    if (target / DONE).is_file():
        return Overlay(side, target, False, time.monotonic() - start)
    root.mkdir(parents=True, exist_ok=True)
    partial = root / f"{target.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    command = template.format(python=shlex.quote(sys.executable), target=shlex.quote(str(partial)))
    try:
        done = subprocess.run(command, shell=True, cwd=tree, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT_S, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        shutil.rmtree(partial, ignore_errors=True)
        return f"building the {side}'s environment took over {BUILD_TIMEOUT_S} s: {command}"
    if done.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-4:])
        return (
            f"building the {side}'s environment failed (exit {done.returncode}) in {tree}: {command}: "
            f"{tail}; set env_install in [tool.kernelgate] to a command that installs this tree's "
            'dependencies into {target}, or side_envs = "off" to measure both sides in this environment'
        )
    partial.mkdir(parents=True, exist_ok=True)
    (partial / DONE).write_text(command + "\n", encoding="utf-8")
    try:
        partial.rename(target)
    except OSError:  # another job built it meanwhile
        shutil.rmtree(partial, ignore_errors=True)
    return Overlay(side, target, True, time.monotonic() - start)
