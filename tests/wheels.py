"""Helpers of the packaging tests: build kernelgate's wheel as a user would (``python -m build``,
with build isolation, from a copy of the repository's files), and a fresh virtual environment that
installs it.

The fresh environment gets its other packages (torch, pytest, ...) from this test environment's
site-packages through a ``.pth`` line, after its own: installing torch anew for every test run
would download gigabytes. What it installs itself (the wheel, a pytest-benchmark version, the
adopting project) comes first on ``sys.path``, and this environment's editable kernelgate is not
active there (its ``.pth`` hook sits in a folder that a ``.pth`` line adds, which Python does not
scan for more ``.pth`` files). ``.ci/package`` does the same with nothing borrowed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

ROOT = Path(__file__).parent.parent


def source_copy(to: Path) -> Path:
    """The repository's files (tracked, and new ones git does not ignore) copied to ``to``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


def build(out: Path) -> tuple[Path, Path]:
    """``python -m build`` (sdist, then the wheel from the sdist, each with build isolation): the
    wheel and the sdist."""
    source = source_copy(out / "source")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out / "dist"), str(source)],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    (wheel,) = (out / "dist").glob("kernelgate-*.whl")
    (sdist,) = (out / "dist").glob("kernelgate-*.tar.gz")
    return wheel, sdist


def own_env() -> dict[str, str]:
    """This environment without ``PYTHONPATH``: pip installing into a fresh venv, and its python, must
    see what is installed there, not a checkout that PYTHONPATH points to (with it set, pip found
    kernelgate "already satisfied" there, installed nothing, and the wheel's test failed)."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def fresh_venv(where: Path, *install: str) -> Path:
    """A new virtual environment at ``where`` with ``install`` (pip arguments: the wheel, pinned
    versions, ``-e DIR``) installed in it, borrowing every other package from this environment;
    its python."""
    venv.create(where, with_pip=False)
    python = where / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(site, "zz_borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    if install:
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
             "--disable-pip-version-check", *install],
            capture_output=True, text=True, check=True, timeout=600, env=own_env(),
        )  # fmt: skip
    return python
