"""CUDA-graph replays get their layers from an eager pass (synthetic profiles)."""

from __future__ import annotations

import pandas as pd
import pytest

from kernelgate.measure.attribute import COLUMNS, UNATTRIBUTED
from kernelgate.measure.graphs import MAX_UNMATCHED, label_replay, unmatched_reason


def _frame(iterations: list[list[tuple[str, str, float]]], kind: str = "kernel") -> pd.DataFrame:
    rows = []
    for it, kernels in enumerate(iterations):
        t = 1000.0 * it
        for layer, kernel, dur in kernels:
            module = layer if layer == UNATTRIBUTED else layer + ".conv"
            kind_of = "Conv" if layer != UNATTRIBUTED else ""
            rows.append([it, layer, kind_of, module, kernel, kind, t, dur, "", "", 0, 0, 0.0])
            t += dur + 1
    return pd.DataFrame(rows, columns=COLUMNS)


EAGER = [
    ("model.0", "conv_a", 5.0),
    ("model.0", "silu", 1.0),
    ("model.1", "conv_b", 7.0),
    ("model.1", "silu", 1.0),
]


def _replay(names: list[tuple[str, float]], iterations: int = 2) -> pd.DataFrame:
    return _frame([[(UNATTRIBUTED, n, d) for n, d in names] for _ in range(iterations)])


def test_replayed_kernels_take_the_layers_of_the_eager_sequence() -> None:
    replay = _replay([(k, d * 0.8) for _, k, d in EAGER])
    labelled, share = label_replay(replay, _frame([EAGER, EAGER]))
    assert share == 0.0
    assert list(labelled["layer"]) == ["model.0", "model.0", "model.1", "model.1"] * 2
    assert list(labelled["module"])[:2] == ["model.0.conv", "model.0.conv"]
    # the replay's own times are kept: totals come from the replay, never from the eager pass
    assert labelled["dur_us"].sum() == pytest.approx(replay["dur_us"].sum())
    # the second "silu" goes to model.1, by position, although the name occurs twice
    assert labelled.iloc[3]["layer"] == "model.1"


def test_a_kernel_the_eager_pass_did_not_run_stays_unattributed_and_is_counted() -> None:
    names = [("conv_a", 5.0), ("silu", 1.0), ("conv_b_other_algo", 7.0), ("silu", 1.0)]
    labelled, share = label_replay(_replay(names), _frame([EAGER]))
    assert list(labelled["layer"][:4]) == ["model.0", "model.0", UNATTRIBUTED, "model.1"]
    assert share == pytest.approx(7.0 / 14.0)
    reason = unmatched_reason(share)
    assert reason is not None and "50.0 % of the CUDA-graph replay's kernel time matched no kernel" in reason
    assert unmatched_reason(MAX_UNMATCHED) is None


def test_work_outside_the_graph_keeps_its_own_layer() -> None:
    replay = pd.concat(
        [_replay([(k, d) for _, k, d in EAGER], 1), _frame([[("input", "memcpy", 2.0)]], "memcpy")]
    )
    labelled, share = label_replay(replay.reset_index(drop=True), _frame([EAGER]))
    assert share == 0.0
    assert labelled[labelled["kind"] == "memcpy"]["layer"].tolist() == ["input"]
