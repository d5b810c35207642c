"""What a doctor rule says about a machine: a :class:`Finding`, with its :class:`Level` (ok, info,
warn, error), a message and a fix.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Level(enum.IntEnum):
    OK = 0
    INFO = 1
    WARN = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Finding:
    level: Level
    check: str
    message: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"level": self.level.label, "check": self.check, "message": self.message, "fix": self.fix}
