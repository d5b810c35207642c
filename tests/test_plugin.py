"""The pytest plugin: enabled only when configured, lazy, and configured from pyproject + options."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

ENABLED = """
[tool.kernelgate]
layer_threshold = "10%"
"""


def test_plugin_does_not_import_torch_or_pandas(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(ENABLED)
    pytester.makepyfile(
        """
        import sys

        def test_lazy(request):
            from kernelgate.plugin.session import STATE_KEY
            assert request.config.stash.get(STATE_KEY, None) is not None, "kernelgate should be enabled"
            heavy = sorted(m for m in ("torch", "pandas", "ultralytics") if m in sys.modules)
            assert heavy == []
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_not_enabled_without_table_or_option(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.other]\nx = 1\n")
    pytester.makepyfile(
        """
        def test_state(request):
            from kernelgate.plugin.session import STATE_KEY
            assert request.config.stash.get(STATE_KEY, None) is None
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_option_enables_and_disable_wins(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_state(request):
            from kernelgate.plugin.session import STATE_KEY
            expected = request.config.getoption("kernelgate_disable")
            state = request.config.stash.get(STATE_KEY, None)
            assert (state is None) == bool(expected)
        """
    )
    enabled = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate")
    enabled.assert_outcomes(passed=1)
    disabled = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate", "--kernelgate-disable")
    disabled.assert_outcomes(passed=1)


ENABLING = [
    ["--kernelgate-no-confirm"],
    ["--kernelgate-device=cpu"],
    ["--kernelgate-device", "auto"],  # written out, though it is the default
    ["--kernelgate-report-dir", "elsewhere"],
    ["--kernelgate-on-inconclusive=warn"],
    ["--kernelgate-allow-other-gpu"],
    ["--kernelgate-out=out"],
]


def test_any_kernelgate_option_enables_the_plugin(pytester: pytest.Pytester) -> None:
    """Every ``--kernelgate-*`` option turns the plugin on, not only the ones on a list (once,
    ``--kernelgate-no-confirm`` alone did nothing); ``--kernelgate-disable`` still wins."""
    pytester.makepyfile(
        """
        def test_state(request):
            from kernelgate.plugin.session import STATE_KEY
            expected = request.config.getoption("kernelgate_disable")
            assert (request.config.stash.get(STATE_KEY, None) is None) == bool(expected)
        """
    )
    for args in ENABLING:
        pytester.runpytest_inprocess("-p", "no:cacheprovider", *args).assert_outcomes(passed=1)
        off = pytester.runpytest_inprocess("-p", "no:cacheprovider", *args, "--kernelgate-disable")
        off.assert_outcomes(passed=1)
    from kernelgate.plugin import options

    # every option pytest --help lists is known to the check, with its default
    assert {"kernelgate_no_confirm", "kernelgate_device", "kernelgate_history"} <= set(options.DEFAULTS)
    assert options.DEFAULTS["kernelgate_device"] == "auto"


def test_fixture_explains_how_to_enable(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_gate(kernelgate):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*kernelgate is not enabled*[tool.kernelgate]*--kernelgate*"])


def test_bad_threshold_is_a_usage_error_with_the_fix(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.kernelgate]\nlayer_threshold = "5"\n')
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*layer_threshold*'5'*ambiguous*'5%'*"])


def test_cli_overrides_pyproject_and_rules_apply(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        """
        [tool.kernelgate]
        layer_threshold = "10%"
        floor_us = 5.0

        [[tool.kernelgate.rules]]
        name = "model.22*"
        threshold = "30%"
        """
    )
    pytester.makepyfile(
        """
        from kernelgate.config import Scope
        from kernelgate.plugin.session import STATE_KEY

        def test_config(request):
            gate = request.config.stash[STATE_KEY].config
            assert gate.layer_threshold == 0.2
            assert gate.floor_us == 7.5
            assert gate.threshold("sm90-x", "yolov8n-fp16", Scope.LAYER, "model.22").rel == 0.3
            assert gate.threshold("sm90-x", "yolov8n-fp16", Scope.LAYER, "model.3").rel == 0.2
            assert gate.threshold("sm90-x", "yolo11n-fp16", Scope.LAYER, "model.3").rel == 0.4
        """
    )
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--kernelgate-threshold=20%",
        "--kernelgate-floor-us=7.5",
        "--kernelgate-rule=yolo11n*:model.3=40%",
    )
    result.assert_outcomes(passed=1)


def test_benchmark_storage_points_at_the_arch_folder(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(ENABLED)
    pytester.makepyfile(
        """
        from kernelgate.machine.identity import detect_arch_key

        def test_storage(request, tmp_path):
            storage = request.config.getoption("benchmark_storage")
            assert storage.startswith("file://")
            assert storage.endswith("/baselines/" + detect_arch_key())
        """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_slow_layer_option_is_validated(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(ENABLED)
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--kernelgate-slow-layer=model.2:zero")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kernelgate-slow-layer*model.2:zero*whole number*"])


def test_the_session_state_is_written_in_one_place() -> None:
    """Only plugin/session.py assigns to, or appends to, a field of the session state: every other
    module calls one of State's methods (so what a run holds can be read from one class)."""
    import ast

    import kernelgate

    mutators = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "update", "setdefault"}

    def state_field(node: ast.expr) -> bool:  # `state.FIELD` or `<anything>.state.FIELD`
        if not isinstance(node, ast.Attribute):
            return False
        owner = node.value
        return (isinstance(owner, ast.Name) and owner.id == "state") or (
            isinstance(owner, ast.Attribute) and owner.attr == "state"
        )

    root = Path(kernelgate.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "plugin" / "session.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in mutators
            ):
                targets = [node.func.value]
            for target in targets:
                inner = target.value if isinstance(target, ast.Subscript) else target
                if state_field(inner):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []
