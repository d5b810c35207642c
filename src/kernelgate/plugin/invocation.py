"""The user's whole invocation, for every child pytest the gate starts (same-host A/B rounds).

A child must measure what the parent measured: the same ``-p`` plugins, ``-o`` ini overrides,
``-c``/``--rootdir``, conftest options, ``--kernelgate-*`` and ``--benchmark-*`` options, and the
environment pytest was started with (not what the head's conftest.py or imports set since:
:mod:`kernelgate.plugin.startenv`). Left out is only what selects tests or shapes the parent's own output and
files: the positional test paths, ``-k``/``-m``/``--deselect``/``--lf``/..., pytest-xdist, and the
options that save, report or write results (the child writes its own record for the parent).
For the base side, paths inside the head's checkout are mapped into the base's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

# options dropped with their value (``--opt VALUE``, ``--opt=VALUE``, ``-kVALUE``)
DROPPED_WITH_VALUE = frozenset(
    {
        "-k", "-m", "--deselect", "--maxfail", "--junitxml", "--junit-xml", "--junit-prefix",
        "--resultlog", "--result-log", "--log-file", "--durations", "--durations-min",
        "-n", "--numprocesses", "--maxprocesses", "--dist", "-d", "--tx", "--rsyncdir",
        "--max-worker-restart",
        "--kernelgate-out", "--kernelgate-confirm-out", "--kernelgate-standby", "--kernelgate-report-dir",
        "--kernelgate-history",
        "--kernelgate-keep-round",
        "--benchmark-save", "--benchmark-json", "--benchmark-compare", "--benchmark-compare-fail",
        "--benchmark-histogram", "--benchmark-cprofile", "--benchmark-storage", "--basetemp",
        "--html", "--json-report-file", "--cov", "--cov-report", "--last-failed-no-failures", "--lfnf",
    }
)  # fmt: skip
# flags dropped (no value)
DROPPED_FLAGS = frozenset(
    {
        "--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--sw", "--stepwise",
        "--sw-skip", "--stepwise-skip", "-x", "--exitfirst", "--pdb", "--trace", "--looponfail", "-f",
        "--kernelgate-save", "--kernelgate-append", "--kernelgate-replace-unreadable",
        "--benchmark-autosave", "--benchmark-only",
        "--benchmark-skip", "--collect-only", "--co", "--setup-only", "--setup-plan", "--json-report",
        "-q", "--quiet", "-v", "--verbose", "-s", "--capture=no",
    }
)  # fmt: skip
# options kept with their value: the value is never taken for a test path
KEPT_WITH_VALUE = frozenset(
    {
        "-p", "-o", "--override-ini", "-c", "--config-file", "-W", "--pythonwarnings", "--rootdir",
        "--confcutdir", "--import-mode", "--ignore", "--ignore-glob", "--deselect", "-r", "--tb",
        "--kernelgate-device", "--kernelgate-only", "--kernelgate-matrix", "--kernelgate-base",
        "--kernelgate-threshold", "--kernelgate-kernel-threshold", "--kernelgate-total-threshold",
        "--kernelgate-floor-us", "--kernelgate-rule", "--kernelgate-missing-baseline",
        "--kernelgate-on-unreliable", "--kernelgate-on-nothing-compared", "--kernelgate-on-inconclusive",
        "--kernelgate-slow-layer", "--kernelgate-iterations", "--kernelgate-baseline-dir",
        "--benchmark-min-rounds", "--benchmark-max-time", "--benchmark-min-time", "--benchmark-timer",
        "--benchmark-calibration-precision", "--benchmark-warmup-iterations", "--benchmark-sort",
        "--benchmark-group-by", "--benchmark-columns", "--benchmark-name",
    }
)  # fmt: skip
# short options whose value may be glued to them (``-kfoo``)
_SHORT_WITH_VALUE = ("-k", "-m", "-n", "-d")


def child_args(args: Sequence[str], selection: Sequence[str]) -> list[str]:
    """``args`` (``config.invocation_params.args``) without the test selection ``selection``
    (``config.option.file_or_dir``) and without the options listed above."""
    chosen = set(selection)
    out: list[str] = []
    skip_value = False
    keep_value = False
    for arg in args:
        if skip_value:
            skip_value = False
            continue
        if keep_value:
            keep_value = False
            out.append(arg)
            continue
        name = arg.split("=", 1)[0]
        if arg in KEPT_WITH_VALUE:
            keep_value = True
            out.append(arg)
            continue
        if arg in DROPPED_FLAGS or name in DROPPED_FLAGS:
            continue
        if name in DROPPED_WITH_VALUE:
            skip_value = "=" not in arg
            continue
        if any(arg.startswith(s) and len(arg) > 2 and not arg.startswith("--") for s in _SHORT_WITH_VALUE):
            continue
        if not arg.startswith("-") and arg in chosen:
            continue
        out.append(arg)
    return out


def mapped(args: Sequence[str], head: Path, base: Path) -> list[str]:
    """``args`` with every absolute path inside ``head`` (also as ``--opt=PATH``) moved into ``base``."""

    def move(text: str) -> str:
        path = Path(text)
        if not path.is_absolute():
            return text
        try:
            return str(base / path.relative_to(head))
        except ValueError:
            return text

    out = []
    for arg in args:
        if arg.startswith("-") and "=" in arg:
            name, value = arg.split("=", 1)
            out.append(f"{name}={move(value)}")
        else:
            out.append(move(arg))
    return out


def without(args: Sequence[str], option: str) -> list[str]:
    """``args`` without ``option`` and its value (``--opt VALUE`` or ``--opt=VALUE``)."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == option:
            skip = True
        elif not arg.startswith(option + "="):
            out.append(arg)
    return out
