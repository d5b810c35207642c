"""The bisection's judge on a GPU runner: ``kernelgate ab``'s machinery, one commit against GOOD.

A judge run checks the commit out as a detached worktree (outside the repository, as ``kernelgate ab``
puts its base tree), and runs :func:`kernelgate.verdict.ab.run_ab` there against GOOD: both sides on
this runner in alternating fresh pytest processes, each side in its own environment where the
dependency files differ (:mod:`kernelgate.machine.sideenv`). The two result files are judged as
``kernelgate ab`` judges them (:func:`kernelgate.offline.judge` with the process as the unit, the
same-host rule), and the bisection's target figure decides: regressed is bad, unchanged or improved
good, a doubt (inconclusive, ambiguous) or a failed run unclear.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelgate import offline
from kernelgate.baseline import store as baseline
from kernelgate.config import ConfigError, Scope, load_pyproject
from kernelgate.history.bisect import Outcome, Verdict
from kernelgate.history.nights import TOTAL
from kernelgate.verdict import ab
from kernelgate.verdict.compare import Comparison
from kernelgate.verdict.delta import Delta
from kernelgate.verdict.delta import Verdict as Seen

BAD = {Seen.REGRESSED, Seen.KERNEL_SWAPPED}
UNSETTLED = {Seen.INCONCLUSIVE, Seen.AMBIGUOUS}


def target_of(comparison: Comparison, figure: str | None) -> tuple[Delta | None, str]:
    """The delta that decides: the figure's (a layer, or TOTAL), or with none given the largest
    failing one, else the total."""
    if figure == TOTAL:
        found = comparison.of(Scope.TOTAL)
    elif figure is not None:
        found = tuple(d for d in comparison.of(Scope.LAYER) if d.name == figure)
    else:
        found = comparison.failures or comparison.of(Scope.TOTAL)
    if not found:
        return None, f"{comparison.benchmark} has no figure {figure!r} in this A/B"
    return found[0], ""


def outcome_of(pairs: Sequence[offline.Pair], benchmark: str | None, figure: str | None) -> Outcome:
    """The verdict on the target of one A/B's pairs."""
    chosen = [p for p in pairs if benchmark is None or p.case.benchmark == benchmark]
    if not chosen:
        names = ", ".join(p.case.benchmark for p in pairs) or "none"
        return Outcome(Verdict.UNCLEAR, None, f"the A/B measured no {benchmark} (it measured: {names})")
    worst: Outcome | None = None
    for pair in chosen:
        if pair.comparison is None:
            return Outcome(Verdict.UNCLEAR, None, f"{pair.case.benchmark} not compared: {pair.case.reason}")
        delta, why = target_of(pair.comparison, figure)
        if delta is None:
            return Outcome(Verdict.UNCLEAR, None, why)
        pct = delta.delta_pct
        size = None if pct is None else pct / 100.0
        line = f"{pair.comparison.benchmark} {delta.figure}: {delta.verdict.value}"
        verdict = (
            Verdict.BAD
            if delta.verdict in BAD
            else Verdict.UNCLEAR
            if delta.verdict in UNSETTLED
            else Verdict.GOOD
        )
        found = Outcome(verdict, size, line)
        order = {Verdict.BAD: 2, Verdict.UNCLEAR: 1, Verdict.GOOD: 0}
        if worst is None or order[found.verdict] > order[worst.verdict]:
            worst = found
    assert worst is not None
    return worst


@dataclass(frozen=True)
class AbJudge:
    """One ``kernelgate ab`` of a commit against GOOD; ``config`` is the pyproject.toml whose
    ``[tool.kernelgate]`` sets the thresholds (the same for every step)."""

    repo: Path
    config: Path
    pytest_args: tuple[str, ...]
    rounds: int
    benchmark: str | None = None
    figure: str | None = None

    def __call__(self, good: str, commit: str, work: Path) -> Outcome:
        try:
            gate, _ = load_pyproject(self.config)
        except ConfigError as exc:
            return Outcome(Verdict.UNCLEAR, None, str(exc))
        where = Path(tempfile.mkdtemp(prefix="kernelgate-bisect-"))
        tree = ab.worktree(self.repo, commit, where / "head-tree")
        try:
            files = ab.run_ab(
                tree, good, self.rounds, self.pytest_args, work.resolve(), self.config.resolve()
            )
        finally:
            ab.remove_worktree(self.repo, tree)
            shutil.rmtree(where, ignore_errors=True)
        if files is None:
            return Outcome(
                Verdict.UNCLEAR, None, f"the A/B run failed (its log above; scratch folder {work})"
            )
        try:
            base, head = baseline.load(files[0]), baseline.load(files[1])
        except baseline.BaselineError as exc:
            return Outcome(Verdict.UNCLEAR, None, str(exc))
        pairs = offline.judge(base, head, gate, str(files[0]), processes=True)
        return outcome_of(pairs, self.benchmark, self.figure)
