"""Per-session state of the plugin, kept in ``config.stash``. Light: no torch, no pandas."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kernelgate.config import GateConfig

if TYPE_CHECKING:
    from kernelgate.baseline import Entry
    from kernelgate.compare import Comparison


class MissingBaselineWarning(UserWarning):
    pass


@dataclass(frozen=True)
class Options:
    """What the command line asked of this run (see ``pytest --help``, group kernelgate)."""

    save: bool = False
    device: str = "auto"
    slow_layer: str | None = None
    slow_extra_runs: int = 1
    iterations: int | None = None
    out_dir: Path = Path(".kernelgate")
    allow_other_gpu: bool = False


@dataclass
class State:
    """Per-session state, kept in ``config.stash``: what was measured and compared."""

    config: GateConfig
    options: Options
    arch_hint: str
    measured: list[Entry] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    baselines: dict[Path, dict[str, Entry]] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def baseline_entries(self, path: Path) -> dict[str, Entry]:
        """The entries of baseline file ``path``, read once per session."""
        if path not in self.baselines:
            from kernelgate.baseline import load

            self.baselines[path] = load(path) if path.exists() else {}
        return self.baselines[path]
