"""Bisection of a slowdown to its first bad commit: each step measures one commit of the range against
GOOD on this runner (a :class:`Judge`, the same-host A/B of ``kernelgate ab`` in
:mod:`kernelgate.history.abjudge`) and halves the range, until one commit is left.

BAD is taken as bad (the nightly measured it so), so ``n`` commits after GOOD take ceil(log2 n) judge
runs, plus one where the culprit was never measured itself (BAD is the culprit), for its size. A judge
that cannot settle a commit measures it once more; twice unsettled, the bisection stops with the
range narrowed so far. The state (the plan and each step) is written to ``bisect.json`` after every
step, so a crashed or time-boxed bisection goes on where it stopped when run again with the same
arguments.
"""

from __future__ import annotations

import enum
import json
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

STATE = "bisect.json"
RETRIES = 1  # an unsettled commit is measured once more


class BisectError(ValueError):
    """A range or state that cannot be bisected; the message says why and the fix."""


class Verdict(enum.Enum):
    BAD = "bad"  # the target figure regressed against GOOD
    GOOD = "good"
    UNCLEAR = "unclear"  # the judge could not settle it (inconclusive, or the run failed)


@dataclass(frozen=True)
class Outcome:
    """One judge run of a commit against GOOD: the verdict on the target, its size (a fraction,
    +0.03: 3 % slower; None where not measured) and a line for the log."""

    verdict: Verdict
    size: float | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "size": self.size, "detail": self.detail}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        size = data.get("size")
        return cls(
            Verdict(data["verdict"]), None if size is None else float(size), str(data.get("detail", ""))
        )


class Judge(Protocol):
    """Measures ``commit`` against ``good`` on this runner; ``work`` is a fresh folder for it."""

    def __call__(self, good: str, commit: str, work: Path) -> Outcome: ...


@dataclass(frozen=True)
class Plan:
    """What a bisection measures: the commits after GOOD up to BAD (oldest first), and the target."""

    good: str
    bad: str
    commits: tuple[str, ...]
    subjects: tuple[str, ...]
    target: str  # the pytest arguments and the figure, as people read them

    @property
    def expected_runs(self) -> int:
        return math.ceil(math.log2(len(self.commits))) if len(self.commits) > 1 else 0

    def lines(self) -> list[str]:
        n = len(self.commits)
        out = [
            f"kernelgate bisect: {n} commit(s) after {self.good[:12]} up to {self.bad[:12]}, target "
            f"{self.target}; {self.expected_runs} judge run(s) (ceil(log2 {n})), one more if the "
            "culprit is never measured itself"
        ]
        out += [
            f"  {i + 1:3d} {c[:12]} {s}"
            for i, (c, s) in enumerate(zip(self.commits, self.subjects, strict=True))
        ]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "good": self.good,
            "bad": self.bad,
            "commits": list(self.commits),
            "subjects": list(self.subjects),
            "target": self.target,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        return cls(
            str(data["good"]),
            str(data["bad"]),
            tuple(map(str, data["commits"])),
            tuple(map(str, data["subjects"])),
            str(data["target"]),
        )


@dataclass(frozen=True)
class Step:
    index: int  # in plan.commits
    commit: str
    outcome: Outcome
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "commit": self.commit,
            "outcome": self.outcome.to_json(),
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Step:
        return cls(
            int(data["index"]),
            str(data["commit"]),
            Outcome.from_json(data["outcome"]),
            float(data["seconds"]),
        )


class Status(enum.Enum):
    FOUND = "found"
    UNFINISHED = "unfinished"  # out of time: run the same command again to go on
    UNCLEAR = "unclear"  # a commit the judge could not settle twice
    EMPTY = "empty"  # no commit between GOOD and BAD: not the code


@dataclass(frozen=True)
class Result:
    plan: Plan
    status: Status
    low: int  # the first bad commit lies in plan.commits[low : high + 1]
    high: int
    steps: tuple[Step, ...] = field(default_factory=tuple)

    @property
    def culprit(self) -> str | None:
        return self.plan.commits[self.high] if self.status is Status.FOUND else None

    @property
    def runs(self) -> int:
        return len(self.steps)

    @property
    def size(self) -> float | None:
        """The culprit's size against GOOD, from the judge run that measured it."""
        found = [
            s.outcome.size for s in self.steps if s.index == self.high and s.outcome.verdict is Verdict.BAD
        ]
        return found[-1] if found else None

    def headline(self) -> str:
        runs = f"{self.runs} judge run(s)"
        if self.status is Status.EMPTY:
            span = f"{self.plan.good[:12]} and {self.plan.bad[:12]}"
            return f"no commit between {span}: the change is not the code's"
        if self.status is Status.FOUND:
            size = "" if self.size is None else f", {self.size:+.1%} against {self.plan.good[:12]}"
            subject = self.plan.subjects[self.high]
            return f"first bad commit {self.plan.commits[self.high][:12]} ({subject}){size}; {runs}"
        left = self.plan.commits[self.low : self.high + 1]
        why = (
            "out of time (run the same command again to go on)"
            if self.status is Status.UNFINISHED
            else (f"the judge could not settle {self.plan.commits[self.steps[-1].index][:12]} twice")
        )
        return f"{why}: the first bad commit is one of {len(left)}: {left[0][:12]}..{left[-1][:12]}; {runs}"

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_json(),
            "status": self.status.value,
            "low": self.low,
            "high": self.high,
            "culprit": self.culprit,
            "size": self.size,
            "runs": self.runs,
            "steps": [s.to_json() for s in self.steps],
            "headline": self.headline(),
        }


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BisectError(
            f"git {' '.join(args)} failed in {repo} (exit {done.returncode}): {done.stderr.strip()}"
        )
    return done.stdout.strip()


