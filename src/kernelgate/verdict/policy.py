"""Whether a run fails, in one place: :func:`decide` is the only function that says so.

The pytest plugin (at the end of a session, with or without pytest-xdist) and the command line
(``kernelgate compare``, ``kernelgate report``) hand it the same things: one :class:`Case` per gate
benchmark (what became of it: compared and passed, regressed, inconclusive, no baseline,
unreliable, not compared), whether the run compared nothing at all, and the session's errors.
The run fails, and exits 1, iff one of them says fail under the configured policies
(:class:`ExitPolicy`): a regression always; an inconclusive verdict unless
``on_inconclusive = "warn"``; a missing baseline unless ``missing_baseline = "warn"``; an
unreliable profile unless ``on_unreliable = "warn"``; a benchmark not compared for any other reason
(an error before or while comparing) always; nothing compared unless ``on_nothing_compared = "warn"``;
a session error always. pytest's own outcome of the test (``xfail``, a caught ``Failed``) does not
change it: the gate's verdict is the gate's, not the test's.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kernelgate.config import TESTS, GateConfig, MissingBaseline, Policy, Scope, record_command
from kernelgate.verdict.compare import Comparison, Verdict


class Status(enum.Enum):
    """What became of one gate benchmark."""

    PASS = "pass"
    REGRESSION = "regression"
    INCONCLUSIVE = "inconclusive"
    NO_BASELINE = "no baseline"
    UNRELIABLE = "unreliable"
    NOT_COMPARED = "not compared"  # an error before or while comparing: always fails


@dataclass(frozen=True)
class Case:
    """One gate benchmark's outcome, why, and the command that fixes it (where there is one)."""

    benchmark: str
    status: Status
    reason: str = ""
    fix: str = ""

    @classmethod
    def of(cls, comparison: Comparison, target: str = TESTS) -> Case:
        """The case of a comparison: a regression where a failing verdict is not a doubt, else
        inconclusive where a verdict is, else a pass (``target``: the test's node id, for the
        command that re-records it)."""
        hard = [d for d in comparison.failures if d.verdict is not Verdict.INCONCLUSIVE]
        figures = [d for d in hard if d.scope is not Scope.KERNEL]  # the kernels below them
        hard = figures or hard
        doubts = [d for d in comparison.deltas if d.verdict is Verdict.INCONCLUSIVE]
        if hard:
            names = ", ".join(f"{d.figure} {d.verdict.value}" for d in hard[:5])
            more = f" and {len(hard) - 5} more" if len(hard) > 5 else ""
            return cls(comparison.benchmark, Status.REGRESSION, names + more, record_command(target))
        if doubts:
            reasons = sorted({d.note for d in doubts if d.note}) or ["not settled"]
            names = ", ".join(d.figure for d in doubts[:5])
            return cls(comparison.benchmark, Status.INCONCLUSIVE, f"{names}: {'; '.join(reasons)}")
        return cls(comparison.benchmark, Status.PASS)


@dataclass(frozen=True)
class ExitPolicy:
    """Which of the softer outcomes fail the run (``[tool.kernelgate]``); a regression, a benchmark
    not compared and a session error always do."""

    on_inconclusive: Policy = Policy.FAIL
    missing_baseline: Policy = Policy.FAIL
    on_unreliable: Policy = Policy.FAIL
    on_nothing_compared: Policy = Policy.FAIL

    @classmethod
    def of(cls, config: GateConfig) -> ExitPolicy:
        missing = Policy.FAIL if config.missing_baseline is MissingBaseline.FAIL else Policy.WARN
        return cls(config.on_inconclusive, missing, config.on_unreliable, config.on_nothing_compared)

    def fails(self, status: Status) -> bool:
        """Whether a benchmark with this outcome fails the run."""
        soft = {
            Status.INCONCLUSIVE: self.on_inconclusive,
            Status.NO_BASELINE: self.missing_baseline,
            Status.UNRELIABLE: self.on_unreliable,
        }
        if status is Status.PASS:
            return False
        return soft.get(status, Policy.FAIL) is Policy.FAIL


@dataclass(frozen=True)
class ExitDecision:
    """The run's verdict: failed or not, the reasons it failed, and what only warns."""

    failed: bool
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0


def describe(case: Case) -> str:
    """One line: the benchmark, its outcome, why, and the command (a regression's, if intended)."""
    text = f"{case.benchmark}: {case.status.value}" + (f": {case.reason}" if case.reason else "")
    if not case.fix:
        return text
    intended = case.status is Status.REGRESSION
    return text + (f"; if intended, re-record: {case.fix}" if intended else f"; fix: {case.fix}")


def decide(
    cases: Iterable[Case],
    policy: ExitPolicy,
    nothing_compared: str | None = None,
    errors: Sequence[str] = (),
) -> ExitDecision:
    """Fail iff a case fails under ``policy``, nothing was compared (unless the policy says warn),
    or there is a session error. ``nothing_compared`` is the message of a run that compared nothing
    (None when something was compared)."""
    reasons: list[str] = []
    warnings: list[str] = []
    for case in cases:
        if case.status is Status.PASS:
            continue
        (reasons if policy.fails(case.status) else warnings).append(describe(case))
    if nothing_compared is not None:
        (reasons if policy.on_nothing_compared is Policy.FAIL else warnings).append(nothing_compared)
    reasons += [e for e in errors if e not in reasons]
    return ExitDecision(bool(reasons), tuple(reasons), tuple(warnings))
