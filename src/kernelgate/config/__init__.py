"""Gate configuration, read by every stage of the flow (measure -> baseline -> verdict -> report):
``[tool.kernelgate]`` in pyproject.toml plus command-line overrides.

No torch here: the plugin reads this at start-up.
"""

from __future__ import annotations

import enum
import shlex
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

# the commands that messages print (re-exported: every module takes them from here)
from kernelgate.commands import TESTS as TESTS
from kernelgate.commands import append_command as append_command
from kernelgate.commands import default_target as default_target
from kernelgate.commands import node_target as node_target
from kernelgate.commands import record_command as record_command
from kernelgate.commands import record_rounds_command as record_rounds_command
from kernelgate.commands import selection as selection
from kernelgate.commands import use_tests as use_tests
from kernelgate.config.values import ConfigError as ConfigError
from kernelgate.config.values import parse_choice as parse_choice
from kernelgate.config.values import parse_floor as parse_floor
from kernelgate.config.values import parse_fraction as parse_fraction
from kernelgate.config.values import parse_ms as parse_ms


class Scope(enum.Enum):
    TOTAL = "total"
    LAYER = "layer"
    KERNEL = "kernel"
    PHASE = "phase"  # a phase of a cold start (kernelgate.coldstart.phases); own thresholds, see GateConfig
    HOST = "host"  # a layer's time on the host (kernelgate.measure.hosttime); own thresholds
    WALL = "wall"  # the end-to-end latency of a step (pytest-benchmark's rounds); own thresholds


class MissingBaseline(enum.Enum):
    FAIL = "fail"
    WARN = "warn"


class SideEnvs(enum.Enum):
    """Each side of the same-host A/B in its own environment (kernelgate.machine.sideenv)?"""

    AUTO = "auto"  # when the dependency files differ between base and head
    OFF = "off"
    ALWAYS = "always"


#: Globs, relative to the folder of pyproject.toml, of the files that decide a side's packages.
DEPENDENCY_FILES = (
    "pyproject.toml", "setup.py", "setup.cfg", "requirements*.txt", "requirements/*.txt", "constraints*.txt",
    "*.lock", "uv.lock", "poetry.lock", "Pipfile.lock", "environment.yml",
)  # fmt: skip
#: How a side's environment is installed: ``{python}`` is this interpreter, ``{target}`` the folder.
ENV_INSTALL = "{python} -m pip install --quiet --target {target} -r requirements.txt"


class Policy(enum.Enum):
    """What to do where the gate could not compare: fail the run (the default, for CI) or warn."""

    FAIL = "fail"
    WARN = "warn"


@dataclass(frozen=True)
class Threshold:
    """A change counts only when it is over ``rel`` (fraction) of the baseline AND over ``floor_us``."""

    rel: float
    floor_us: float

    def limit_us(self, baseline_us: float) -> float:
        return max(self.rel * baseline_us, self.floor_us)


@dataclass(frozen=True)
class Rule:
    """Overrides for matching (arch, benchmark, scope, name); glob patterns, the last match wins."""

    arch: str = "*"
    benchmark: str = "*"
    scope: str = "*"
    name: str = "*"
    threshold: float | None = None
    floor_us: float | None = None

    def matches(self, arch: str, benchmark: str, scope: Scope, name: str) -> bool:
        return (
            fnmatchcase(arch, self.arch)
            and fnmatchcase(benchmark, self.benchmark)
            and fnmatchcase(scope.value, self.scope)
            and fnmatchcase(name, self.name)
        )


# Layers whose time depends on the host more than on the GPU: the H2D copy of the input and the
# pipeline's CPU-side pre/post-processing (kernelgate.measure.stages names the stages). They have
# their own threshold (``host_threshold``) and are judged by the same-host A/B alone.
HOST_COUPLED = frozenset({"input", "preprocess", "postprocess"})


