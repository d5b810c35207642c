"""What a re-record changed, for its pull request: two baseline files compared figure by figure
(``kernelgate baseline diff OLD NEW``, and the baselines workflow's PR description).

Per configuration (benchmark id), each figure of :mod:`kernelgate.baseline.summary` (the total, each
layer, each cold-start phase) moved when its median changed by more than the gate would let it
(``max(threshold * before, floor)``, from ``[tool.kernelgate]``, rules included) and by more than the
round spread of either file: the rule of the gate without its significance test, which needs the
samples of both sides of one comparison, not of two recordings. The text says which figures moved,
from what to what, on which hosts each file was recorded and what software changed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from kernelgate.baseline.summary import Configuration, Figure, median
from kernelgate.config import GateConfig
from kernelgate.units import duration

SHOWN = 60  # moved figures listed per architecture; the rest are counted
BODY_LIMIT = 65_000  # GitHub refuses a pull request description over 65,536 characters


@dataclass(frozen=True)
class Move:
    """One figure of one configuration in both files."""

    benchmark: str
    before: Figure
    after: Figure
    limit_us: float  # how far the gate would let it move
    rel: float  # its relative threshold

    @property
    def delta_us(self) -> float:
        return self.after.median_us - self.before.median_us

    @property
    def delta_pct(self) -> float | None:
        return 100.0 * self.delta_us / self.before.median_us if self.before.median_us else None

    @property
    def noise_us(self) -> float:
        """The larger round spread of the two files, in µs."""
        spreads = [(f.spread_pct or 0.0) * f.median_us / 100.0 for f in (self.before, self.after)]
        return max(spreads)

    @property
    def moved(self) -> bool:
        return abs(self.delta_us) > max(self.limit_us, self.noise_us)


def moves(old: Configuration, new: Configuration, config: GateConfig) -> list[Move]:
    """Every figure that both files hold for one configuration, in the new file's order."""
    out = []
    for after in new.figures:
        before = old.figure(after.key)
        if before is None:
            continue
        threshold = config.threshold(new.arch, new.benchmark, after.scope, after.key)
        out.append(Move(new.benchmark, before, after, threshold.limit_us(before.median_us), threshold.rel))
    return out


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f} %"


def _software(old: Sequence[Configuration], new: Sequence[Configuration]) -> str:
    before = sorted({c.software for c in old})
    after = sorted({c.software for c in new})
    if before == after:
        return f"Software unchanged: {'; '.join(after) or 'unknown'}."
    return f"Software before: {'; '.join(before) or 'unknown'}. Now: {'; '.join(after) or 'unknown'}."


def _method(old: Sequence[Configuration], new: Sequence[Configuration]) -> list[str]:
    """A line where the files measured the configurations both hold in other numbers of placements."""
    before = {c.benchmark: c.placements for c in old}
    changed = sorted(
        {
            (before[c.benchmark], c.placements)
            for c in new
            if before.get(c.benchmark, c.placements) != c.placements
        }
    )
    if not changed:
        return []
    moves = ", ".join(f"{a} → {b}" for a, b in changed)
    return [
        f"Measured in other numbers of places of GPU memory ({moves}; kernelgate.measure.placement): a "
        "layer of four placements, averaged, read 2-4 % higher than of one on an H200, by the method, not "
        "the code.",
        "",
    ]


def _hosts(configs: Sequence[Configuration]) -> str:
    ids = sorted({c.host_ids for c in configs})
    return "; ".join(ids) or "none"


def _row(m: Move) -> str:
    spread = f"{m.before.spread} → {m.after.spread}"
    return (
        f"| {m.benchmark} | {m.after.label} | {median(m.before.median_us)} | {median(m.after.median_us)} | "
        f"{_pct(m.delta_pct)} ({duration(m.delta_us, signed=True)}) | {100 * m.rel:g} % | {spread} |"
    )


def render(
    arch: str,
    old: Sequence[Configuration],
    new: Sequence[Configuration],
    config: GateConfig,
    shown: int = SHOWN,
) -> str:
    """The Markdown of one architecture's re-record: the hosts and software of both files, the figures
    that moved (at most ``shown``; 0: all), the configurations added and removed, every total."""
    shown = shown or sys.maxsize
    before = {c.benchmark: c for c in old}
    after = {c.benchmark: c for c in new}
    common = [b for b in after if b in before]
    moved_by = {b: [m for m in moves(before[b], after[b], config) if m.moved] for b in common}
    changed = [b for b in common if moved_by[b]]
    added = [b for b in after if b not in before]
    removed = [b for b in before if b not in after]
    lines = [
        f"### kernelgate baselines: {arch}",
        "",
        f"Hosts of the new file: {_hosts(new)}; of the old one: {_hosts(old)}.",
        "",
        _software(old, new),
        "",
        *_method(old, new),
        f"**{len(changed)} of {len(common)} configuration(s) moved**: a figure whose median changed by more "
        "than its gate threshold and its round spread."
        + (f" New: {', '.join(added)}." if added else "")
        + (f" Gone: {', '.join(removed)}." if removed else ""),
        "",
    ]
    rows = [m for b in changed for m in moved_by[b]]
    if rows:
        lines += [
            "| configuration | figure | before | after | change | threshold | round spread before → after |",
            "|---|---|--:|--:|--:|--:|--:|",
            *(_row(m) for m in rows[:shown]),
        ]
        if len(rows) > shown:
            lines.append(
                f"\nand {len(rows) - shown} more figure(s): `kernelgate baseline diff --all` lists them."
            )
        lines.append("")
    totals = [
        "| configuration | total before | total after | change | hosts before → after |",
        "|---|--:|--:|--:|---|",
    ]
    for b in common:
        m = moves(before[b], after[b], config)[0]
        totals.append(
            f"| {b} | {median(m.before.median_us)} | {median(m.after.median_us)} | {_pct(m.delta_pct)} | "
            f"{before[b].host_ids} → {after[b].host_ids} |"
        )
    totals += [f"| {b} | — | {median(after[b].total.median_us)} | new | {after[b].host_ids} |" for b in added]
    lines += ["<details><summary>Every configuration's total</summary>", "", *totals, "", "</details>", ""]
    return "\n".join(lines)


def fit(parts: Sequence[str], limit: int = BODY_LIMIT) -> str:
    """Several architectures' texts as one description, cut with a note where it exceeds ``limit``."""
    text = "\n".join(parts)
    if len(text) <= limit:
        return text
    return (
        text[: limit - 120].rsplit("\n", 1)[0] + "\n\n_Cut to fit a pull request description: run "
        "`kernelgate baseline diff` for the rest._\n"
    )
