"""A pytest-xdist run: each worker's measurements and verdicts travel to the controller, which writes.

A worker writes no results file, baseline or report. At the end of its session it puts what it
measured and decided into ``config.workeroutput`` (:func:`send`); the controller takes each worker's
share as the worker goes down (``pytest_testnodedown``: :func:`receive`) and, once all are down, puts
the lists back in the order of collection (:func:`settle`). The controller then writes the results
file, the baseline (``--kernelgate-save``) and the report folder, and prints the summary, exactly as
a run without xdist does; it never imports torch.

What travels is JSON text (execnet carries only plain types): baseline entries as
:meth:`kernelgate.baseline.Entry.to_json` (the measurement as a baseline file holds it, rounded to
0.001 µs), comparisons as :meth:`kernelgate.compare.Comparison.to_json` (every verdict as the worker
decided it, confirm runs included: nothing is recomputed), and the session's lists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelgate.baseline import Entry
from kernelgate.compare import Comparison

if TYPE_CHECKING:
    from kernelgate.session import State

KEY = "kernelgate"  # in config.workeroutput
SCHEMA_VERSION = 1
LISTS = ("missing", "unreliable", "skipped", "notes", "errors")
_WORKER_ID = re.compile(r"\bgw\d+\b")


def send(state: State) -> str:
    """What this worker measured and decided, for the controller."""
    fullnames = {e.fullname for e in state.measured}
    baselines = {
        str(path): [e.to_json() for name, e in entries.items() if name in fullnames]
        for path, entries in state.baselines.items()
    }
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "gate_tests": list(state.gate_tests),
        "measured": [e.to_json() for e in state.measured],
        "comparisons": [c.to_json() for c in state.comparisons],
        "baselines": {path: entries for path, entries in baselines.items() if entries},
    }
    document.update({name: list(getattr(state, name)) for name in LISTS})
    return json.dumps(document, default=str)


def receive(state: State, text: str | None, worker: str, error: object | None = None) -> None:
    """Add one worker's share to the controller's state; a worker that went down without sending
    one (it crashed) is named in an error, since what it measured is lost."""
    if text is None:
        if error is not None:
            lines = [line.strip() for line in str(error).splitlines() if line.strip()]
            cause = _WORKER_ID.sub("gwN", lines[-1] if lines else "no reason given")
            message = (
                f"kernelgate: pytest-xdist worker(s) went down before sending their measurements ({cause}): "
                "what they measured is missing from the results and the report. Fix the cause above and "
                "rerun; to see a crash in full, run without -n."
            )
            if message not in state.errors:  # workers that xdist restarts fail alike: say it once
                state.errors.append(message)
        return
    data = json.loads(text)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"worker {worker} sent kernelgate data of schema {data.get('schema_version')!r}, the controller "
            f"reads {SCHEMA_VERSION}: the worker and the controller run different kernelgate versions"
        )
    state.gate_tests += [t for t in data["gate_tests"] if t not in state.gate_tests]
    state.measured += [Entry.from_json(e) for e in data["measured"]]
    state.comparisons += [Comparison.from_json(c) for c in data["comparisons"]]
    for path, entries in data["baselines"].items():
        known = state.baselines.setdefault(Path(path), {})
        known.update({e.fullname: e for e in map(Entry.from_json, entries)})
    for name in LISTS:
        getattr(state, name).extend(data[name])


def settle(state: State) -> None:
    """Put the lists received from the workers in the order pytest collected the tests (a run
    without xdist has them in that order); ties keep the order of arrival."""
    order = {nodeid: i for i, nodeid in enumerate(state.gate_tests)}
    last = len(order)
    node_of = {e.measurement.benchmark: e.fullname for e in state.measured}

    def by_benchmark(names: Iterable[str]) -> list[str]:
        return sorted(names, key=lambda name: order.get(node_of.get(name, ""), last))

    state.measured.sort(key=lambda e: order.get(e.fullname, last))
    state.comparisons.sort(key=lambda c: order.get(node_of.get(c.benchmark, ""), last))
    state.missing[:] = by_benchmark(state.missing)
    state.unreliable[:] = by_benchmark(state.unreliable)
    state.skipped.sort(key=lambda nodeid: order.get(nodeid, last))
