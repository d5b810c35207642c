"""The plugin's command-line options and the gate configuration they make: ``[tool.kernelgate]`` of
the rootdir's pyproject.toml with the command line on top. Light: no torch."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from kernelgate import config as cfg

#: Each kernelgate option's pytest dest and default, filled by :func:`add`: any of them given turns
#: the plugin on (``given``).
DEFAULTS: dict[str, Any] = {}
#: Options that do not turn the plugin on: the switch that turns it off.
NOT_ENABLING = frozenset({"kernelgate_disable"})


def given(config: pytest.Config) -> bool:
    """Whether the command line names any ``--kernelgate*`` option (other than
    ``--kernelgate-disable``): a value other than its default, or the option itself written out
    (``--kernelgate-device auto``)."""
    for dest, default in DEFAULTS.items():
        if dest not in NOT_ENABLING and config.getoption(dest, default) != default:
            return True
    written = [a.split("=", 1)[0] for a in config.invocation_params.args if isinstance(a, str)]
    return any(a.startswith("--kernelgate") and a != "--kernelgate-disable" for a in written)


def load_config(config: pytest.Config) -> tuple[cfg.GateConfig, bool]:
    """``[tool.kernelgate]`` of the rootdir's pyproject.toml, then the command line on top."""
    gate, found = cfg.load_pyproject(Path(config.rootpath) / "pyproject.toml")
    opt = config.getoption
    updates: dict[str, Any] = {}
    for option, key in (
        ("kernelgate_threshold", "layer_threshold"),
        ("kernelgate_kernel_threshold", "kernel_threshold"),
        ("kernelgate_total_threshold", "total_threshold"),
    ):
        if opt(option) is not None:
            updates[key] = cfg.parse_fraction(opt(option), "--" + option.replace("_", "-"))
    if opt("kernelgate_floor_us") is not None:
        updates["floor_us"] = cfg.parse_floor(opt("kernelgate_floor_us"), "--kernelgate-floor-us")
    if opt("kernelgate_baseline_dir"):
        updates["baseline_dir"] = Path(opt("kernelgate_baseline_dir")).resolve()
    if opt("kernelgate_missing_baseline"):
        updates["missing_baseline"] = cfg.MissingBaseline(opt("kernelgate_missing_baseline"))
    if opt("kernelgate_no_confirm"):
        updates["confirm"] = False
    if opt("kernelgate_base"):
        updates["base"] = opt("kernelgate_base")
    for option in ("on_unreliable", "on_nothing_compared", "on_inconclusive"):
        if opt("kernelgate_" + option):
            updates[option] = cfg.Policy(opt("kernelgate_" + option))
    rules = tuple(cfg.parse_cli_rule(r) for r in opt("kernelgate_rule"))
    updates["rules"] = gate.rules + rules
    return dataclasses.replace(gate, **updates), found


def slow_layer(text: str | None) -> tuple[str | None, int]:
    if not text:
        return None, 1
    name, _, runs = text.partition(":")
    if runs and not (runs.isdigit() and int(runs) > 0):
        raise pytest.UsageError(
            f"--kernelgate-slow-layer {text!r}: N must be a whole number above 0, e.g. model.10:2"
        )
    return name, int(runs or 1)


def check_save(save: bool, replace_unreadable: bool, keep_round: str | None) -> None:
    """The options that only shape a save come with ``--kernelgate-save``; a kept round says why."""
    if replace_unreadable and not save:
        raise pytest.UsageError(
            "--kernelgate-replace-unreadable replaces an unreadable baseline when saving: use it with "
            "--kernelgate-save"
        )
    if keep_round is not None and not save:
        raise pytest.UsageError(
            "--kernelgate-keep-round keeps a disagreeing round of a baseline being saved: use it with "
            "--kernelgate-save --kernelgate-append"
        )
    if keep_round is not None and not keep_round.strip():
        raise pytest.UsageError(
            "--kernelgate-keep-round needs the reason the round differs, e.g. "
            "--kernelgate-keep-round 'cuDNN picks another algorithm in one process of three'"
        )


