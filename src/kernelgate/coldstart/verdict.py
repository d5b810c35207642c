"""Gate cold starts: compare a :class:`~kernelgate.coldstart.phases.ColdStart` with its baseline,
phase by phase.

A cold-start benchmark is an entry of the same baseline file as the kernel benchmarks. Its
``extra_info.kernelgate`` holds the environment and the launch-to-steady-state time of each run (no
layers, no kernels), so every entry of the file reads the same way; its phases and runs are in
``extra_info.kernelgate_coldstart``. The verdicts are :mod:`kernelgate.verdict.compare`'s, with the
thresholds of :attr:`~kernelgate.config.Scope.PHASE` (``coldstart_threshold``, ``coldstart_floor_ms``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from kernelgate.coldstart.phases import PHASE_HELP, PHASES, TOTAL, ColdStart, explain
from kernelgate.coldstart.scenarios import SCENARIOS
from kernelgate.config import GateConfig, Scope, record_command
from kernelgate.machine import envdiff, software
from kernelgate.machine.fingerprint import HostFingerprint
from kernelgate.measure.results import Dist, Measurement
from kernelgate.report.terminal import _render, environment_lines
from kernelgate.units import duration, limit
from kernelgate.verdict.compare import Comparison, Delta, Judge, Verdict, fail_set, median_rule

if TYPE_CHECKING:
    from kernelgate.baseline.reading import Entry

EXTRA_KEY = "kernelgate_coldstart"
# the runs of each runner that appended a round (``--kernelgate-save --kernelgate-append``), by host id:
# the entry's record stays the first round's (pytest-benchmark's fields), so a runner that appended its
# own would otherwise be screened against the first host's runs (baseline.store merges the map)
BY_HOST_KEY = "kernelgate_coldstart_by_host"


def record_of(entry: Entry) -> ColdStart | None:
    """The cold-start record of a baseline entry (None for a kernel benchmark)."""
    extra = entry.benchmark.get("extra_info") or {}
    data = extra.get(EXTRA_KEY) if isinstance(extra, Mapping) else None
    return ColdStart.from_json(data) if isinstance(data, Mapping) else None


def own_record(entry: Entry, host_id: str) -> ColdStart | None:
    """The runs that host ``host_id`` appended to a cold-start baseline entry (None: it appended none)."""
    extra = entry.benchmark.get("extra_info") or {}
    by_host = extra.get(BY_HOST_KEY) if isinstance(extra, Mapping) else None
    data = by_host.get(host_id) if isinstance(by_host, Mapping) else None
    return ColdStart.from_json(data) if isinstance(data, Mapping) else None


def read_records(path: Path) -> dict[str, ColdStart]:
    """Cold-start records by benchmark id, from a baseline or results file or a ``coldstart --out`` file."""
    from kernelgate.baseline import reading as baseline

    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "benchmarks" in data:
        found = (record_of(e) for e in baseline.load(path).values())
        return {r.id: r for r in found if r is not None}
    return {r.id: r for r in (ColdStart.from_json(d) for d in data[EXTRA_KEY])}


def recorded_cache_bytes(baseline_dir: Path, key: str) -> int | None:
    """The largest JIT cache a cold start recorded in the baseline of ``key`` left behind (None: no
    such baseline, an unreadable one, or no cold start in it); ``kernelgate doctor`` sizes the
    cache against it."""
    from kernelgate.baseline import reading as baseline
    from kernelgate.baseline.errors import BaselineError

    path = baseline.path_for(baseline_dir, key)
    if not path.is_file():
        return None
    try:
        entries = baseline.load(path)
    except BaselineError:
        return None
    sizes = [rec.cache_bytes for e in entries.values() if (rec := record_of(e)) is not None]
    return max(sizes) if sizes else None


def carrier(record: ColdStart, host: HostFingerprint | None = None) -> Measurement:
    """The ``extra_info.kernelgate`` of a cold-start entry: environment and total time per run, and
    the host that measured it (one round)."""
    return Measurement(
        benchmark=record.id,
        arch=record.arch,
        device=record.spec.device,
        iterations=len(record.ok_runs),
        total=record.total,
        busy=Dist(()),
        wall=record.process,
        layers=(),
        kernels=(),
        environment=record.environment,
        hosts=() if host is None else (host,),
    )


def bench_fields(stats: Any, fullname: str, record: ColdStart, host_id: str | None = None) -> dict[str, Any]:
    """pytest-benchmark's fields of the entry (``stats`` as the fixture has them), record included;
    with ``host_id`` (a round appended to a baseline) the record also as that host's own runs."""
    bench: dict[str, Any] = dict(stats.as_dict(include_data=False)) if stats is not None else {}
    bench.setdefault("fullname", fullname)
    bench["extra_info"] = {EXTRA_KEY: record.to_json()}
    if host_id is not None:
        bench["extra_info"][BY_HOST_KEY] = {host_id: record.to_json()}
    return bench


