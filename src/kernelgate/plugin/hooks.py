"""The pytest plugin (entry point ``pytest11: kernelgate``).

Thin and lazy: options, configuration and the session state live here; torch and the work live in
:mod:`kernelgate.plugin.fixture`, imported only when a test asks for the ``kernelgate`` fixture.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kernelgate import config as cfg
from kernelgate.plugin import finish, options, startenv
from kernelgate.plugin.session import RECEIVED_KEY, SLOTS_KEY, STATE_KEY

if TYPE_CHECKING:
    from kernelgate.plugin.fixture import KernelGate
    from kernelgate.plugin.session import State

DEFAULT_STORAGE = "file://./.benchmarks"


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """The environment before conftest.py files run: what the same-host judge's processes start from
    (:mod:`kernelgate.plugin.startenv`). Dropped in pytest_configure where kernelgate is off."""
    startenv.remember(early_config)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("kernelgate_disable"):
        startenv.forget(config)
        return
    try:
        gate_config, found = options.load_config(config)
    except cfg.ConfigError as exc:
        raise pytest.UsageError(f"kernelgate: {exc}") from exc
    if not (found or options.given(config)):
        startenv.forget(config)
        return
    from kernelgate.machine.identity import detect_arch_key
    from kernelgate.plugin.session import Options, State

    slow, extra = options.slow_layer(config.getoption("kernelgate_slow_layer"))
    iterations = config.getoption("kernelgate_iterations")
    if iterations is not None and iterations < 1:
        raise pytest.UsageError(
            f"--kernelgate-iterations {iterations}: profile at least 1 iteration (e.g. 24)"
        )
    opts = Options(
        save=bool(config.getoption("kernelgate_save")),
        device=config.getoption("kernelgate_device"),
        slow_layer=slow,
        slow_extra_runs=extra,
        iterations=config.getoption("kernelgate_iterations"),
        out_dir=Path(config.getoption("kernelgate_out")).resolve(),
        append=bool(config.getoption("kernelgate_append")),
        replace_unreadable=bool(config.getoption("kernelgate_replace_unreadable")),
        keep_round=config.getoption("kernelgate_keep_round"),
        confirm_out=Path(config.getoption("kernelgate_confirm_out")).resolve()
        if config.getoption("kernelgate_confirm_out")
        else None,
        trust_pt=bool(config.getoption("kernelgate_trust_pt")),
        allow_other_gpu=bool(config.getoption("kernelgate_allow_other_gpu")),
        matrix=config.getoption("kernelgate_matrix"),
        only=tuple(config.getoption("kernelgate_only")),
        threads_env=os.environ.get("OMP_NUM_THREADS"),  # before any model build imports ultralytics
    )
    if opts.append and not opts.save:
        raise pytest.UsageError(
            "--kernelgate-append adds a round to a saved baseline: use it with --kernelgate-save"
        )
    options.check_save(opts.save, opts.replace_unreadable, opts.keep_round)
    if opts.device != "cpu" and (hasattr(config, "workerinput") or config.getoption("dist", "no") != "no"):
        from kernelgate.plugin import workers  # pytest-xdist: a GPU per worker

        slots = workers.spread_over_gpus(config)
        if slots is not None:
            config.stash[SLOTS_KEY] = slots
    arch = detect_arch_key(force_cpu=opts.device == "cpu")
    cases = _cases(config, on_gpu=not arch.startswith("cpu"))
    config.stash[STATE_KEY] = State(config=gate_config, options=opts, arch=arch, cases=cases)
    if not hasattr(config, "workerinput"):  # the process that prints: a line per finished gate test
        from kernelgate.plugin.progress import Progress

        config.pluginmanager.register(Progress(config), "kernelgate-progress")
    # pytest-benchmark's own --benchmark-compare/--benchmark-save then use the same folder.
    if getattr(config.option, "benchmark_storage", None) == DEFAULT_STORAGE:
        config.option.benchmark_storage = f"file://{gate_config.baseline_dir / arch}"


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(STATE_KEY, None) is not None:
        cfg.use_tests(None)


def _enabled(config: pytest.Config) -> bool:
    if config.getoption("kernelgate_disable"):
        return False
    try:
        _, found = options.load_config(config)
    except cfg.ConfigError:
        return False  # pytest_configure says what is wrong
    return found or options.given(config)


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
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A same-host round's child started ahead of its turn waits here for its go (plugin/standby.py)."""
    go = config.getoption("kernelgate_standby", None)
    if go:
        from kernelgate.plugin import standby

        standby.select(config, items, Path(go))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash.get(STATE_KEY, None)
    if state is not None:
        state.set_gate_tests(
            [i.nodeid for i in session.items if "kernelgate" in getattr(i, "fixturenames", ())]
        )
        if state.gate_tests:  # printed commands that know no test select this run's test paths
            cfg.use_tests(_typed_paths(session.config))


def _typed_paths(config: pytest.Config) -> list[str]:
    """The run's test paths as the user gives them, relative to where pytest started: its
    arguments or ``testpaths``; none where it ran the folder it was started in."""
    if config.args_source is pytest.Config.ArgsSource.INVOCATION_DIR:
        return []
    where = config.invocation_params.dir
    paths = []
    for arg in config.args:
        file, sep, rest = str(arg).partition("::")
        paths.append((os.path.relpath(file, where) if os.path.isabs(file) else file) + sep + rest)
    return paths


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    state = item.config.stash.get(STATE_KEY, None)
    if state is not None and item.nodeid in state.gate_tests:
        report.kernelgate_gate = len(state.gate_tests)  # pytest-xdist sends it to the controller
        if report.skipped:
            state.add_skipped(item.nodeid)
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """pytest-xdist's controller: count each worker's busy time, for the summary (how even the
    spread over the GPUs was)."""
    node = getattr(report, "node", None)  # set by xdist on the reports the controller receives
    if node is None:
        return
    state = node.config.stash.get(STATE_KEY, None)
    if state is not None:
        worker = str(node.gateway.id)
        state.add_busy(worker, int(report.when == "call" or bool(report.skipped)), report.duration)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A gate test runs as pytest runs any, its reports held back if the screen makes its benchmark
    a suspect (:mod:`kernelgate.plugin.outcome`): its outcome waits for the same-host judge."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is None or item.nodeid not in state.gate_tests or not _judging(state):
        return None
    from kernelgate.plugin import outcome

    outcome.run_test(item, nextitem, state)
    return True


def _judging(state: State) -> bool:
    """Whether this run may hand suspects to the same-host judge: confirm on, not recording, and
    not itself one of the judge's processes."""
    return bool(state.config.confirm) and not state.options.save and state.options.confirm_out is None


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    """After the last test (also one that ``-x`` stopped at), the judge decides the suspects and their
    tests' reports are logged with its verdicts, before pytest counts outcomes (finish.after_tests)."""
    try:
        result = yield
    except (session.Failed, session.Interrupted):
        finish.after_tests(session)
        raise
    finish.after_tests(session)
    return result


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    finish.finish(session)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    finish.summary(terminalreporter, config)
