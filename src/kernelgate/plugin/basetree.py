"""The base of the same-host judge in git: which commit to measure (the pull request's merge base by
default), and which packages the head imports from its own checkout (``src/``, an editable install),
so that the base side takes them from the base's checkout (:mod:`kernelgate.plugin.samehost`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def git(repo: Path, *args: str) -> str | None:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def base_commit(repo: Path, ref: str) -> tuple[str | None, str]:
    """The commit of git checkout ``repo`` to measure as the base, and how it was found (or why none
    was)."""
    if ref != "auto":
        sha = git(repo, "rev-parse", "--verify", "--quiet", ref + "^{commit}")
        return (sha, f"base {ref}") if sha else (None, f"git cannot resolve base {ref!r}")
    candidates = []
    if os.environ.get("GITHUB_BASE_REF"):
        candidates += [f"origin/{os.environ['GITHUB_BASE_REF']}", os.environ["GITHUB_BASE_REF"]]
    candidates += ["origin/HEAD", "origin/main", "origin/master", "main", "master"]
    for name in candidates:
        if git(repo, "rev-parse", "--verify", "--quiet", name + "^{commit}") is None:
            continue
        sha = git(repo, "merge-base", "HEAD", name)
        if sha:
            return sha, f"merge base of HEAD and {name}"
    return None, f"none of {', '.join(candidates)} exists to take a merge base with"


def package_roots(head: Path) -> list[Path]:
    """Folders inside ``head`` from which this process imported packages (``src/``, the checkout)."""
    roots: set[Path] = set()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or "." in name:
            continue
        path = Path(file).resolve()
        try:
            path.relative_to(head)
        except ValueError:
            continue
        top = path.parent.parent if path.name == "__init__.py" else path.parent
        if "site-packages" not in top.parts:
            roots.add(top)
    return sorted(roots)
