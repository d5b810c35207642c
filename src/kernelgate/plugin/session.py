"""Per-session state of the plugin, kept in ``config.stash``. Light: no torch, no pandas."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kernelgate.config import GateConfig

if TYPE_CHECKING:
    from kernelgate.baseline.store import Entry
    from kernelgate.machine.pinning import Slots
    from kernelgate.models.yolo import YoloSpec
    from kernelgate.offline import Judged
    from kernelgate.plugin.samehost import Suspect
    from kernelgate.report.publish import Published
    from kernelgate.verdict.compare import Comparison
    from kernelgate.verdict.policy import ExitDecision
    from kernelgate.verdict.samehost import Decision


class MissingBaselineWarning(UserWarning):
    pass


class NotComparedWarning(UserWarning):
    """A benchmark or the whole run ended without a comparison, and the policy says warn."""


@dataclass(frozen=True)
class Options:
    """What the command line asked of this run (see ``pytest --help``, group kernelgate)."""

    save: bool = False
    device: str = "auto"
    slow_layer: str | None = None
    slow_extra_runs: int = 1
    iterations: int | None = None
    out_dir: Path = Path(".kernelgate")
    append: bool = False
    replace_unreadable: bool = False  # --kernelgate-replace-unreadable
    keep_round: str | None = None  # --kernelgate-keep-round REASON
    confirm_out: Path | None = None
    trust_pt: bool = False
    allow_other_gpu: bool = False
    matrix: str | None = None  # --kernelgate-matrix
    only: tuple[str, ...] = ()  # --kernelgate-only


@dataclass
class State:
    """Per-session state, kept in ``config.stash``: what was measured and compared."""

    config: GateConfig
    options: Options
    arch: str = ""  # the architecture key of this machine (NVML; no torch)
    cases: tuple[YoloSpec, ...] = ()  # the matrix's configurations selected for this run
    measured: list[Entry] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    baselines: dict[Path, dict[str, Entry]] = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # session-level failures: the run's exit status is 1
    # node ids of the collected tests that use the kernelgate fixture, and those that were skipped
    gate_tests: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unreliable: list[str] = field(default_factory=list)
    # pytest-xdist's controller: per worker, the tests it ran and their seconds (setup, call, teardown)
    busy: dict[str, tuple[int, float]] = field(default_factory=dict)
    # benchmarks the stored-baseline screen failed, for the same-host judge at session end, and its
    # decisions (kernelgate.plugin.samehost)
    suspects: list[Suspect] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    # set by the first benchmark whose CUDA error left the process's CUDA context unusable
    cuda_broken: str | None = None
    # (node id, why) of gate benchmarks that raised before they had an outcome
    failed: list[tuple[str, str]] = field(default_factory=list)
    # the same-host judge's decisions, for the results file (kernelgate.offline), and the messages
    # of those that fail (printed; the run fails on the merged comparisons themselves)
    judged: list[Judged] = field(default_factory=list)
    judge_failures: list[str] = field(default_factory=list)
    # how the run ends (kernelgate.verdict.policy), set at the end of the session
    decision: ExitDecision | None = None

    def outcomes(self) -> int:
        """How many outcomes the session holds: a benchmark that adds none failed before comparing."""
        return len(self.comparisons) + len(self.suspects) + len(self.missing) + len(self.unreliable)

    def nothing_compared(self) -> str | None:
        """Why the run ends without a single comparison (or, with --kernelgate-save, a single saved
        benchmark) although it collected gate benchmarks; None when something was compared."""
        if not self.gate_tests or self.options.confirm_out is not None:
            return None  # a confirm run only measures; its parent compares
        saved = self.options.save and any(e.measurement.reliable for e in self.measured)
        if self.comparisons or self.suspects or saved:
            return None
        n = len(self.gate_tests)
        causes = {
            "skipped": len(set(self.skipped)),
            "without a baseline": len(self.missing),
            "unreliable": len(self.unreliable),
        }
        causes["failed before comparing"] = max(0, n - sum(causes.values()))
        listed = ", ".join(f"{count} {what}" for what, count in causes.items() if count)
        verb = "saved" if self.options.save else "compared"
        return (
            f"kernelgate: nothing was {verb}: {n} gate benchmark(s) collected, none {verb} ({listed}). "
            f"A gate that {verb} nothing checked nothing. Fix the causes above; to let such a run pass, set "
            'on_nothing_compared = "warn" in [tool.kernelgate] (or --kernelgate-on-nothing-compared=warn).'
        )

    def baseline_entries(self, path: Path, arch: str | None = None) -> dict[str, Entry]:
        """The entries of baseline file ``path`` (of architecture ``arch``), read once per session."""
        if path not in self.baselines:
            from kernelgate.baseline.store import load

            exists = path.exists() or path.is_symlink() or path.parent.is_symlink()
            self.baselines[path] = load(path, arch, root=self.config.baseline_dir) if exists else {}
        return self.baselines[path]


STATE_KEY = pytest.StashKey["State"]()


REPORT_KEY: pytest.StashKey[Published] = pytest.StashKey()


# pytest-xdist, controller side: which worker holds which GPU, and the workers whose share arrived
SLOTS_KEY: pytest.StashKey[Slots] = pytest.StashKey()


RECEIVED_KEY = pytest.StashKey[set[str]]()
