"""Each side of a same-host A/B in its own environment, when base and head depend on other packages.

The most common real regression is a dependency upgrade (torch, cuDNN, ultralytics). The A/B's
processes run this interpreter; left alone they import the packages of the environment the run was
started in (the head's) on both sides, and such a change is "not reproduced". So where the
dependency files (``dependency_files`` in ``[tool.kernelgate]``: globs relative to the folder of
pyproject.toml, ``*`` within one folder, ``**`` across folders) differ between the base commit and the
head's working tree, committed or not (``side_envs = "auto"``; ``"always"`` regardless, ``"off"``
never), each side gets an *overlay*: a folder into which ``env_install`` installed that side's
dependencies, run in that side's checkout (``{python}``: this interpreter; ``{target}``: the folder;
split like a shell line, run without one). A side's ``PYTHONPATH`` is its checkout's package roots,
then its overlay, then what it was: the code under test comes from the side's checkout, its
dependencies from the overlay, the rest from the environment the run was started in.

An overlay is cached in ``$KERNELGATE_CACHE/envs/<key>`` (``~/.cache/kernelgate/envs/<key>`` by
default), the key a hash of the side's dependency files (path and content; a pyproject.toml without
the ``[tool.*]`` tables of tools that install nothing, such as ``[tool.kernelgate]``), the command and
the Python version. A build is written into a temporary folder beside it, gets a marker file and is
renamed only when the command succeeded: a half-built overlay is never used. kernelgate itself and
the project (pyproject's ``[project] name``) are removed from an overlay: the processes run this
kernelgate, and the project's code never comes from a copy that the key does not follow.

A build that fails, or dependency files that git cannot compare, is returned as a reason (the side,
the command, the end of its output, the fix); the same-host judge makes every suspect inconclusive
with it, and ``kernelgate ab`` stops with it.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from kernelgate.config import GateConfig, SideEnvs

MARKER = "kernelgate-env.json"  # written last into a complete overlay
BUILD_TIMEOUT_S = 3 * 3600  # a first install of torch with its CUDA libraries takes minutes
TAIL_LINES = 6  # of a failed build's output, in the reason
# the [tool.*] tables of a pyproject.toml that can change what an install puts in an overlay
INSTALL_TOOLS = frozenset({"setuptools", "poetry", "uv", "pdm", "hatch", "pixi", "flit", "maturin"})
PROBED = ("torch", "ultralytics")  # the versions a side's log line shows


@dataclass(frozen=True)
class Overlay:
    """One side's environment: the folder on its PYTHONPATH before the environment of the run."""

    side: str  # "base" or "head"
    path: Path
    built: bool  # False: taken from the cache
    seconds: float


def matches(path: str, pattern: str) -> bool:
    """Whether ``path`` (relative, ``/``-separated) matches the glob ``pattern``: ``*``, ``?`` and
    ``[...]`` within one folder, a ``**`` part any number of folders."""
    return _match(path.split("/"), pattern.split("/"))


def _match(parts: Sequence[str], pats: Sequence[str]) -> bool:
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(_match(parts[i:], pats[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], pats[0]) and _match(parts[1:], pats[1:])


def _git_paths(folder: Path, *args: str) -> list[str] | None:
    """The NUL-separated paths git prints for ``args`` (run with ``-z``) in ``folder``; None on failure."""
    done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True,
                          errors="surrogateescape", check=False)  # fmt: skip
    return [p for p in done.stdout.split("\0") if p] if done.returncode == 0 else None