def add(parser: pytest.Parser) -> None:
    """Add the kernelgate group of options (``pytest --help``)."""
    group = parser.getgroup("kernelgate", "kernelgate: per-layer CUDA kernel regression gate")

    def add(*names: str, **attrs: Any) -> None:
        group.addoption(*names, **attrs)
        dest = attrs.get("dest", names[0].lstrip("-").replace("-", "_"))
        default = attrs.get("default", False if attrs.get("action") == "store_true" else None)
        DEFAULTS[dest] = default

    add("--kernelgate", action="store_true", help="enable kernelgate without a [tool.kernelgate] table")
    add("--kernelgate-disable", action="store_true", help="turn kernelgate off for this run")
    add("--kernelgate-save", action="store_true", help="record baselines/<arch>/ instead of comparing")
    add(
        "--kernelgate-append",
        action="store_true",
        help="with --kernelgate-save: add this run as one more round to the baseline instead of replacing it",
    )
    add(
        "--kernelgate-replace-unreadable",
        action="store_true",
        help="with --kernelgate-save: replace a baseline file that cannot be read (corrupt, another "
        "architecture's) by the benchmarks of this run; refused without it",
    )
    add(
        "--kernelgate-keep-round",
        metavar="REASON",
        help="with --kernelgate-save --kernelgate-append: keep a round that disagrees with the others "
        "beyond round_tolerance, stating why (stored in the baseline entry)",
    )
    add(
        "--kernelgate-no-confirm",
        action="store_true",
        help="decide by the stored baseline alone, without measuring base and head on this runner "
        "(only sound on the host that recorded the baseline)",
    )
    add(
        "--kernelgate-base",
        metavar="REF",
        help="the git ref the same-host judge measures as the base (default: auto = the merge base of HEAD "
        "with the pull request's base branch or origin/main)",
    )
    add(
        "--kernelgate-on-inconclusive",
        choices=["fail", "warn"],
        help="a suspect the same-host judge could not settle: fail the run (default) or warn",
    )
    add("--kernelgate-confirm-out", metavar="PATH", help=argparse.SUPPRESS)
    add("--kernelgate-standby", metavar="PATH", help=argparse.SUPPRESS)  # plugin/standby.py
    add("--kernelgate-baseline-dir", metavar="DIR", help="baseline folder (default: baselines)")
    add("--kernelgate-threshold", metavar="PCT", help="layer threshold, e.g. 10%%")
    add("--kernelgate-kernel-threshold", metavar="PCT", help="kernel threshold, e.g. 25%%")
    add("--kernelgate-total-threshold", metavar="PCT", help="total GPU time threshold, e.g. 5%%")
    add("--kernelgate-floor-us", metavar="US", help="absolute floor: smaller changes never fail")
    add(
        "--kernelgate-rule",
        action="append",
        default=[],
        metavar="BENCH:NAME=PCT",
        help="threshold for matching benchmarks/layers/kernels (globs), e.g. 'yolov8n*:model.22*=15%%'",
    )
    add(
        "--kernelgate-missing-baseline",
        choices=["fail", "warn"],
        help="no baseline for a benchmark: fail or warn",
    )
    add(
        "--kernelgate-on-unreliable",
        choices=["fail", "warn"],
        help="a profile that dropped events (measured twice): fail or warn; never compared",
    )
    add(
        "--kernelgate-on-nothing-compared",
        choices=["fail", "warn"],
        help="benchmarks ran but none was compared (or saved): fail the run or warn",
    )
    add(
        "--kernelgate-trust-pt",
        action="store_true",
        help="allow kernelgate.checkpoint() to unpickle .pt files (runs code from them; trusted files only)",
    )
    add(
        "--kernelgate-device",
        choices=["auto", "cpu", "cuda"],
        default="auto",
        help="where to run (default auto)",
    )
    add(
        "--kernelgate-slow-layer",
        metavar="MODULE[:N]",
        help="deliberately run MODULE's forward N extra times (default 1), to check that the gate catches it",
    )
    add(
        "--kernelgate-iterations",
        type=int,
        metavar="N",
        help="profiled steps per benchmark (a GPU's 4 placements take turns: N/4 iterations, rounded up)",
    )
    add(
        "--kernelgate-matrix",
        metavar="SET",
        help="configuration set of [tool.kernelgate.matrix] to run (default: its gpu/cpu choice), e.g. full",
    )
    add(
        "--kernelgate-only",
        action="append",
        default=[],
        metavar="AXIS=V[,V]",
        help="run only the configurations with these values, e.g. mode=graph or model=yolov8n,yolo11n",
    )
    add(
        "--kernelgate-allow-other-gpu",
        action="store_true",
        help="compare with a baseline recorded on another GPU of the same architecture (refused by default)",
    )
    add(
        "--kernelgate-out",
        metavar="DIR",
        default=".kernelgate",
        help="traces and last results (default .kernelgate)",
    )
    add(
        "--kernelgate-report-dir",
        metavar="DIR",
        default=".kernelgate/report",
        help="where report.md, report.html, report.json and traces go (default .kernelgate/report)",
    )
    add(
        "--kernelgate-redact",
        action="store_true",
        help="hash layer and kernel names in the report folder (the terminal keeps the real names)",
    )
    add(
        "--kernelgate-history",
        metavar="DIR",
        help="older baseline files (*.json, labelled by file name) for the per-layer history plot",
    )