def compare_scenario(
    base: ColdStart, current: ColdStart, config: GateConfig, judge: Judge = median_rule
) -> Comparison:
    """One delta for the launch-to-steady-state total and one per phase.

    The default judge is threshold + floor (:func:`median_rule`): with 3 runs a side, a rank test
    cannot reach significance (two-sided Mann-Whitney p >= 0.1), so it would never fail.
    """
    return compare_rounds([base], [current], config, judge)


def compare_rounds(
    base: Sequence[ColdStart], current: Sequence[ColdStart], config: GateConfig, judge: Judge = median_rule
) -> Comparison:
    """:func:`compare_scenario` of several records a side (the processes of a same-host A/B, one
    per round, each holding its runs): every figure's runs pooled, with the rounds kept apart in the
    :class:`Dist` (its ``rounds``), so that a judge can test the round medians
    (:func:`kernelgate.verdict.delta.process_rule`)."""
    last = current[-1]

    def delta(name: str, b: Dist | None, c: Dist | None) -> Delta:
        threshold = config.threshold(last.arch, last.id, Scope.PHASE, name)
        if b is None or not b.samples:
            verdict = Verdict.NEW
        elif c is None or not c.samples:
            verdict = Verdict.MISSING
        else:
            verdict = judge(b, c, threshold).verdict
        return Delta(
            scope=Scope.PHASE,
            name=name,
            layer=last.scenario,
            baseline_us=None if b is None or not b.samples else b.median,
            current_us=None if c is None or not c.samples else c.median,
            threshold=threshold,
            verdict=verdict,
        )

    deltas = [delta(TOTAL, _pooled(base, None), _pooled(current, None))]
    for name in PHASES:
        b, c = _pooled(base, name), _pooled(current, name)
        if b is not None or c is not None:
            deltas.append(delta(name, b, c))
    # the kernel benchmarks' fail set, but a phase that came or went is no launch of the forward:
    # fail_on_new / fail_on_missing do not reach it; a doubt the judge leaves fails the test where
    # on_inconclusive does (its merged comparison)
    fail_on = fail_set(config) & {Verdict.REGRESSED, Verdict.INCONCLUSIVE}
    return Comparison(last.id, last.arch, tuple(deltas), fail_on)


def _pooled(records: Sequence[ColdStart], name: str | None) -> Dist | None:
    """Every run of ``records`` for phase ``name`` (None: the total), the rounds kept apart."""
    found = [d for r in records if (d := r.total if name is None else r.phase(name)) is not None and d.n]
    return Dist.concat(found) if found else None


def run_values(
    base: Sequence[ColdStart], current: Sequence[ColdStart]
) -> dict[tuple[Scope, str], tuple[tuple[float, ...], tuple[float, ...]]]:
    """Per phase and the total (``(Scope.PHASE, name)``, as :func:`compare_rounds` names them): each
    run's time, base and head, µs. Every run is a fresh process: what
    :func:`kernelgate.verdict.bimodal.explained` reads as the processes of each side."""
    found: dict[tuple[Scope, str], tuple[tuple[float, ...], tuple[float, ...]]] = {}
    for key, name in ((TOTAL, None), *((p, p) for p in PHASES)):
        b, c = _pooled(base, name), _pooled(current, name)
        if b is not None and c is not None:
            found[(Scope.PHASE, key)] = (tuple(b.samples), tuple(c.samples))
    return found


def seconds(us: float | None) -> str:
    """A phase's time (given in µs) in its unit (:func:`kernelgate.units.duration`)."""
    return duration(us)


def size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def delta_line(d: Delta) -> str:
    pct = "" if d.delta_pct is None else f"{d.delta_pct:+.1f} %, "
    help_text = f" ({PHASE_HELP[d.name]})" if d.name in PHASE_HELP else ""
    return (
        f"{d.verdict.value.upper()} {d.name}{help_text}: {seconds(d.baseline_us)} -> {seconds(d.current_us)} "
        f"({pct}{duration(d.delta_us, signed=True)}; threshold {100 * d.threshold.rel:.0f} %, "
        f"floor {limit(d.threshold.floor_us)})"
    )


