"""Which regressed layer is the origin of a slowdown, and which layers only moved after it.

One layer that adds work moves the kernel times of the layers that run after it: measured on H100
hosts (docs/sensitivity.md) with one extra elementwise kernel in model.6, later layers were +2.5 …
+5 % base -> head while model.6 itself stayed under its threshold, in eager forwards and in CUDA-graph
replays alike (the new tensor moves every later allocation). Naming model.9 for a change in model.6
sends the reviewer to the wrong place. The signals, strongest first:

1. **A structural change in the layer** (:mod:`kernelgate.verdict.structure`): a kernel that every
   process of one side launches a whole number of times per forward and the other side does not,
   or launches as often with another grid (an added ``.add``, nearest -> bilinear, cuDNN off). The
   convolution and GEMM engines' own algorithm choices do not count. Each such layer that got
   slower is an origin, even under its own threshold: it is named only when the configuration
   fails anyway (some layer regressed).
2. Without one: **the first regressed layer in execution order**. A layer cannot move what ran
   before it, so the earliest regressed layer is the only one that cannot have been shifted by another.

The regressed layers that run after the first origin and are no origin themselves are marked as
possibly shifted by it. Attribution orders and annotates; whether the configuration fails is still
decided by the thresholds alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

FIRST_REGRESSED = "the first regressed layer in the forward (a change moves later layers only)"


@dataclass(frozen=True)
class Move:
    """One layer's move between two measurements, in the current side's execution order."""

    name: str
    delta_us: float
    regressed: bool  # over its threshold, significant and beyond the noise


@dataclass(frozen=True)
class Origin:
    layers: tuple[str, ...]  # the origins, the one with the most added time first
    why: Mapping[str, str]  # origin -> what points at it
    first: str  # the origin that runs first in the forward
    shifted: tuple[str, ...]  # regressed layers after ``first`` that are no origin themselves

    def note(self, layer: str) -> str:
        if layer in self.why:
            return f"origin: {self.why[layer]}"
        if layer in self.shifted:
            return f"after {self.first} in the forward: may be shifted by it (added work moves later layers)"
        return ""


def find(moves: Sequence[Move], structural: Mapping[str, str]) -> Origin | None:
    """The origin(s) among ``moves`` (in execution order), or None when fewer than two layers are
    involved (one regressed layer is its own origin: nothing to name)."""
    regressed = [m for m in moves if m.regressed]
    if not regressed:
        return None
    order = {m.name: i for i, m in enumerate(moves)}
    changed = [m for m in moves if m.name in structural and m.delta_us > 0]
    if changed:
        origins = sorted(changed, key=lambda m: -m.delta_us)
        why = {
            m.name: f"its kernel set changed in every process ({structural[m.name]}), {m.delta_us:+.1f} µs"
            for m in origins
        }
    else:
        origins = [regressed[0]]
        why = {regressed[0].name: FIRST_REGRESSED}
    if len({m.name for m in (*regressed, *origins)}) < 2:
        return None  # one layer: nothing to tell apart
    first = min(origins, key=lambda m: order[m.name])
    names = {m.name for m in origins}
    shifted = tuple(m.name for m in regressed if m.name not in names and order[m.name] > order[first.name])
    return Origin(tuple(m.name for m in origins), why, first.name, shifted)