def plan(repo: Path, good: str, bad: str, target: str) -> Plan:
    """The commits after ``good`` up to ``bad`` on the first-parent line (a merge of two green pull
    requests is one step: the commit that brought both together)."""
    good_sha, bad_sha = (
        _git(repo, "rev-parse", f"{good}^{{commit}}"),
        _git(repo, "rev-parse", f"{bad}^{{commit}}"),
    )
    if _git(repo, "merge-base", good_sha, bad_sha) != good_sha:
        raise BisectError(
            f"{good} ({good_sha[:12]}) is no ancestor of {bad} ({bad_sha[:12]}); give the older night's "
            f"commit first: kernelgate bisect {bad} {good} (if that is the order)"
        )
    text = _git(repo, "log", "--first-parent", "--reverse", "--format=%H %s", f"{good_sha}..{bad_sha}")
    rows = [line.split(" ", 1) for line in text.splitlines() if line]
    return Plan(
        good_sha, bad_sha, tuple(r[0] for r in rows), tuple(r[1] if len(r) > 1 else "" for r in rows), target
    )


def _save(path: Path, plan_: Plan, steps: Sequence[Step], result: Result | None) -> None:
    data = {
        "plan": plan_.to_json(),
        "steps": [s.to_json() for s in steps],
        "result": result and result.to_json(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1)
    os.replace(name, path)


def resumed(out: Path, plan_: Plan) -> list[Step]:
    """The steps a previous run of this same plan kept in ``out`` (none where it kept none)."""
    path = out / STATE
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        kept, steps = Plan.from_json(data["plan"]), [Step.from_json(s) for s in data["steps"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise BisectError(f"{path}: not a bisection's state ({exc}); remove it: rm {path}") from exc
    if kept != plan_:
        raise BisectError(
            f"{path} is the state of another bisection ({kept.good[:12]}..{kept.bad[:12]}, {kept.target}); "
            f"give another --out, or remove it to start this one: rm {path}"
        )
    return steps


def bisect(
    plan_: Plan,
    judge: Judge,
    out: Path,
    *,
    deadline: float | None = None,
    log: Callable[[str], None] = print,
    clock: Callable[[], float] = time.monotonic,
) -> Result:
    """Halve ``plan_``'s range with ``judge`` until one commit is left; ``deadline``: a
    :func:`time.monotonic` value after which no judge run starts."""
    n = len(plan_.commits)
    if n == 0:
        result = Result(plan_, Status.EMPTY, 0, -1)
        _save(out / STATE, plan_, [], result)
        return result
    steps = resumed(out, plan_)
    if steps:
        log(f"kernelgate bisect: going on from {out / STATE}: {len(steps)} judge run(s) kept")
    low, high = -1, n - 1  # the last known good (-1: GOOD) and the first known bad (BAD)

    def measure(index: int) -> Outcome | Status:
        tries = [s for s in steps if s.index == index]
        while not tries or (tries[-1].outcome.verdict is Verdict.UNCLEAR and len(tries) <= RETRIES):
            if deadline is not None and clock() >= deadline:
                return Status.UNFINISHED
            commit = plan_.commits[index]
            log(
                f"kernelgate bisect: judge run {len(steps) + 1}: {commit[:12]} ({index + 1} of {n}) "
                f"against {plan_.good[:12]}"
            )
            start = clock()
            outcome = judge(plan_.good, commit, out / f"step-{len(steps) + 1:02d}-{commit[:12]}")
            step = Step(index, commit, outcome, round(clock() - start, 1))
            steps.append(step)
            tries.append(step)
            size = "" if outcome.size is None else f" {outcome.size:+.2%}"
            log(f"kernelgate bisect:   {outcome.verdict.value}{size}: {outcome.detail}")
            _save(out / STATE, plan_, steps, None)
        last = tries[-1].outcome
        return Status.UNCLEAR if last.verdict is Verdict.UNCLEAR else last

    status = Status.FOUND
    while high - low > 1:
        mid = (low + high) // 2
        got = measure(mid)
        if isinstance(got, Status):
            status = got
            break
        if got.verdict is Verdict.BAD:
            high = mid
        else:
            low = mid
    if status is Status.FOUND and not any(
        s.index == high and s.outcome.verdict is Verdict.BAD for s in steps
    ):
        got = measure(high)  # the culprit's size: it was never measured itself
        if isinstance(got, Outcome) and got.verdict is Verdict.GOOD:
            log(f"kernelgate bisect: {plan_.commits[high][:12]} measured good against GOOD this time: "
                "the change may be smaller than the judge's threshold on this runner")  # fmt: skip
    result = Result(plan_, status, low + 1, high, tuple(steps))
    _save(out / STATE, plan_, steps, result)
    log(f"kernelgate bisect: {result.headline()}")
    return result
