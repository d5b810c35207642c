"""One table of result files for docs: per benchmark, the time per layer group and where the time goes.

Rows are benchmarks (``yolov8n-fp16-bs1-640-graph``), columns the layer groups of
:mod:`kernelgate.models.groups` (backbone, neck, head, preprocess, NMS; ``model`` and ``other`` where a
benchmark has them), the total, and wall = busy + host with the busy share and what bounds the
forward (:mod:`kernelgate.measure.timesplit`). Times are medians in µs. Built as a pandas DataFrame and
rendered as a rich table (terminal), GitHub Markdown or CSV. Markdown is written here, not with
``DataFrame.to_markdown``: that needs ``tabulate``, which kernelgate does not depend on for one table.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelgate.measure import grouped, timesplit
from kernelgate.models import groups
from kernelgate.report.labels import DASH

if TYPE_CHECKING:
    import pandas as pd

    from kernelgate.measure.results import Measurement

ALWAYS = (groups.BACKBONE, groups.NECK, groups.HEAD, groups.PREPROCESS, groups.NMS)
TIMES = ("total", "busy", "wall", "host")
SHARE, BOUND, ARCH, FILE = "busy %", "bound", "arch", "file"
INDEX = "benchmark"
UNRELIABLE = " (unreliable)"

NOTE = (
    "Medians in µs over the profiled iterations (wall: pytest-benchmark's rounds). A group's time is "
    "the sum of its layers' kernel time; total is the sum of all kernel time, busy the time the GPU "
    "ran anything (overlaps counted once), host = wall - busy. Bound: busy below "
    f"{100 * timesplit.LAUNCH_BOUND_BELOW:.0f} % of wall is launch-bound, from "
    f"{100 * timesplit.DEVICE_BOUND_FROM:.0f} % GPU-bound, mixed between; busy > wall where the "
    "profiled forwards ran slower than the timed ones."
)
CPU_NOTE = (
    "On CPU rows (device cpu) the times are of CPU operators, not kernels: busy is the time CPU ops "
    "ran, host the framework time between them; bound reads overhead-bound, mixed, op-bound."
)


def frame(measurements: Sequence[Measurement], sources: Sequence[str] = ()) -> pd.DataFrame:
    """The table, numbers as numbers (NaN where a benchmark has no such group or no wall time).

    ``sources`` (one per measurement: the file it came from) is kept as column ``file``, shown
    where one benchmark of one architecture comes from more than one file.
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for i, m in enumerate(measurements):
        row: dict[str, Any] = {INDEX: m.benchmark + ("" if m.reliable else UNRELIABLE), ARCH: m.arch}
        row |= {FILE: sources[i] if i < len(sources) else "", "device": m.device}
        row |= {name: dist.median for name, dist in grouped.group_times(m).items()}
        split = timesplit.split(m)
        row |= {"total": m.total.median, "busy": m.busy.median}
        if split is not None:
            row |= {"wall": split.wall_us} | ({"host": split.host_us} if split.split else {})
            row |= {SHARE: 100 * split.busy_share, BOUND: split.label}
        rows.append(row)
    table = pd.DataFrame(rows)
    present = groups.ordered(set(table.columns) - {INDEX, ARCH, FILE, "device", *TIMES, SHARE, BOUND})
    extra = [g for g in present if g not in ALWAYS]
    return table.reindex(columns=[INDEX, ARCH, FILE, "device", *ALWAYS, *extra, *TIMES, SHARE, BOUND])


def short_names(paths: Sequence[str]) -> list[str]:
    """The result files as shown in column ``file``: relative to the folder they share, so that a
    deep checkout path (``/home/runner/work/...``) does not push the names out of a terminal."""
    distinct = sorted(set(paths))
    if len(distinct) < 2:
        return [Path(p).name for p in paths]
    common = os.path.commonpath([os.path.abspath(p) for p in distinct])
    return [os.path.relpath(os.path.abspath(p), common) for p in paths]


def _cell(column: str, value: Any) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return DASH
        return f"{value:.0f} %" if column == SHARE else f"{value:.1f}"
    return DASH if value is None else str(value)


def _shown(table: pd.DataFrame) -> tuple[list[str], list[list[str]], list[bool]]:
    """Header, rows of cells and which columns are numbers: ``arch`` only when there are several,
    ``file`` only when a benchmark of one architecture comes from several files."""
    hidden = {"device"}
    if table[ARCH].nunique() < 2:
        hidden.add(ARCH)
    if not table.duplicated([INDEX, ARCH]).any():
        hidden.add(FILE)
    header = [c for c in table.columns if c not in hidden]
    rows = [[_cell(c, value) for c, value in zip(header, row, strict=True)] for row in table[header].values]
    numeric = [c not in {INDEX, ARCH, FILE, BOUND} for c in header]
    return header, rows, numeric


def notes(table: pd.DataFrame) -> list[str]:
    return [NOTE] + ([CPU_NOTE] if (table["device"] == "cpu").any() else [])


def to_markdown(table: pd.DataFrame) -> str:
    header, rows, numeric = _shown(table)

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [line(header), "|" + "|".join("--:" if n else "---" for n in numeric) + "|"]
    out += [line(r) for r in rows]
    return "\n".join([*out, "", *notes(table)]) + "\n"


def to_text(table: pd.DataFrame, width: int = 200) -> str:
    from rich.console import Console
    from rich.table import Table

    header, rows, numeric = _shown(table)
    shown = Table()
    for name, number in zip(header, numeric, strict=True):
        shown.add_column(name, justify="right" if number else "left", overflow="fold")
    for row in rows:
        shown.add_row(*row)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=False, color_system=None)
    console.print(shown)
    for note in notes(table):
        console.print(note, soft_wrap=True)
    return buffer.getvalue()


def to_csv(table: pd.DataFrame) -> str:
    return str(table.round(3).to_csv(index=False))
