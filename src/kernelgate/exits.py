"""The exit statuses of the ``kernelgate`` command (docs/silent-pass.md, "Exit statuses") and the one guard
around every command: bad input exits 2 with a line that says what to fix, never a traceback; an
unexpected exception exits 3, with the traceback kept in a file and the command that reproduces it,
never 0 or 1 (a verdict)."""

from __future__ import annotations

import datetime
import os
import shlex
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from kernelgate import __version__

PASS = 0  # every gate benchmark compared and none regressed (or a doubt with on_inconclusive="warn")
FAILED = 1  # a verdict failed the run: a regression, an inconclusive judge, nothing compared
USAGE = 2  # bad input or usage: a wrong option, a missing or unreadable file, a bad configuration
INTERNAL_ERROR = 3  # kernelgate itself failed: not a verdict, nothing was judged

#: Where crash reports go (the folder of kernelgate's other output), else the temporary folder.
CRASH_DIR = Path(".kernelgate") / "crash"


class InputError(Exception):
    """Bad input the user can fix; the message says what and how."""


def crash_report(command: str, argv: Sequence[str], exc: BaseException) -> Path:
    """Write the traceback, the version and the command line to a file; its path."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S%f")
    text = (
        f"kernelgate {__version__}, Python {sys.version.split()[0]}\n"
        f"command: {reproduce(argv)}\ncwd: {os.getcwd()}\n\n"
        + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    )
    for folder in (CRASH_DIR, Path(tempfile.gettempdir()) / "kernelgate-crash"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{command.replace(' ', '-')}-{stamp}.txt"
            path.write_text(text, encoding="utf-8")
            return path.resolve()
        except OSError:
            continue
    raise OSError("no writable folder for the crash report")


def reproduce(argv: Sequence[str]) -> str:
    return shlex.join(["kernelgate", *argv])


def guarded(command: str, argv: Sequence[str], run: Callable[[], int]) -> int:
    """Run a command: its own exit status; bad input (:class:`InputError`, a file that cannot be
    read or written) exits :data:`USAGE` with one line; any other exception exits
    :data:`INTERNAL_ERROR` with the crash report's path and the command to reproduce it."""
    try:
        return run()
    except InputError as exc:
        print(f"kernelgate {command}: {exc}", file=sys.stderr)
        return USAGE
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        print(
            f"kernelgate {command}: cannot use{where}: {exc.strerror or exc}. Check the path and its "
            f"permissions, then run again: {reproduce(argv)}",
            file=sys.stderr,
        )
        return USAGE
    except Exception as exc:  # a bug or an unforeseen input: never the exit status of a verdict
        try:
            report = f"the traceback is in {crash_report(command, argv, exc)}"
        except OSError:
            report = "no crash report could be written; the traceback follows"
            traceback.print_exc()
        print(
            f"kernelgate {command}: internal error ({type(exc).__name__}: {exc}). Exit status "
            f"{INTERNAL_ERROR} is not a verdict: nothing was judged. {report}. To reproduce: "
            f"{reproduce(argv)}. Please report it with that file (kernelgate {__version__}).",
            file=sys.stderr,
        )
        return INTERNAL_ERROR
