"""Read a torch.profiler (Kineto) Chrome trace into typed records.

We read the exported trace rather than ``profiler.events()`` because only the trace carries the
launch facts of a kernel (grid, block, registers per thread, shared memory, est. occupancy).
"""

from __future__ import annotations

import bisect
import gzip
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelgate.measure.naming import module_of_range

RANGE_PREFIX = "kg/"
UNATTRIBUTED = "(unattributed)"  # work launched inside a step but outside every module range
STEP_PREFIX = "ProfilerStep#"
GPU_CATEGORIES = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver"}
# Runtime/driver calls that always put a kernel on the device (not cudaLaunchHostFunc, not graphs).
KERNEL_LAUNCH = re.compile(r"^cu(da)?Launch(Cooperative)?Kernel")
# Runtime/driver calls that make the host wait for the device (or copy synchronously): a new one in a
# layer is a structural change on the host side (``.item()``, ``.cpu()``, ``torch.cuda.synchronize()``)
SYNC_CALL = re.compile(
    r"^cu(da)?(Device|Stream|Event|Ctx)Synchronize|^cu(da)?Memcpy(?!.*Async)|^cudaMemcpyAsync$"
)


@dataclass(frozen=True)
class Launch:
    """Launch facts of one GPU kernel, as CUPTI reported them."""

    grid: tuple[int, ...]
    block: tuple[int, ...]
    registers: int
    shared_memory: int
    occupancy_pct: float


@dataclass(frozen=True)
class Activity:
    """One piece of device work: a GPU kernel/memcpy/memset, or a top-level CPU op in CPU mode.

    ``launch_ts`` is the host time at which it was issued (the launching runtime call for GPU
    work), on thread ``launch_tid``; ``None`` where the trace lost the link.
    """

    name: str
    kind: str
    start_us: float
    dur_us: float
    launch_tid: int | None
    launch_ts: float | None
    launch: Launch | None = None


@dataclass(frozen=True)
class Range:
    name: str
    tid: int
    start_us: float
    end_us: float


@dataclass(frozen=True)
class Call:
    """A host-side runtime/driver call that waits for the device or copies (:data:`SYNC_CALL`)."""

    name: str
    tid: int
    ts: float


@dataclass(frozen=True)
class Steps:
    """The profiler's steps (``ProfilerStep#N`` ranges) in time order: which iteration a host time is in."""

    starts: tuple[float, ...]
    ranges: tuple[Range, ...]

    @classmethod
    def of(cls, steps: tuple[Range, ...]) -> Steps:
        ordered = tuple(sorted(steps, key=lambda r: r.start_us))
        return cls(tuple(s.start_us for s in ordered), ordered)

    def __len__(self) -> int:
        return len(self.ranges)

    def iteration(self, ts: float) -> int | None:
        """The 0-based iteration whose step holds ``ts``; None outside every step."""
        pos = bisect.bisect_right(self.starts, ts) - 1
        if pos < 0 or ts > self.ranges[pos].end_us:
            return None
        return pos


@dataclass(frozen=True)
class ParsedTrace:
    activities: tuple[Activity, ...]
    ranges: tuple[Range, ...]
    steps: tuple[Range, ...]
    unlinked: int
    # Host times of kernel launches with no kernel record: the kernel ran, the profiler lost it.
    orphan_launches: tuple[float, ...] = ()
    syncs: tuple[Call, ...] = ()