@dataclass(frozen=True)
class GateConfig:
    # Defaults from the sensitivity measurement on the H200 (docs/sensitivity.md).
    layer_threshold: float = 0.025
    # the host-coupled layers (HOST_COUPLED): on one H100 host the `input` copy of the same code moved
    # +11.5 % between two groups of 3 processes (docs/sensitivity.md), so 2.5 % would fail on noise
    host_threshold: float = 0.2
    kernel_threshold: float = 0.25
    total_threshold: float = 0.01
    floor_us: float = 0.5
    kernel_floor_us: float = 2.0
    rules: tuple[Rule, ...] = ()
    baseline_dir: Path = Path("baselines")
    missing_baseline: MissingBaseline = MissingBaseline.FAIL
    fail_on_new: bool = False
    fail_on_missing: bool = False
    alpha: float = 0.01
    confirm: bool = True
    on_unreliable: Policy = Policy.FAIL
    on_nothing_compared: Policy = Policy.FAIL
    coldstart_threshold: float = 0.25
    coldstart_floor_ms: float = 250.0
    # the host side (what the user waits for in a launch-bound forward is mostly host time): a layer's
    # host time, the end-to-end latency of a step, and whether a new wait for the device in a layer (a
    # synchronisation, a device-to-host copy) fails by itself. The thresholds sit well above the host
    # times' spread between processes of one host, below what a 0.2 ms sleep in a layer does
    # (docs/measurements.md, "Where the latency goes, and what is gated")
    host_layer_threshold: float = 0.5
    host_floor_us: float = 20.0
    wall_threshold: float = 0.1
    wall_floor_us: float = 50.0
    fail_on_sync: bool = True
    # torch's intra-op threads for every benchmark (kernelgate.machine.threads); None: from the run's
    # OMP_NUM_THREADS, else the CPUs the process may use (on a GPU, the host's CPUs shared among its
    # GPUs where the job was given some of them), never from whatever a library set on import
    threads: int | None = None
    # the same-host judge (kernelgate.verdict.samehost): what a suspect is measured against, how many
    # processes per side at least and at most, and whether a doubt fails the run (it does: a doubt
    # shown green is a regression let through; "warn" reports it and exits 0)
    base: str = "auto"
    confirm_min_rounds: int = 3
    confirm_max_rounds: int = 6
    on_inconclusive: Policy = Policy.FAIL
    # the screen suspects a benchmark at this fraction of its thresholds: a runner faster than the
    # baseline's host would otherwise hide a change just over the threshold from the judge
    screen: float = 0.5
    # how far a round of a baseline (a separate process, --kernelgate-append) may lie from the median
    # round (of two: the faster), and more than the figure's floor, before it counts as disagreeing:
    # refused when saved, and a baseline holding one is no yardstick (kernelgate.baseline.rounds)
    round_tolerance: float = 0.25
    # each side of the same-host A/B in its own environment when the dependency files differ
    side_envs: SideEnvs = SideEnvs.AUTO
    env_install: str = ENV_INSTALL
    dependency_files: tuple[str, ...] = DEPENDENCY_FILES

    def screening(self) -> GateConfig:
        """This configuration with the thresholds the screen applies (relative ones times ``screen``)."""
        return replace(self, _scale=self.screen * self._scale)

    _scale: float = 1.0

    def threshold(self, arch: str, benchmark: str, scope: Scope, name: str) -> Threshold:
        """The threshold of one figure. Cold-start phases (seconds, not microseconds) start from
        ``coldstart_threshold`` / ``coldstart_floor_ms`` and follow only rules with ``scope = "phase"``."""
        if scope is Scope.PHASE:
            rel, floor = self.coldstart_threshold, 1000.0 * self.coldstart_floor_ms
        else:
            rel = {
                Scope.TOTAL: self.total_threshold,
                Scope.LAYER: self.host_threshold if name in HOST_COUPLED else self.layer_threshold,
                Scope.KERNEL: self.kernel_threshold,
                Scope.HOST: self.host_layer_threshold,
                Scope.WALL: self.wall_threshold,
            }[scope]
            floor = {Scope.KERNEL: self.kernel_floor_us, Scope.HOST: self.host_floor_us,
                     Scope.WALL: self.wall_floor_us}.get(scope, self.floor_us)  # fmt: skip
            if scope in (Scope.HOST, Scope.WALL):  # never tighter than the device side: noisier
                device = self.layer_threshold if scope is Scope.HOST else self.total_threshold
                rel, floor = max(rel, device), max(floor, self.floor_us)
        for rule in self.rules:
            if scope is Scope.PHASE and rule.scope != Scope.PHASE.value:
                continue
            if rule.matches(arch, benchmark, scope, name):
                rel = rule.threshold if rule.threshold is not None else rel
                floor = rule.floor_us if rule.floor_us is not None else floor
        return Threshold(rel=rel * self._scale, floor_us=floor)


