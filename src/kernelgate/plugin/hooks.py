"""The pytest plugin (entry point ``pytest11: kernelgate``).

Thin and lazy: options, configuration and the session state live here; torch and the work live in
:mod:`kernelgate.plugin.fixture`, imported only when a test asks for the ``kernelgate`` fixture.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
from collections.abc import Generator
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernelgate import config as cfg
from kernelgate.baseline.store import path_for

if TYPE_CHECKING:
    from kernelgate.baseline.store import Entry
    from kernelgate.machine.pinning import Slots
    from kernelgate.plugin.fixture import KernelGate
    from kernelgate.plugin.session import State
    from kernelgate.report.publish import Published

STATE_KEY = pytest.StashKey["State"]()
REPORT_KEY: pytest.StashKey[Published] = pytest.StashKey()
# pytest-xdist, controller side: which worker holds which GPU, and the workers whose share arrived
SLOTS_KEY: pytest.StashKey[Slots] = pytest.StashKey()
RECEIVED_KEY = pytest.StashKey[set[str]]()
DEFAULT_STORAGE = "file://./.benchmarks"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kernelgate", "kernelgate: per-layer CUDA kernel regression gate")
    add = group.addoption
    add("--kernelgate", action="store_true", help="enable kernelgate without a [tool.kernelgate] table")
    add("--kernelgate-disable", action="store_true", help="turn kernelgate off for this run")
    add("--kernelgate-save", action="store_true", help="record baselines/<arch>/ instead of comparing")
    add(
        "--kernelgate-append",
        action="store_true",
        help="with --kernelgate-save: add this run as one more round to the baseline instead of replacing it",
    )
    add("--kernelgate-no-confirm", action="store_true", help="fail without re-measuring in a fresh process")
    add("--kernelgate-confirm-out", metavar="PATH", help=argparse.SUPPRESS)
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
    add("--kernelgate-iterations", type=int, metavar="N", help="profiled iterations per benchmark")
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


def _given(config: pytest.Config) -> bool:
    names = (
        "kernelgate",
        "kernelgate_save",
        "kernelgate_baseline_dir",
        "kernelgate_threshold",
        "kernelgate_kernel_threshold",
        "kernelgate_total_threshold",
        "kernelgate_floor_us",
        "kernelgate_rule",
        "kernelgate_missing_baseline",
        "kernelgate_on_unreliable",
        "kernelgate_on_nothing_compared",
        "kernelgate_trust_pt",
        "kernelgate_slow_layer",
        "kernelgate_iterations",
        "kernelgate_redact",
        "kernelgate_history",
        "kernelgate_matrix",
        "kernelgate_only",
    )
    return any(config.getoption(n) for n in names)


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
    for option in ("on_unreliable", "on_nothing_compared"):
        if opt("kernelgate_" + option):
            updates[option] = cfg.Policy(opt("kernelgate_" + option))
    rules = tuple(cfg.parse_cli_rule(r) for r in opt("kernelgate_rule"))
    updates["rules"] = gate.rules + rules
    return dataclasses.replace(gate, **updates), found


def _slow_layer(text: str | None) -> tuple[str | None, int]:
    if not text:
        return None, 1
    name, _, runs = text.partition(":")
    if runs and not (runs.isdigit() and int(runs) > 0):
        raise pytest.UsageError(
            f"--kernelgate-slow-layer {text!r}: N must be a whole number above 0, e.g. model.10:2"
        )
    return name, int(runs or 1)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("kernelgate_disable"):
        return
    try:
        gate_config, found = load_config(config)
    except cfg.ConfigError as exc:
        raise pytest.UsageError(f"kernelgate: {exc}") from exc
    if not (found or _given(config)):
        return
    from kernelgate.machine.identity import detect_arch_key
    from kernelgate.plugin.session import Options, State

    slow, extra = _slow_layer(config.getoption("kernelgate_slow_layer"))
    iterations = config.getoption("kernelgate_iterations")
    if iterations is not None and iterations < 1:
        raise pytest.UsageError(
            f"--kernelgate-iterations {iterations}: profile at least 1 iteration (e.g. 20)"
        )
    options = Options(
        save=bool(config.getoption("kernelgate_save")),
        device=config.getoption("kernelgate_device"),
        slow_layer=slow,
        slow_extra_runs=extra,
        iterations=config.getoption("kernelgate_iterations"),
        out_dir=Path(config.getoption("kernelgate_out")).resolve(),
        append=bool(config.getoption("kernelgate_append")),
        confirm_out=Path(config.getoption("kernelgate_confirm_out")).resolve()
        if config.getoption("kernelgate_confirm_out")
        else None,
        trust_pt=bool(config.getoption("kernelgate_trust_pt")),
        allow_other_gpu=bool(config.getoption("kernelgate_allow_other_gpu")),
        matrix=config.getoption("kernelgate_matrix"),
        only=tuple(config.getoption("kernelgate_only")),
    )
    if options.append and not options.save:
        raise pytest.UsageError(
            "--kernelgate-append adds a round to a saved baseline: use it with --kernelgate-save"
        )
    if options.device != "cpu" and (hasattr(config, "workerinput") or config.getoption("dist", "no") != "no"):
        from kernelgate.plugin import workers  # pytest-xdist: a GPU per worker

        slots = workers.spread_over_gpus(config)
        if slots is not None:
            config.stash[SLOTS_KEY] = slots
    arch = detect_arch_key(force_cpu=options.device == "cpu")
    cases = _cases(config, on_gpu=not arch.startswith("cpu"))
    config.stash[STATE_KEY] = State(config=gate_config, options=options, arch=arch, cases=cases)
    # pytest-benchmark's own --benchmark-compare/--benchmark-save then use the same folder.
    if getattr(config.option, "benchmark_storage", None) == DEFAULT_STORAGE:
        config.option.benchmark_storage = f"file://{gate_config.baseline_dir / arch}"


def _enabled(config: pytest.Config) -> bool:
    if config.getoption("kernelgate_disable"):
        return False
    try:
        _, found = load_config(config)
    except cfg.ConfigError:
        return False  # pytest_configure says what is wrong
    return found or _given(config)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker per visible GPU (counted through NVML: torch is not imported here).

    Without a GPU, or with ``--kernelgate-device cpu``, one worker: benchmarks side by side on the
    CPU share its cores, caches and memory bandwidth (torch uses every core in each process), so
    each would time the other. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still wins, as in pytest-xdist.
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") or not _enabled(config):
        return None
    if config.getoption("kernelgate_device") == "cpu":
        return 1
    from kernelgate.machine.visible import visible_gpus

    return max(1, len(visible_gpus()))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's ``--dist load`` (the default of ``-n``): the longest benchmarks first, one per
    worker, then a test to each worker as it finishes one (:mod:`kernelgate.plugin.schedule`). Other
    ``--dist`` modes are left to xdist."""
    if config.stash.get(STATE_KEY, None) is None or config.getoption("dist", "no") != "load":
        return None
    from kernelgate.plugin.schedule import LongestFirst

    return LongestFirst(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist controller, before a worker starts: give it a GPU no live worker holds."""
    slots = node.config.stash.get(SLOTS_KEY, None)
    if slots is not None:
        from kernelgate.plugin import workers

        workers.hand_out(slots, node)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    """pytest-xdist controller, a worker is done: free its GPU and take what it measured."""
    from kernelgate.plugin import workers

    stash = node.config.stash
    received = stash.setdefault(RECEIVED_KEY, set())
    workers.node_down(node, error, stash.get(STATE_KEY, None), stash.get(SLOTS_KEY, None), received)


def _cases(config: pytest.Config, on_gpu: bool) -> tuple[Any, ...]:
    """The matrix's configurations for this run: its set for this machine, filtered by --kernelgate-only."""
    from kernelgate.models import matrix

    try:
        table = matrix.load(Path(config.rootpath) / "pyproject.toml")
        specs = table.cases(config.getoption("kernelgate_matrix"), on_gpu)
        only = matrix.parse_only(config.getoption("kernelgate_only"))
    except matrix.MatrixError as exc:
        raise pytest.UsageError(f"kernelgate: {exc}") from exc
    chosen = matrix.select(specs, only)
    if not chosen and only:
        listed = ", ".join(s.id for s in specs[:8]) + (" ..." if len(specs) > 8 else "")
        raise pytest.UsageError(
            f"kernelgate: --kernelgate-only {' '.join(config.getoption('kernelgate_only'))} selects none of "
            f"the {len(specs)} configurations of this set ({listed})"
        )
    return tuple(chosen)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``kernelgate_case`` with the matrix: one test per configuration, id = its id."""
    state = metafunc.config.stash.get(STATE_KEY, None)
    if state is None or "kernelgate_case" not in metafunc.fixturenames:
        return
    from kernelgate.models.matrix import skip_reason

    gpu = not state.arch.startswith("cpu")
    params = [
        pytest.param(spec, id=spec.id, marks=[pytest.mark.skip(reason=why)] if why else [])
        for spec in state.cases
        for why in [skip_reason(spec, gpu)]
    ]
    metafunc.parametrize("kernelgate_case", params)


@pytest.fixture
def kernelgate_case(request: pytest.FixtureRequest) -> Any:
    """One configuration of ``[tool.kernelgate.matrix]`` (a :class:`kernelgate.models.yolo.YoloSpec`)."""
    if not hasattr(request, "param"):
        pytest.fail(
            "kernelgate_case is parametrized by kernelgate's matrix, which is not enabled in this run: add a "
            "[tool.kernelgate] table to pyproject.toml or pass --kernelgate.",
            pytrace=False,
        )
    return request.param


@pytest.fixture
def kernelgate(request: pytest.FixtureRequest, benchmark: Any) -> KernelGate:
    """Profile, attribute and gate a model: ``kernelgate.yolo(model="yolov8n", precision="fp16")``."""
    state = request.config.stash.get(STATE_KEY, None)
    if state is None:
        pytest.fail(
            "kernelgate is not enabled in this run: add a [tool.kernelgate] table to pyproject.toml "
            "or pass --kernelgate (and drop --kernelgate-disable).",
            pytrace=False,
        )
    from kernelgate.plugin.fixture import KernelGate

    return KernelGate(state, benchmark, request.node)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None:
        state.gate_tests = [i.nodeid for i in session.items if "kernelgate" in getattr(i, "fixturenames", ())]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    state = item.config.stash.get(STATE_KEY, None)
    if state is not None and report.skipped and item.nodeid in state.gate_tests:
        state.skipped.append(item.nodeid)
    return report


def _write(config: pytest.Config, state: State, path: Path, entries: list[Entry], merge: bool) -> bool:
    """Save ``entries`` to ``path`` under its lock, keeping the file's other benchmarks when ``merge``."""
    from kernelgate.baseline import store as baseline

    hook = config.hook
    try:
        notes = baseline.save(
            path,
            entries,
            arch=entries[0].measurement.arch,
            machine_info=hook.pytest_benchmark_generate_machine_info(config=config),
            commit_info=hook.pytest_benchmark_generate_commit_info(config=config),
            created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            pytest_benchmark_version=metadata.version("pytest-benchmark"),
            merge_existing=merge,
            replace_unreadable=True,
            append=merge and state.options.append,
        )
    except baseline.BaselineError as exc:
        state.errors.append(f"NOT SAVED: {exc}")
        return False
    state.notes.extend(notes)
    state.written.append(path)
    return True


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """pytest-xdist's controller: count each worker's busy time, for the summary (how even the
    spread over the GPUs was)."""
    node = getattr(report, "node", None)  # set by xdist on the reports the controller receives
    if node is None:
        return
    state = node.config.stash.get(STATE_KEY, None)
    if state is not None:
        worker = str(node.gateway.id)
        tests, seconds = state.busy.get(worker, (0, 0.0))
        state.busy[worker] = (tests + (report.when == "call" or report.skipped), seconds + report.duration)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # a pytest-xdist worker: the controller writes the files and reports
        from kernelgate.plugin import workers

        output[workers.KEY] = workers.send(state)
        return
    received = session.config.stash.get(RECEIVED_KEY, None)
    if received:
        from kernelgate.plugin import workers

        workers.settle(state, len(received), session.config.stash.get(SLOTS_KEY, None))
    if state.measured:
        arch = state.measured[0].measurement.arch
        _write(
            session.config, state, path_for(state.options.out_dir / "results", arch), state.measured, False
        )
        reliable = [e for e in state.measured if e.measurement.reliable]
        if state.options.save and reliable:
            _write(session.config, state, path_for(state.config.baseline_dir, arch), reliable, True)
            from kernelgate.report.trace_store import keep_for_baselines

            runs = [
                (e.fullname, e.measurement.arch, e.measurement.benchmark, e.measurement.total.samples)
                for e in reliable
            ]
            state.notes += keep_for_baselines(runs, state.options.out_dir, state.config.baseline_dir)
    if state.comparisons:
        _report(session.config, state)
    ran = not any(session.config.getoption(o, False) for o in ("collectonly", "setuponly", "setupplan"))
    outcome = state.nothing_compared() if ran else None
    if outcome is not None:
        if state.config.on_nothing_compared is cfg.Policy.FAIL:
            state.errors.append(outcome)
        else:
            state.notes.append(f"warning: {outcome}")
    if state.errors and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _report(config: pytest.Config, state: State) -> None:
    from kernelgate.report.publish import publish, session_items

    history = config.getoption("kernelgate_history")
    items, notes = session_items(state, Path(history) if history else None)
    state.notes += notes
    if not items:
        return
    folder = Path(config.getoption("kernelgate_report_dir")).resolve()
    try:
        config.stash[REPORT_KEY] = publish(items, folder, redact=bool(config.getoption("kernelgate_redact")))
    except Exception as exc:  # a broken report must not hide the gate's verdict, which stands
        state.notes.append(
            f"kernelgate: the report in {folder} could not be written ({type(exc).__name__}: {exc}); "
            "the verdicts above stand. Rerun offline: kernelgate report BASELINE.json "
            f"{state.options.out_dir}/results/<arch>/0001_kernelgate.json --out {folder}"
        )


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE_KEY, None)
    if state is None or not (state.measured or state.missing or state.errors or state.notes):
        return
    if hasattr(config, "workeroutput"):
        return  # a pytest-xdist worker: the controller prints the summary
    from kernelgate.report.terminal import summary_table, time_split_lines

    terminalreporter.section("kernelgate")
    measured = {e.measurement.benchmark: e.measurement for e in state.measured}
    if state.comparisons:
        terminalreporter.write(summary_table(state.comparisons, measurements=measured))
    elif measured:
        terminalreporter.write(time_split_lines(measured.values()))
    for name in state.missing:
        terminalreporter.write_line(f"no baseline: {name} (record with: pytest benchmarks --kernelgate-save)")
    for name in state.unreliable:
        terminalreporter.write_line(f"unreliable profile, not compared: {name}")
    published = config.stash.get(REPORT_KEY, None)
    if published is not None:
        for line in published.lines():
            terminalreporter.write_line(line)
    for path in state.written:
        terminalreporter.write_line(f"wrote {path}")
    for note in state.notes:
        terminalreporter.write_line(note)
    for error in state.errors:
        terminalreporter.write_line(f"FAILED {error}", red=True, bold=True)
