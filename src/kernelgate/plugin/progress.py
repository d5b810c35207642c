"""A line per finished gate test while a run of several goes on (``kernelgate [3/36] test_yolo[...]:
pass in 12.3 s (41 s so far)``): a long run, such as the nightly matrix, shows where it is before
its end. Printed by the process that prints the summary (pytest-xdist's controller); ``-q`` turns it
off; plain text, coloured only where pytest colours (a terminal, ``--color=yes``)."""

from __future__ import annotations

import time

import pytest

from kernelgate.plugin.session import STATE_KEY, State


class Progress:
    """Registered by ``pytest_configure`` when the plugin is enabled."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.start = time.monotonic()
        self.done: set[str] = set()
        # each gate test's number, given when it ends: a suspect's when its test ends and it is held,
        # kept for its line after the judge
        self.numbers: dict[str, int] = {}

    @pytest.hookimpl(trylast=True)  # after pytest's own dot or PASSED
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.config.stash.get(STATE_KEY, None)
        if state is None:
            return
        # in-process the state knows the gate tests; pytest-xdist's controller collects nothing
        # and learns it from each report (a worker marks its gate tests, with its count of them)
        marked = getattr(report, "kernelgate_gate", None)
        total = len(state.gate_tests) if state.gate_tests else marked
        if not total or total < 2 or (report.nodeid not in state.gate_tests and marked is None):
            return
        finished = report.when == "call" or (report.when == "setup" and not report.passed)
        if not finished or report.nodeid in self.done or self.config.get_verbosity() < 0:
            return
        self.done.add(report.nodeid)
        self._write(
            self._number(report.nodeid),
            total,
            report.nodeid,
            report.duration,
            outcome(state, report),
            report.failed,
        )

    def held(self, nodeid: str, seconds: float, why: str) -> None:
        """A suspect's test ended; its outcome waits for the judge (kernelgate.plugin.outcome)."""
        state = self.config.stash.get(STATE_KEY, None)
        if state is None or len(state.gate_tests) < 2 or self.config.get_verbosity() < 0:
            return
        decided = state.early.get(nodeid)  # a cold start judged at its own test's time
        when = f": {decided.outcome.value}" if decided is not None else " after the last test"
        said = f"suspect{': ' + why if why else ''}; judged on this runner{when}"
        self._write(self._number(nodeid), len(state.gate_tests), nodeid, seconds, said, False)

    def _number(self, nodeid: str) -> int:
        return self.numbers.setdefault(nodeid, len(self.numbers) + 1)

    def _write(self, done: int, total: int, nodeid: str, seconds: float, verdict: str, failed: bool) -> None:
        from kernelgate.report.terminal import progress_line

        line = progress_line(
            done, total, nodeid.split("::")[-1], seconds, time.monotonic() - self.start, verdict
        )
        writer = self.config.pluginmanager.get_plugin("terminalreporter")
        if writer is not None:
            markup = {"red": True} if failed else {"yellow": True} if verdict != "pass" else {}
            if getattr(getattr(writer, "_tw", None), "width_of_current_line", 0):
                writer.write("\n")  # after pytest's dots (write_line starts a new line only after a path)
            writer.write_line(line, **markup)


def outcome(state: State, report: pytest.TestReport) -> str:
    """What the gate made of a finished test, as far as this process knows it: under pytest-xdist
    the controller sees only the test's outcome until the workers are done."""
    if report.failed:
        return "FAILED"
    if report.skipped:
        return skipped(report)
    entry = next((e for e in reversed(state.measured) if e.fullname == report.nodeid), None)
    if entry is None:
        return "passed"  # a pytest-xdist worker measured it, or it measured nothing
    name = entry.measurement.benchmark
    if report.nodeid in state.verdicts:  # released after the judge: a failed verdict is failed above
        return "pass on this runner (same-host A/B)"
    suspect = next((s for s in state.suspects if s.nodeid == report.nodeid), None)
    if suspect is not None:
        why = f": {suspect.why}" if suspect.why else ""
        return f"suspect{why}; the same-host judge decides at the end"
    if name in state.missing:
        return "no baseline"
    if state.options.save:
        return "measured, to save"
    return "pass"


#: characters of a skip's reason a progress line shows (the whole reason: ``-rs``, the JUnit XML)
SKIP_SHOWN = 160


def skipped(report: pytest.TestReport) -> str:
    """A skipped test's progress verdict: "skipped" and the start of its reason, so that a run's
    output says why a benchmark measured nothing as it goes."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
    reason = str(reason).removeprefix("Skipped: ").strip()
    if not reason:
        return "skipped"
    return "skipped: " + (reason if len(reason) <= SKIP_SHOWN else reason[: SKIP_SHOWN - 1] + "…")