def parse_rule(raw: Mapping[str, Any], where: str) -> Rule:
    known = {"arch", "benchmark", "scope", "name", "threshold", "floor_us"}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} = {raw!r} must be a table ([[tool.kernelgate.rules]]).")
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; a rule takes {sorted(known)}.")
    for key in ("arch", "benchmark", "scope", "name"):
        if not isinstance(raw.get(key, "*"), str):
            raise ConfigError(f"{where}.{key} = {raw[key]!r} must be a string (a glob pattern).")
    scope = str(raw.get("scope", "*"))
    if scope != "*" and scope not in {s.value for s in Scope}:
        raise ConfigError(
            f"{where}: scope = {scope!r}; use 'total', 'layer', 'kernel', 'host', 'wall', "
            "'phase' (cold start) or '*'."
        )
    return Rule(
        arch=str(raw.get("arch", "*")),
        benchmark=str(raw.get("benchmark", "*")),
        scope=scope,
        name=str(raw.get("name", "*")),
        threshold=parse_fraction(raw["threshold"], f"{where}.threshold") if "threshold" in raw else None,
        floor_us=parse_floor(raw["floor_us"], f"{where}.floor_us") if "floor_us" in raw else None,
    )


def parse_cli_rule(text: str) -> Rule:
    """``BENCH_GLOB:LAYER_GLOB=THRESHOLD`` (e.g. ``yolov8n*:model.22*=15%``)."""
    target, sep, value = text.rpartition("=")
    if not sep or not target:
        raise ConfigError(
            f"--kernelgate-rule {text!r}: expected BENCHMARK_GLOB:NAME_GLOB=THRESHOLD, "
            "e.g. --kernelgate-rule 'yolov8n*:model.22*=15%'."
        )
    bench, _, name = target.partition(":")
    return Rule(
        benchmark=bench or "*", name=name or "*", threshold=parse_fraction(value, "--kernelgate-rule")
    )


_SIMPLE_KEYS = {
    "layer_threshold", "host_threshold", "kernel_threshold", "total_threshold", "floor_us", "kernel_floor_us",
    "baseline_dir", "missing_baseline", "fail_on_new", "fail_on_missing", "alpha", "confirm", "on_unreliable",
    "on_nothing_compared", "on_inconclusive", "base", "confirm_min_rounds", "confirm_max_rounds", "screen",
    "round_tolerance", "rules", "coldstart_threshold", "coldstart_floor_ms", "side_envs", "env_install",
    "dependency_files", "host_layer_threshold", "host_floor_us", "wall_threshold", "wall_floor_us",
    "fail_on_sync", "threads",
    "matrix",  # read by kernelgate.models.matrix
}  # fmt: skip


_FRACTIONS = ("layer_threshold", "host_threshold", "kernel_threshold", "total_threshold",
              "coldstart_threshold", "round_tolerance", "host_layer_threshold", "wall_threshold")  # fmt: skip
_FLOORS = ("floor_us", "kernel_floor_us", "host_floor_us", "wall_floor_us")
_VALUE_PARSERS: dict[str, Callable[[object, str], float]] = {
    **dict.fromkeys(_FRACTIONS, parse_fraction),
    **dict.fromkeys(_FLOORS, parse_floor),
    "coldstart_floor_ms": parse_ms,
}


