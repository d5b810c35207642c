"""The error of a baseline file that cannot be used, and the commands its messages name."""

from __future__ import annotations

from pathlib import Path

from kernelgate.config import record_command

RECORD_CMD = record_command()
REPLACE_OPTION = "--kernelgate-replace-unreadable"
# a save over an unreadable file is refused unless asked with this option (the file may be a
# transient read error, or hold benchmarks this run did not measure)
REPLACE_CMD = f"{RECORD_CMD} {REPLACE_OPTION}"


class BaselineError(Exception):
    """A baseline file cannot be used; the message names the file and the fix.

    ``replaceable`` is False where ``--kernelgate-save`` must not overwrite the file either (it was
    written by a newer kernelgate, so replacing it would lose what this version cannot read).
    """

    def __init__(self, message: str, replaceable: bool = True) -> None:
        super().__init__(message)
        self.replaceable = replaceable


def unusable(path: Path, what: str) -> BaselineError:
    """The error of a file with a defect: restore it from git, or replace it by a new recording."""
    return BaselineError(
        f"{path}: {what}. Restore it from git (git checkout -- {path}) or re-record it with '{REPLACE_CMD}'."
    )
