"""The test's outcome is the gate's verdict: a suspect's reports wait for the same-host judge.

A gate test whose benchmark the stored-baseline screen made a suspect has no verdict when its call
ends: the judge decides it after the last test, measuring base and head on this runner. So the
test runs with its reports held back (:func:`run_test`); once the judge has decided, each held
test's call report says the verdict (:func:`release`): failed with the judge's message for a
regression (and an inconclusive verdict where ``on_inconclusive = "fail"``), passed otherwise, the
judge's answer attached either way (a ``kernelgate`` section for ``-rA`` and a ``kernelgate``
property for ``--junitxml``). Then the reports are logged as pytest logs any: the counts line, the
``-r`` short summary, ``--junitxml``, ``--lf``'s cache and ``-x`` read the verdict.

Under pytest-xdist a worker holds its suspects' reports the same way and sends them with its
measurements (:func:`to_wire`); the controller, which judges, logs them (:func:`from_wire`).
The hooks that call this live in :mod:`kernelgate.plugin.hooks`; docs/design.md, "The test's
outcome", says why the reports wait rather than the judge running after each test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kernelgate.plugin.session import State

SECTION = "kernelgate"  # the report section and the JUnit property that carry the judge's answer


@dataclass(frozen=True)
class TestVerdict:
    """The judge's verdict of one test, as its report says it."""

    __test__ = False  # a dataclass, not a pytest test class

    nodeid: str
    failed: bool
    headline: str  # one line: the verdict and why (the -r line, JUnit's failure message)
    text: str  # the whole message, headline first: every figure the screen flagged, base -> head


@dataclass
class Held:
    """A suspect test's reports (setup, call, teardown), not logged until the judge has decided."""

    nodeid: str
    location: tuple[str, int | None, str]
    reports: list[pytest.TestReport] = field(default_factory=list)


@dataclass(frozen=True)
class CrashLine:
    """Where and why a verdict failed, in the shape pytest reads a crash: ``message`` is the ``-r``
    short summary's text and JUnit's failure message."""

    path: str
    lineno: int
    message: str


@dataclass(frozen=True)
class VerdictRepr:
    """A failed verdict as a report's ``longrepr``: the whole message, its headline as the crash line."""

    text: str
    reprcrash: CrashLine

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


def run_test(item: pytest.Item, nextitem: pytest.Item | None, state: State) -> None:
    """Run one gate test as pytest would, holding its reports back when its benchmark became a suspect."""
    from _pytest.runner import runtestprotocol  # what pytest's own protocol calls, reports unlogged

    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    suspect = next((s for s in state.suspects if s.nodeid == item.nodeid), None)
    if suspect is not None:
        state.hold(Held(item.nodeid, item.location, reports))
        progress = item.config.pluginmanager.get_plugin("kernelgate-progress")
        if progress is not None:
            progress.held(item.nodeid, sum(r.duration for r in reports), suspect.why)
        return
    for report in reports:
        ihook.pytest_runtest_logreport(report=report)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def release(config: pytest.Config, state: State) -> None:
    """Log every held test's reports, the call report carrying the judge's verdict. A test the
    judge left without a verdict (a run cut short) keeps the outcome it had."""
    for held in state.take_held():
        verdict = state.verdicts.get(held.nodeid)
        for report in held.reports:
            if verdict is not None and report.when == "call":
                say(report, verdict)
            elif verdict is not None and report.when == "teardown":  # JUnit reads the last report's
                # the whole answer: a pass's flagged figures, base -> head, reach a CI's test panel too
                report.user_properties.append((SECTION, verdict.text))
            config.hook.pytest_runtest_logreport(report=report)
        config.hook.pytest_runtest_logfinish(nodeid=held.nodeid, location=held.location)


def say(report: pytest.TestReport, verdict: TestVerdict) -> None:
    """Put ``verdict`` into a call report: failed with its message, or passed with its answer
    attached. A call that failed on its own stays failed, the verdict beside its error."""
    if not verdict.failed:
        report.sections.append((SECTION, verdict.text))
        return
    if report.failed:
        report.sections.append((SECTION, verdict.text))
        return
    path, lineno, _ = report.location
    report.outcome = "failed"
    report.longrepr = VerdictRepr(verdict.text, CrashLine(path, (lineno or 0) + 1, verdict.headline))  # type: ignore[assignment]


# --- pytest-xdist: a worker's held reports travel to the controller ----------------------------------


def to_wire(config: pytest.Config, held: Sequence[Held]) -> list[dict[str, Any]]:
    """A worker's held tests as plain data (execnet carries no objects)."""
    hook = config.hook
    return [
        {
            "nodeid": h.nodeid,
            "location": list(h.location),
            "reports": [hook.pytest_report_to_serializable(config=config, report=r) for r in h.reports],
        }
        for h in held
    ]


def from_wire(config: pytest.Config, data: Sequence[Mapping[str, Any]]) -> list[Held]:
    """The controller's side of :func:`to_wire`."""
    hook = config.hook
    out = []
    for h in data:
        path, lineno, name = h["location"]
        reports = [hook.pytest_report_from_serializable(config=config, data=r) for r in h["reports"]]
        out.append(Held(str(h["nodeid"]), (str(path), lineno, str(name)), reports))
    return out