def from_table(table: Mapping[str, Any], where: str, root: Path) -> GateConfig:
    unknown = sorted(set(table) - _SIMPLE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known keys are {sorted(_SIMPLE_KEYS)}.")
    cfg = GateConfig(baseline_dir=root / "baselines")
    updates: dict[str, Any] = {
        key: parse(table[key], f"{where}.{key}") for key, parse in _VALUE_PARSERS.items() if key in table
    }
    if "baseline_dir" in table:
        if not isinstance(table["baseline_dir"], str) or not table["baseline_dir"].strip():
            raise ConfigError(f"{where}.baseline_dir = {table['baseline_dir']!r} must be a folder path.")
        updates["baseline_dir"] = root / str(table["baseline_dir"])
    for key, kind in (("missing_baseline", MissingBaseline), ("side_envs", SideEnvs)):
        if key in table:
            updates[key] = parse_choice(kind, table[key], f"{where}.{key}")
    if "alpha" in table:
        alpha = parse_fraction(table["alpha"], f"{where}.alpha")
        if alpha >= 0.5:
            raise ConfigError(
                f"{where}.alpha = {table['alpha']!r}: a significance level must be under 0.5 (e.g. 0.01)."
            )
        updates["alpha"] = alpha
    for key in ("on_unreliable", "on_nothing_compared", "on_inconclusive"):
        if key in table:
            updates[key] = parse_choice(Policy, table[key], f"{where}.{key}")
    if "screen" in table:
        screen = parse_fraction(table["screen"], f"{where}.screen")
        if not 0 < screen <= 1:
            raise ConfigError(
                f"{where}.screen = {table['screen']!r} must be above 0 and at most 1 (e.g. 0.5)."
            )
        updates["screen"] = screen
    if "base" in table:
        if not isinstance(table["base"], str) or not table["base"].strip():
            raise ConfigError(
                f"{where}.base = {table['base']!r} must be a git ref (e.g. 'origin/main') or 'auto'."
            )
        updates["base"] = table["base"].strip()
    for key in ("confirm_min_rounds", "confirm_max_rounds"):
        if key in table:
            value = table[key]
            if not isinstance(value, int) or isinstance(value, bool) or not 2 <= value <= 50:
                raise ConfigError(
                    f"{where}.{key} = {value!r} must be a whole number from 2 to 50 (processes per side; "
                    "one per side cannot tell a process-level shift from a change)."
                )
            updates[key] = value
    if "threads" in table:
        value = table["threads"]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{where}.threads = {value!r} must be a whole number of threads, 1 or more.")
        updates["threads"] = value
    for key in ("fail_on_new", "fail_on_missing", "confirm", "fail_on_sync"):
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{where}.{key} = {table[key]!r} must be true or false.")
            updates[key] = table[key]
    rules = table.get("rules", [])
    if not isinstance(rules, list):
        raise ConfigError(f"{where}.rules must be an array of tables ([[tool.kernelgate.rules]]).")
    updates["rules"] = tuple(parse_rule(r, f"{where}.rules[{i}]") for i, r in enumerate(rules))
    updates.update(parse_install(table, where))
    done = replace(cfg, **updates)
    if done.confirm_min_rounds > done.confirm_max_rounds:
        raise ConfigError(
            f"{where}: confirm_min_rounds = {done.confirm_min_rounds} is above confirm_max_rounds = "
            f"{done.confirm_max_rounds}."
        )
    return done


def parse_install(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``env_install`` and ``dependency_files`` of ``table``, checked."""
    updates: dict[str, Any] = {}
    if "env_install" in table:
        value = table["env_install"]
        try:
            words = shlex.split(value) if isinstance(value, str) else []
        except ValueError:  # an unclosed quote
            words = []
        if not any("{target}" in word for word in words):
            raise ConfigError(
                f"{where}.env_install = {value!r} must be a command (run without a shell) that installs a "
                f"side's dependencies into the folder {{target}}, e.g. {ENV_INSTALL!r}."
            )
        updates["env_install"] = value
    if "dependency_files" in table:
        files = table["dependency_files"]
        if not isinstance(files, list) or not all(
            isinstance(f, str) and f.strip() and not f.startswith("/") and ".." not in f.split("/")
            for f in files
        ):
            raise ConfigError(
                f"{where}.dependency_files = {files!r} must be a list of globs relative to the folder of "
                'pyproject.toml, e.g. ["pyproject.toml", "requirements*.txt", "requirements/*.txt"].'
            )
        updates["dependency_files"] = tuple(files)
    return updates


def load_pyproject(path: Path) -> tuple[GateConfig, bool]:
    """The config in ``path`` and whether it had a ``[tool.kernelgate]`` table."""
    if not path.is_file():
        return GateConfig(baseline_dir=path.parent / "baselines"), False
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    table = data.get("tool", {}).get("kernelgate")
    if table is None:
        return GateConfig(baseline_dir=path.parent / "baselines"), False
    return from_table(table, f"{path}: [tool.kernelgate]", path.parent), True
