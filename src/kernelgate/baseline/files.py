"""The file system side of a baseline file: atomic writes, the lock, the temporary files a killed
writer leaves, and the folders a baseline may be read from or written to.

A baseline lives at ``<baseline folder>/<arch>/0001_kernelgate.json``. The arch folder or the file
may be a symbolic link only if it leads to a place inside the baseline folder: a link that leads
elsewhere would let a checkout read a yardstick from, or write one to, any file of the machine.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

from kernelgate.baseline.errors import BaselineError

LOCK_TIMEOUT_S = 60.0
# write_atomic's temporary files older than this are what a killed writer left (a live one renames
# its file within milliseconds, and works under the lock that the cleaner holds)
STALE_TEMP_S = 60.0


def temp_glob(path: Path) -> str:
    """The names of :func:`write_atomic`'s temporary files of ``path``: ``.0001_kernelgate.json.*.tmp``."""
    return f".{path.name}.*.tmp"


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write via a temporary file in the same folder and rename: a reader never sees half a file.
    Text is written as UTF-8."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_stale_temps(path: Path, max_age_s: float = STALE_TEMP_S) -> list[Path]:
    """Remove the temporary files of ``path`` older than ``max_age_s`` (a writer killed with
    ``kill -9`` between writing and renaming leaves one); call it under ``path``'s lock."""
    cutoff = time.time() - max_age_s
    removed = []
    for tmp in sorted(path.parent.glob(temp_glob(path))):
        try:
            if tmp.is_file() and not tmp.is_symlink() and tmp.stat().st_mtime < cutoff:
                tmp.unlink()
                removed.append(tmp)
        except OSError:
            continue  # gone meanwhile, or not ours to remove: the next save tries again
    return removed


def lock_path(path: Path) -> Path:
    """The lock file of ``path``: ``.0001_kernelgate.json.lock`` beside it (stays; ignore it in git)."""
    return path.with_name(f".{path.name}.lock")


def _unwritable(path: Path, where: Path, exc: OSError) -> BaselineError:
    if where.is_dir():
        moved = shlex.quote(f"{where}.old")
        fix = f"it is a folder, not a file: move it away (mv {shlex.quote(str(where))} {moved})"
    elif where.exists() and where != path.parent:
        fix = f"make it writable (chmod u+rw {shlex.quote(str(where))})"
    else:
        fix = f"check that {where.parent} is a folder you may write to"
    return BaselineError(
        f"{path}: {where} cannot be opened or created ({type(exc).__name__}: {exc.strerror or exc}); "
        f"{fix}, then run again. Nothing was written.",
        replaceable=False,
    )


@contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the lock of baseline file ``path`` (an OS file lock: released if the process dies)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(path, path.parent, exc) from exc
    lock = filelock.FileLock(lock_path(path), timeout=timeout)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        raise BaselineError(
            f"{path}: another process has held its lock ({lock_path(path)}) for {timeout:g} s. "
            "Wait for the other kernelgate run to finish, then run again.",
            replaceable=False,
        ) from exc
    except OSError as exc:
        raise _unwritable(path, lock_path(path), exc) from exc
    try:
        yield
    finally:
        lock.release()


def check_file(path: Path) -> None:
    """``path`` is a file or nothing yet: a folder there is named, never read or written through."""
    if path.is_dir():
        raise BaselineError(
            f"{path} is a folder, not a baseline file: nothing is read from it or written to it. Move it "
            f"away (mv {shlex.quote(str(path))} {shlex.quote(f'{path}.old')}) and run again.",
            replaceable=False,
        )


def confined(path: Path, root: Path) -> None:
    """Refuse ``path`` where it, or its folder, is a symbolic link that leads outside ``root``
    (the baseline folder, itself trusted as configured)."""
    top = root.resolve()
    real = path.resolve()
    if real.is_relative_to(top):
        return
    link = next((p for p in (path.parent, path) if p.is_symlink()), None)
    if link is None:
        raise BaselineError(f"{path} lies outside the baseline folder {top}.", replaceable=False)
    target = link.resolve()
    quoted, copy = shlex.quote(str(link)), shlex.quote(str(target))
    raise BaselineError(
        f"{link} is a symbolic link to {target}, outside the baseline folder {top}: kernelgate reads and "
        "writes baselines only inside it (a link could make a checkout read its yardstick from, or write "
        f"it to, any file of this machine). Replace the link by a copy (rm {quoted} && cp -r {copy} "
        f"{quoted}), or point the baseline folder there (baseline_dir in [tool.kernelgate] or "
        "--kernelgate-baseline-dir).",
        replaceable=False,
    )