def load_events(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise ValueError(f"{path}: not a Chrome trace (no 'traceEvents' list)")
    return events


def _launch_facts(args: Mapping[str, Any]) -> Launch | None:
    if "grid" not in args:
        return None
    return Launch(
        grid=tuple(int(v) for v in args.get("grid", ())),
        block=tuple(int(v) for v in args.get("block", ())),
        registers=int(args.get("registers per thread", 0)),
        shared_memory=int(args.get("shared memory", 0)),
        occupancy_pct=float(args.get("est. achieved occupancy %", 0.0)),
    )


def _complete(events: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    return (e for e in events if e.get("ph") == "X" and "ts" in e and "dur" in e)


def _ranges(events: list[Mapping[str, Any]], prefix: str, strip: bool) -> tuple[Range, ...]:
    return tuple(
        Range(
            name=module_of_range(str(e["name"])[len(prefix) :]) if strip else str(e["name"]),
            tid=int(e["tid"]),
            start_us=float(e["ts"]),
            end_us=float(e["ts"]) + float(e["dur"]),
        )
        for e in events
        if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith(prefix)
    )


def _parsed(
    activities: list[Activity],
    complete: list[Mapping[str, Any]],
    unlinked: int,
    orphans: tuple[float, ...] = (),
) -> ParsedTrace:
    syncs = tuple(
        Call(str(e["name"]), int(e["tid"]), float(e["ts"]))
        for e in complete
        if e.get("cat") in LAUNCH_CATEGORIES and SYNC_CALL.match(str(e.get("name", "")))
    )
    return ParsedTrace(
        activities=tuple(activities),
        ranges=_ranges(complete, RANGE_PREFIX, strip=True),
        steps=_ranges(complete, STEP_PREFIX, strip=False),
        unlinked=unlinked,
        orphan_launches=orphans,
        syncs=syncs,
    )


def parse_gpu(events: list[dict[str, Any]]) -> ParsedTrace:
    complete = list(_complete(events))
    launches: dict[int, tuple[int, float]] = {}
    for e in complete:
        if e.get("cat") in LAUNCH_CATEGORIES and "correlation" in e.get("args", {}):
            launches[int(e["args"]["correlation"])] = (int(e["tid"]), float(e["ts"]))
    activities = []
    unlinked = 0
    ran: set[int] = set()
    for e in complete:
        kind = GPU_CATEGORIES.get(str(e.get("cat")))
        if kind is None:
            continue
        args = e.get("args", {})
        correlation = int(args.get("correlation", -1))
        ran.add(correlation)
        link = launches.get(correlation)
        unlinked += link is None
        activities.append(
            Activity(
                name=str(e["name"]),
                kind=kind,
                start_us=float(e["ts"]),
                dur_us=float(e["dur"]),
                launch_tid=link[0] if link else None,
                launch_ts=link[1] if link else None,
                launch=_launch_facts(args),
            )
        )
    orphans = tuple(
        sorted(
            float(e["ts"])
            for e in complete
            if e.get("cat") in LAUNCH_CATEGORIES
            and KERNEL_LAUNCH.match(str(e.get("name", "")))
            and int(e.get("args", {}).get("correlation", -1)) not in ran
        )
    )
    return _parsed(activities, complete, unlinked, orphans)


def parse_cpu(events: list[dict[str, Any]]) -> ParsedTrace:
    """CPU mode: the activities are the outermost ``cpu_op`` events of each thread."""
    ops = sorted(
        (e for e in _complete(events) if e.get("cat") == "cpu_op"),
        key=lambda e: (int(e["tid"]), float(e["ts"]), -float(e["dur"])),
    )
    activities = []
    open_until: dict[int, float] = {}
    for e in ops:
        tid, ts, dur = int(e["tid"]), float(e["ts"]), float(e["dur"])
        if ts < open_until.get(tid, float("-inf")):
            continue  # nested inside an outer op already counted
        open_until[tid] = ts + dur
        activities.append(Activity(str(e["name"]), "cpu_op", ts, dur, tid, ts))
    return _parsed(activities, list(_complete(events)), unlinked=0)


def parse(path: Path, gpu: bool) -> ParsedTrace:
    events = load_events(path)
    return parse_gpu(events) if gpu else parse_cpu(events)


def innermost(ranges: list[Range], launches: list[tuple[float, int]]) -> dict[int, str]:
    """For launches (ts, index) on one thread, the innermost range open at ts (properly nested ranges)."""
    ordered = sorted(ranges, key=lambda r: (r.start_us, -r.end_us))
    stack: list[Range] = []
    found: dict[int, str] = {}
    pos = 0
    for ts, index in sorted(launches):
        while pos < len(ordered) and ordered[pos].start_us <= ts:
            while stack and stack[-1].end_us <= ordered[pos].start_us:
                stack.pop()
            stack.append(ordered[pos])
            pos += 1
        while stack and stack[-1].end_us < ts:
            stack.pop()
        if stack:
            found[index] = stack[-1].name
    return found