def content(path: Path) -> bytes | None:
    """What of a dependency file decides an install: its bytes; for a pyproject.toml, its tables but
    the ``[tool.*]`` ones of tools that install nothing. None where there is no such file, or a
    pyproject.toml with nothing else (only ``[tool.kernelgate]``, say)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if path.name != "pyproject.toml":
        return raw
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return raw
    tools = data.pop("tool", {})
    kept = {k: v for k, v in tools.items() if k in INSTALL_TOOLS} if isinstance(tools, dict) else tools
    if kept:
        data["tool"] = kept
    return json.dumps(data, sort_keys=True, default=str).encode("utf-8") if data else None


def changed(head: Path, base: Path, base_ref: str, patterns: Sequence[str]) -> list[str] | None:
    """The dependency files (relative to ``head``, the folder of pyproject.toml in the head's working
    tree) whose content differs from the same file in ``base`` (that folder in the checkout of commit
    ``base_ref``). Candidates are the files git lists as changed since ``base_ref`` (``git diff
    base_ref HEAD``), changed and not committed (``git diff HEAD``) or new and not ignored; None
    where git cannot list them."""
    found: set[str] = set()
    for args in (
        ("diff", "--name-only", "--no-renames", "--relative", "-z", base_ref, "HEAD"),
        ("diff", "--name-only", "--no-renames", "--relative", "-z", "HEAD"),
        ("ls-files", "--others", "--exclude-standard", "-z"),
    ):
        paths = _git_paths(head, *args)
        if paths is None:
            return None
        found.update(paths)
    listed = [p for p in found if any(matches(p, pat) for pat in patterns)]
    return sorted(p for p in listed if content(head / p) != content(base / p))


def dependency_files(project: Path, patterns: Sequence[str]) -> list[str]:
    """The dependency files of one side (relative to ``project``): git's tracked and untracked,
    not ignored files there (the files on disk outside a git checkout)."""
    listed = _git_paths(project, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    if listed is None:
        listed = [p.relative_to(project).as_posix() for pat in patterns for p in project.glob(pat)]
    return sorted({p for p in listed if any(matches(p, pat) for pat in patterns) and (project / p).is_file()})


def cache_key(project: Path, patterns: Sequence[str], template: str) -> str:
    """The overlay's key: the side's dependency files (path and :func:`content`), the install command
    and the Python (version, implementation, machine)."""
    digest = hashlib.sha256()
    python = [sys.implementation.cache_tag, platform.python_version(), platform.machine()]
    digest.update(json.dumps([template, *python]).encode("utf-8"))
    for rel in dependency_files(project, patterns):
        digest.update(rel.encode("utf-8") + b"\0" + hashlib.sha256(content(project / rel) or b"").digest())
    return digest.hexdigest()[:24]


def cache_root() -> Path:
    """Where overlays are kept: ``$KERNELGATE_CACHE/envs``, else ``~/.cache/kernelgate/envs``."""
    home = os.environ.get("KERNELGATE_CACHE")
    return (Path(home) if home else Path.home() / ".cache" / "kernelgate") / "envs"


def command(template: str, target: Path) -> list[str]:
    """``env_install`` as the command it runs: split like a shell line, then ``{python}`` and
    ``{target}`` replaced in every word (no shell: a path with spaces stays one word)."""
    return [
        w.replace("{python}", sys.executable).replace("{target}", str(target)) for w in shlex.split(template)
    ]


def failure(side: str, argv: Sequence[str], cwd: Path, code: int | None, output: str) -> str:
    """Why a side has no environment: the side, the command, how it ended, its output's last lines,
    what to do."""
    tail = " | ".join(line.strip() for line in output.strip().splitlines()[-TAIL_LINES:])[-800:]
    ended = f"exited {code}" if code is not None else "could not run"
    return (
        f"the {side} side's environment could not be built: `{shlex.join(argv)}` (in {cwd}) {ended}: "
        f"{tail or 'no output'}. Set env_install in [tool.kernelgate] to a command that installs this "
        "project's dependencies into {target} (e.g. '{python} -m pip install --quiet --target {target} .' "
        "where they are in pyproject.toml; add --no-index --find-links DIR on a runner without network), "
        "or side_envs = 'off' to run both sides in this environment (a dependency change then goes "
        "unmeasured)"
    )


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_name(project: Path) -> str | None:
    """The normalized ``[project] name`` of the pyproject.toml in ``project``."""
    try:
        data = tomllib.loads((project / "pyproject.toml").read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    name = data.get("project", {}).get("name")
    return _normal(name) if isinstance(name, str) else None


def strip(target: Path, names: set[str]) -> list[str]:
    """Remove the distributions ``names`` (normalized) from an overlay: the files their RECORD lists
    inside it, the folders that leaves empty, their ``.dist-info``. The names removed."""
    removed: list[str] = []
    emptied: set[Path] = set()
    inside = target.resolve()
    for info in sorted(target.glob("*.dist-info")):
        name = info.name.removesuffix(".dist-info").rpartition("-")[0]
        if _normal(name) not in names:
            continue
        record = info / "RECORD"
        rows = list(csv.reader(record.read_text("utf-8").splitlines())) if record.is_file() else []
        for row in rows:
            path = (target / row[0]).resolve() if row and row[0] else None
            if path is not None and path.is_relative_to(inside) and path.is_file():
                path.unlink()
                emptied.update(p for p in path.parents if p.is_relative_to(inside) and p != inside)
        shutil.rmtree(info, ignore_errors=True)
        removed.append(name)
    for folder in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    return removed


def overlay(side: str, project: Path, gate: GateConfig) -> Overlay | str:
    """The overlay of one side, from the cache or built by ``gate.env_install`` in ``project``;
    the reason (:func:`failure`) where the command failed."""
    start = time.monotonic()
    key = cache_key(project, gate.dependency_files, gate.env_install)
    final = cache_root() / key
    if (final / MARKER).is_file():
        return Overlay(side, final, False, time.monotonic() - start)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=final.parent))
    argv = command(gate.env_install, work)
    try:
        done = subprocess.run(argv, cwd=project, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT_S, check=False)  # fmt: skip
        code: int | None = done.returncode
        output = done.stderr if done.stderr.strip() else done.stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        code, output = None, f"{type(exc).__name__}: {exc}"
    if code != 0:
        shutil.rmtree(work, ignore_errors=True)
        return failure(side, argv, project, code, output)
    removed = strip(work, {"kernelgate", *filter(None, [project_name(project)])})
    files = dependency_files(project, gate.dependency_files)
    marker = {"key": key, "command": gate.env_install, "python": sys.version, "files": files,
              "removed": removed, "seconds": round(time.monotonic() - start, 1)}  # fmt: skip
    (work / MARKER).write_text(json.dumps(marker, indent=1), encoding="utf-8")
    if final.exists() and not (final / MARKER).is_file():
        shutil.rmtree(final, ignore_errors=True)  # not one of ours: never renamed without its marker
    try:
        work.rename(final)
    except OSError:  # another run finished the same overlay first: it is as good as this one
        shutil.rmtree(work, ignore_errors=True)
    return Overlay(side, final, True, time.monotonic() - start)


def prepare(
    head: Path, base: Path, base_ref: str, gate: GateConfig, log: Callable[[str], None]
) -> dict[str, Overlay] | str:
    """The overlays of the two sides by name (``base``, ``head``); none where both sides run in this
    environment (``side_envs``); or why they cannot have theirs. ``head`` and ``base`` are the folder
    of pyproject.toml in the two checkouts; ``base_ref`` is the base's commit."""
    if gate.side_envs is SideEnvs.OFF:
        return {}
    if gate.side_envs is SideEnvs.AUTO:
        found = changed(head, base, base_ref, gate.dependency_files)
        if found is None:
            return (
                f"git cannot list the files changed since the base {base_ref[:12]} in {head}, so it is "
                "unknown whether base and head need environments of their own; set side_envs = 'always' "
                "or 'off' in [tool.kernelgate]"
            )
        if not found:
            return {}
        log(f"kernelgate: the dependency files differ from the base ({', '.join(found)}): each side "
            "runs in its own environment")  # fmt: skip
    overlays: dict[str, Overlay] = {}
    for side, project in (("base", base), ("head", head)):
        made = overlay(side, project, gate)
        if isinstance(made, str):
            return made
        overlays[side] = made
    return overlays


def pythonpath(roots: Sequence[str], found: Overlay | None, rest: str | None) -> str:
    """A side's PYTHONPATH: its checkout's package roots, its overlay, then ``rest`` (what it was)."""
    return os.pathsep.join([*roots, *([str(found.path)] if found else []), *filter(None, [rest])])


def versions(env: Mapping[str, str], cwd: Path) -> str:
    """The versions of :data:`PROBED` that a process with ``env`` imports (``torch 2.5.1, ultralytics
    -``), from their metadata: the first found on its path, as an import finds it."""
    code = (
        "from importlib import metadata as m\n"
        f"for n in {PROBED!r}:\n"
        "    try:\n        print(n, m.version(n))\n"
        "    except m.PackageNotFoundError:\n        print(n, '-')\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], env=dict(env), cwd=cwd, capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return "versions unknown"
    return ", ".join(done.stdout.split("\n")[:-1]) if done.returncode == 0 else "versions unknown"


def describe(found: Overlay, env: Mapping[str, str], cwd: Path) -> str:
    """The log line of one side's environment."""
    how = f"built in {found.seconds:.1f} s" if found.built else "from the cache"
    return f"kernelgate: {found.side} environment {found.path} ({how}): {versions(env, cwd)}"
