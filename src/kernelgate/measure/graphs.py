"""Attribute the kernels of a CUDA-graph replay to the layers that launched them at capture.

A replay is one ``cudaGraphLaunch``: no Python forward runs, no ``kg/`` range is open, and the
profiler links every replayed kernel to that one launch. Two ways to get layers back: (1) record
the launches during capture, but CUPTI reports no kernel records (names) for captured launches,
only runtime calls; (2) profile an eager pass of the same model in the same process (same
shapes, same cuDNN choices as the capture that followed it) and match the replay's kernel
sequence against it, kernel name by kernel name. kernelgate does (2): a single-stream capture
replays its kernels in launch order, so the sequences match one to one; where they do not
(cuDNN chose another algorithm under capture), unmatched kernels stay ``(unattributed)`` and the
unmatched share is reported, so a poor match can never hide a regression: totals come from the
replay itself, never from the eager pass.
"""

from __future__ import annotations

from difflib import SequenceMatcher

import pandas as pd

from kernelgate.measure.attribute import UNATTRIBUTED

# Above this share of replayed kernel time left unmatched, the per-layer split is not trusted.
MAX_UNMATCHED = 0.05


def _kernels(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[(frame["kind"] == "kernel") & (frame["layer"] == UNATTRIBUTED)].sort_values("start_us")


def label_replay(replay: pd.DataFrame, reference: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """``replay`` with layer/type/module copied from the matching kernels of ``reference``.

    ``reference`` is an attributed eager profile; its first iteration is the template. Returns the
    relabelled frame and the share of replayed kernel time that found no match.
    """
    ref = reference[
        (reference["kind"] == "kernel") & (reference["iteration"] == reference["iteration"].min())
    ]
    ref = ref.sort_values("start_us")
    template = list(ref["kernel"])
    labels = ref[["layer", "layer_type", "module"]].to_numpy()
    out = replay.copy()
    rows: list[object] = []
    refs: list[int] = []
    for _, group in _kernels(out).groupby("iteration"):
        matcher = SequenceMatcher(None, template, list(group["kernel"]), autojunk=False)
        for block in matcher.get_matching_blocks():
            rows += list(group.index[block.b : block.b + block.size])
            refs += range(block.a, block.a + block.size)
    if rows:
        out.loc[rows, ["layer", "layer_type", "module"]] = labels[refs]
    total = float(_kernels(replay)["dur_us"].sum())
    unmatched = float(_kernels(out)["dur_us"].sum())
    return out, (unmatched / total if total > 0 else 0.0)


def unmatched_reason(share: float) -> str | None:
    """The unreliable-profile reason for a replay whose kernels matched the eager pass poorly."""
    if share <= MAX_UNMATCHED:
        return None
    return (
        f"{100 * share:.1f} % of the CUDA-graph replay's kernel time matched no kernel of the eager "
        f"pass (limit {100 * MAX_UNMATCHED:.0f} %): the capture ran other kernels than eager mode, so "
        "the per-layer split cannot be trusted"
    )