def scenario_failure(
    comparison: Comparison,
    base: ColdStart,
    current: ColdStart,
    baseline_path: str,
    changes: Sequence[envdiff.Change] = (),
    *,
    target: str,
) -> str:
    """What got slower in a cold start, with the JIT cache and the environment changes that may
    explain it; ``target`` is the test's node id, for the command that re-records it."""
    phases = [d for d in comparison.failures if d.name != TOTAL]
    total = next(d for d in comparison.deltas if d.name == TOTAL)
    lines = [
        f"kernelgate: cold start {comparison.benchmark} on {comparison.arch}: "
        f"{len(phases)} phase(s){' and the total' if total in comparison.failures else ''} over threshold",
        f"  scenario {current.scenario} ({_describe(current)}); {len(current.ok_runs)} run(s) against "
        f"{len(base.ok_runs)}",
    ]
    lines += ["  " + delta_line(d) for d in phases]
    lines.append(
        "  " + delta_line(total).replace(f"{total.verdict.value.upper()} {TOTAL}", "launch to steady state")
    )
    lines.append(f"  JIT cache after a run: {size(base.cache_bytes)} -> {size(current.cache_bytes)}")
    lines += cache_lines(base, current)
    lines += environment_lines(changes)
    lines.append(f"  baseline: {baseline_path}")
    lines.append(f"  if this change is intended, re-record: {record_command(target)}")
    return "\n".join(lines)


def _median_details(record: ColdStart) -> dict[str, float]:
    names = {k for r in record.ok_runs for k in r.details}
    return {k: v for k in sorted(names) if (v := record.detail(k)) is not None}


def cache_lines(base: ColdStart, current: ColdStart) -> list[str]:
    """What the compile caches or the driver's JIT did in the baseline's runs and in these (medians),
    and the compile options where they changed: why a compiling phase got slower."""
    lines = []
    if base.spec.compile_options != current.spec.compile_options:
        lines.append(
            f"  compile options: {base.spec.compile_options or '(none)'} -> "
            f"{current.spec.compile_options or '(none)'}"
        )
    before, now = explain(_median_details(base)), explain(_median_details(current), steps=3)
    if before or now:
        lines.append(f"  caches, baseline: {before or '(not recorded)'}")
        lines.append(f"  caches, now: {now or '(not recorded)'}")
    return lines


def _describe(record: ColdStart) -> str:
    what = SCENARIOS[record.scenario].description if record.scenario in SCENARIOS else record.scenario
    variables = " ".join(f"{k}={v}" for k, v in sorted(record.env.items()))
    return f"{what}; set: {variables}" if variables else what


def summary(comparison: Comparison) -> str:
    """One line per cold-start benchmark for the terminal summary."""
    total = next(d for d in comparison.deltas if d.name == TOTAL)
    failed = [d.name for d in comparison.failures]
    pct = "" if total.delta_pct is None else f" ({total.delta_pct:+.1f} %)"
    verdict = "REGRESSED: " + ", ".join(failed) if failed else "pass"
    return (
        f"cold start {comparison.benchmark}: {seconds(total.baseline_us)} -> {seconds(total.current_us)}"
        f"{pct} to steady state, {verdict}"
    )


def table(records: Sequence[ColdStart], width: int = 160) -> str:
    """Median phase times of each scenario, each in its unit (the ``kernelgate coldstart`` command),
    the phases some record has; below it, what each record's caches did (``explain``)."""
    grid = Table(title="cold start, median time per phase", title_justify="left")
    shown = [name for name in PHASES if any(rec.phase(name) for rec in records)]
    for column in ("scenario", *shown, TOTAL, "JIT cache", "runs ok"):
        grid.add_column(column, justify="left" if column == "scenario" else "right")
    for rec in records:
        cells = [duration(d.median) if (d := rec.phase(name)) else "—" for name in shown]
        total = duration(rec.total.median) if rec.ok_runs else "failed"
        grid.add_row(
            rec.scenario, *cells, total, size(rec.cache_bytes), f"{len(rec.ok_runs)}/{len(rec.runs)}"
        )
    notes = [f"{rec.id}: {words}" for rec in records if (words := explain(_median_details(rec), steps=4))]
    return _render(grid, width) + "".join(f"{line}\n" for line in notes)


def ptx_unavailable(device: str) -> str | None:
    """Why ``CUDA_FORCE_PTX_JIT=1`` cannot run torch here (None if it can): no GPU, or no PTX that
    the driver can compile for this GPU in the installed torch."""
    if not device.startswith("cuda"):
        return "forced PTX JIT is a GPU scenario (the device is the CPU)"
    import torch

    images = software.KernelImages(
        tuple(torch.cuda.get_arch_list()), torch.cuda.get_device_capability(device)
    )
    if images.usable_ptx:
        return None
    return (
        f"torch {torch.__version__} carries PTX only for {', '.join(images.ptx) or 'no architecture'}, "
        "none of "
        f"which the driver can compile for {images.sm}: with CUDA_FORCE_PTX_JIT=1 its kernels cannot load "
        "on this GPU. The PTX-JIT scenarios need a torch build with PTX for this GPU or an older one."
    )
