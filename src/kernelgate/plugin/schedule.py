"""pytest-xdist: hand out the longest benchmarks first, so that the workers (one per GPU) finish together.

xdist's ``load`` scheduler sends the tests in collection order, in chunks: the two cold starts of
``benchmarks/`` (14 s each on the H200, the longest) land on one worker, and a worker may be given
a run of tests while another waits with nothing. :class:`LongestFirst` sorts the tests by
:func:`expected_seconds` (longest first, ties in collection order), deals the first ones out round
robin, and then gives a worker its next test only as it finishes one, keeping each worker's queue at
the two tests xdist's worker needs (the one it runs and the next). That is the longest-processing-
time-first rule: with independent tests on identical workers its wall time is at most 4/3 of the
best possible.

The expected times are per kind of benchmark, measured on the H200 (docs/matrix.md and docs/fleet.md,
pytest ``--durations`` of the suite; only their order matters): a cold start runs four fresh
processes; the first torch.compile of a process pays inductor's start-up; a model of the large
families profiles about three times the kernels of a nano model. A test that is no kernelgate
benchmark counts as one second.

Only the controller imports this module, and only when pytest-xdist asks for a scheduler.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

from kernelgate.models.matrix import model_name

COLDSTART_S = 14.0  # benchmarks/test_coldstart.py, one scenario: a priming and three timed processes
# ... of a torch.compile configuration: estimated from an H100's first calls (yolov8n fp16, about a
# minute with empty Inductor/Triton caches, 20 s with warm ones), four processes; not measured here
COLDSTART_COMPILE_S = 200.0
PROBE_S = 10.0  # the PTX probe, one scenario: nvcc, then four processes of about 2 s of JIT (estimated)
COMPILE_S = 9.0  # a torch.compile configuration (32 s for the first of a process, 8-11 s after)
CONFIGURATION_S = 2.0  # an eager, graph or pipeline configuration of a nano model (1.2-4.9 s)
OTHER_S = 1.0
LARGE = 3.0  # rtdetr-l, and the s/m/l/x sizes: about 3x the kernels of a nano model
QUEUE = 2  # an xdist worker runs a test once it knows the next one (or that none follows)

_PARAMS = re.compile(r"\[(?P<id>[^\]]*)\]$")
_LARGE_MODEL = re.compile(r"rtdetr-.*|yolo(v\d+|\d+)[smlx]")


def expected_seconds(nodeid: str) -> float:
    """How long the test ``nodeid`` is expected to run, from its name and its configuration id."""
    match = _PARAMS.search(nodeid)
    case = match["id"] if match else ""
    if "coldstart" in nodeid.split("::")[-1]:
        return COLDSTART_COMPILE_S if "compile" in case.split("-") else COLDSTART_S
    if "ptx_probe" in nodeid.split("::")[-1]:
        return PROBE_S
    model = model_name(case)  # None: no configuration id of the matrix
    if model is None:
        return OTHER_S
    seconds = COMPILE_S if "compile" in case.split("-") else CONFIGURATION_S
    return seconds * (LARGE if _LARGE_MODEL.fullmatch(model) else 1.0)


def longest_first(collection: Sequence[str]) -> list[int]:
    """Indices of ``collection`` by expected time, longest first; ties keep the collection order."""
    return sorted(range(len(collection)), key=lambda i: -expected_seconds(collection[i]))


class LongestFirst(LoadScheduling):  # type: ignore[misc]
    """xdist's load scheduling, with the pending tests in longest-first order and a queue of two
    tests per worker (xdist's own refills a worker with up to half of its share of what is left)."""

    collection: list[str] | None
    pending: list[int]

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:
            for node in self.nodes:
                self.check_schedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        collection: list[str] = list(next(iter(self.node2collection.values())))
        self.collection = collection
        self.pending[:] = longest_first(collection)
        for _ in range(QUEUE):  # round robin: the longest tests go to different workers
            for node in self.nodes:
                if self.pending:
                    self._send_tests(node, 1)
        if not self.pending:
            for node in self.nodes:
                node.shutdown()

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        if node.shutting_down:
            return
        if self.pending:
            missing = QUEUE - len(self.node2pending[node])
            if missing > 0:
                self._send_tests(node, missing)
        else:
            node.shutdown()
