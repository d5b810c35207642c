"""Gate configuration: value parsing, [tool.kernelgate] tables, threshold rules, pyproject loading."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from kernelgate import config as cfg
from kernelgate.config import (
    ConfigError,
    GateConfig,
    MissingBaseline,
    Rule,
    Scope,
    SideEnvs,
    Threshold,
    from_table,
    load_pyproject,
    parse_cli_rule,
    parse_floor,
    parse_fraction,
)

ROOT = Path("/repo")


# --- parse_fraction / parse_floor ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("10%", 0.10), ("10 %", 0.10), (" 2.5% ", 0.025), ("150%", 1.5), (0.1, 0.1), ("0.25", 0.25), (1, 1.0)],
)
def test_parse_fraction_accepts_percentages_and_fractions(value: object, expected: float) -> None:
    assert parse_fraction(value, "layer_threshold") == pytest.approx(expected)


def test_parse_fraction_refuses_a_bare_number_above_one_as_ambiguous() -> None:
    with pytest.raises(ConfigError) as info:
        parse_fraction("5", "layer_threshold")
    message = str(info.value)
    assert "layer_threshold = '5'" in message
    assert "ambiguous" in message
    assert "'5%'" in message
    assert "0.05" in message


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("-1", "must be a finite number above 0"),
        ("0", "must be a finite number above 0"),
        ("0%", "must be a finite number above 0"),
        ("-5%", "must be a finite number above 0"),
        ("nan", "must be a finite number above 0"),
        ("inf%", "must be a finite number above 0"),
        ("abc", "is not a percentage"),
        ("", "is not a percentage"),
        ("ten%", "is not a percentage"),
    ],
)
def test_parse_fraction_refuses_non_positive_and_non_numbers(value: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as info:
        parse_fraction(value, "kernel_threshold")
    assert str(info.value).startswith(f"kernel_threshold = {value!r}")


@pytest.mark.parametrize(
    ("value", "expected"), [(5, 5.0), ("5", 5.0), ("2.5us", 2.5), ("2.5µs", 2.5), (" 7 ", 7.0), (0, 0.0)]
)
def test_parse_floor(value: object, expected: float) -> None:
    assert parse_floor(value, "floor_us") == expected


@pytest.mark.parametrize(
    ("value", "says"), [("-1", "0 or more"), ("nan", "0 or more"), ("abc", "not a number")]
)
def test_parse_floor_refuses(value: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_floor(value, "floor_us")


# --- from_table -----------------------------------------------------------------------------------


def test_from_table_reads_every_key() -> None:
    cfg = from_table(
        {
            "layer_threshold": "15%",
            "kernel_threshold": 0.3,
            "total_threshold": "2%",
            "floor_us": 10,
            "baseline_dir": "perf/baselines",
            "missing_baseline": "warn",
            "fail_on_new": True,
            "fail_on_missing": True,
            "rules": [{"arch": "cpu-*", "threshold": "50%", "floor_us": 500.0}],
        },
        "pyproject.toml: [tool.kernelgate]",
        ROOT,
    )
    assert cfg == GateConfig(
        layer_threshold=0.15,
        kernel_threshold=0.3,
        total_threshold=0.02,
        floor_us=10.0,
        rules=(Rule(arch="cpu-*", threshold=0.5, floor_us=500.0),),
        baseline_dir=ROOT / "perf/baselines",
        missing_baseline=MissingBaseline.WARN,
        fail_on_new=True,
        fail_on_missing=True,
    )


def test_from_table_defaults_put_baselines_next_to_pyproject() -> None:
    cfg = from_table({}, "t", ROOT)
    assert cfg == GateConfig(baseline_dir=ROOT / "baselines")
    # the defaults chosen from the H200 sensitivity measurement (docs/sensitivity.md)
    assert (cfg.layer_threshold, cfg.kernel_threshold, cfg.total_threshold) == (0.025, 0.25, 0.01)
    assert (cfg.floor_us, cfg.kernel_floor_us, cfg.alpha, cfg.confirm) == (0.5, 2.0, 0.01, True)


def test_from_table_refuses_unknown_keys_and_names_them() -> None:
    with pytest.raises(ConfigError) as info:
        from_table({"layer_treshold": "10%", "floor": 5}, "pyproject.toml: [tool.kernelgate]", ROOT)
    message = str(info.value)
    assert message.startswith("pyproject.toml: [tool.kernelgate]: unknown key(s) ['floor', 'layer_treshold']")
    assert "'layer_threshold'" in message  # the known keys are listed


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"layer_threshold": "5"}, r"t\.layer_threshold = '5' is ambiguous"),
        ({"floor_us": -2}, r"t\.floor_us = -2 must be a finite number of microseconds, 0 or more"),
        ({"fail_on_new": "yes"}, r"t\.fail_on_new = 'yes' must be true or false"),
        ({"missing_baseline": "skip"}, r"t\.missing_baseline = 'skip'; use 'fail' or 'warn'"),
        ({"rules": {"arch": "*"}}, r"t\.rules must be an array of tables"),
        ({"rules": [{"arch": "*", "treshold": "5%"}]}, r"t\.rules\[0\]: unknown key\(s\) \['treshold'\]"),
        ({"rules": [{}, {"scope": "layers"}]}, r"t\.rules\[1\]: scope = 'layers'"),
        (
            {"rules": [{"threshold": "0%"}]},
            r"t\.rules\[0\]\.threshold = '0%' must be a finite number above 0",
        ),
    ],
)
def test_from_table_refuses_bad_values(table: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        from_table(table, "t", ROOT)


# --- rules and GateConfig.threshold -------------------------------------------------------------


def test_threshold_without_rules_is_the_scope_default() -> None:
    cfg = GateConfig(
        layer_threshold=0.1, kernel_threshold=0.25, total_threshold=0.05, floor_us=5.0, kernel_floor_us=7.0
    )
    assert cfg.threshold("sm90", "b", Scope.TOTAL, "total") == Threshold(0.05, 5.0)
    assert cfg.threshold("sm90", "b", Scope.LAYER, "model.0") == Threshold(0.1, 5.0)
    assert cfg.threshold("sm90", "b", Scope.KERNEL, "model.0.conv :: k") == Threshold(0.25, 7.0)


def test_threshold_last_matching_rule_wins() -> None:
    cfg = GateConfig(
        layer_threshold=0.1,
        rules=(
            Rule(name="model.*", threshold=0.2),
            Rule(name="model.22*", threshold=0.3),
            Rule(name="model.2*", threshold=0.4),
        ),
    )
    assert cfg.threshold("a", "b", Scope.LAYER, "model.22").rel == 0.4
    assert cfg.threshold("a", "b", Scope.LAYER, "model.5").rel == 0.2
    assert cfg.threshold("a", "b", Scope.LAYER, "(unattributed)").rel == 0.1


def test_threshold_rules_override_rel_and_floor_separately() -> None:
    cfg = GateConfig(rules=(Rule(threshold=0.5, floor_us=100.0), Rule(floor_us=20.0)))
    assert cfg.threshold("a", "b", Scope.LAYER, "model.0") == Threshold(rel=0.5, floor_us=20.0)


@pytest.mark.parametrize(
    ("rule", "arch", "bench", "scope", "name", "matches"),
    [
        (Rule(arch="cpu-*"), "cpu-x86-64-amd-epyc", "b", Scope.LAYER, "model.0", True),
        (Rule(arch="cpu-*"), "sm90-nvidia-h200", "b", Scope.LAYER, "model.0", False),
        (Rule(benchmark="yolov8n*"), "a", "yolov8n-fp16-bs1-640", Scope.TOTAL, "total", True),
        (Rule(benchmark="yolov8n*"), "a", "yolo11n-fp16-bs1-640", Scope.TOTAL, "total", False),
        (Rule(scope="kernel"), "a", "b", Scope.KERNEL, "model.0.conv :: k", True),
        (Rule(scope="kernel"), "a", "b", Scope.LAYER, "model.0", False),
        (Rule(name="model.22*"), "a", "b", Scope.KERNEL, "model.22.cv2.0.0.conv :: k", True),
        (Rule(name="model.2"), "a", "b", Scope.LAYER, "model.22", False),
        (Rule(name="Model.2"), "a", "b", Scope.LAYER, "model.2", False),  # case-sensitive
    ],
)
def test_rule_globs(rule: Rule, arch: str, bench: str, scope: Scope, name: str, matches: bool) -> None:
    assert rule.matches(arch, bench, scope, name) is matches
    cfg = GateConfig(rules=(replace(rule, threshold=0.9),))
    assert (cfg.threshold(arch, bench, scope, name).rel == 0.9) is matches


def test_a_rule_applies_only_when_every_field_matches() -> None:
    cfg = GateConfig(
        layer_threshold=0.1,
        rules=(Rule(arch="sm90-*", benchmark="yolov8n*", scope="layer", name="model.9", threshold=0.3),),
    )
    assert cfg.threshold("sm90-nvidia-h200", "yolov8n-fp32", Scope.LAYER, "model.9").rel == 0.3
    assert cfg.threshold("sm80-nvidia-a100", "yolov8n-fp32", Scope.LAYER, "model.9").rel == 0.1
    assert cfg.threshold("sm90-nvidia-h200", "yolo11n-fp32", Scope.LAYER, "model.9").rel == 0.1
    assert cfg.threshold("sm90-nvidia-h200", "yolov8n-fp32", Scope.KERNEL, "model.9").rel == 0.25


# --- parse_cli_rule --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("yolov8n*:model.22*=15%", Rule(benchmark="yolov8n*", name="model.22*", threshold=0.15)),
        (":model.1=0.2", Rule(benchmark="*", name="model.1", threshold=0.2)),
        ("yolo11n*=30%", Rule(benchmark="yolo11n*", name="*", threshold=0.3)),
        ("yolo11n*:=30%", Rule(benchmark="yolo11n*", name="*", threshold=0.3)),
    ],
)
def test_parse_cli_rule(text: str, rule: Rule) -> None:
    parsed = parse_cli_rule(text)
    assert parsed == rule
    assert (parsed.arch, parsed.scope, parsed.floor_us) == ("*", "*", None)


@pytest.mark.parametrize("text", ["model.22*", "=15%", ""])
def test_parse_cli_rule_refuses_text_without_target_or_value(text: str) -> None:
    with pytest.raises(ConfigError, match=r"expected BENCHMARK_GLOB:NAME_GLOB=THRESHOLD"):
        parse_cli_rule(text)


def test_parse_cli_rule_refuses_an_ambiguous_threshold() -> None:
    with pytest.raises(ConfigError, match=r"--kernelgate-rule = '15' is ambiguous"):
        parse_cli_rule("yolov8n*:model.22*=15")


# --- load_pyproject ---------------------------------------------------------------------------------


def test_load_pyproject_missing_file(tmp_path: Path) -> None:
    cfg, found = load_pyproject(tmp_path / "pyproject.toml")
    assert found is False
    assert cfg == GateConfig(baseline_dir=tmp_path / "baselines")


def test_load_pyproject_without_table(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n\n[tool.ruff]\nline-length = 110\n', encoding="utf-8")
    cfg, found = load_pyproject(path)
    assert found is False
    assert cfg == GateConfig(baseline_dir=tmp_path / "baselines")


def test_load_pyproject_with_table(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[tool.kernelgate]\nlayer_threshold = "12%"\nbaseline_dir = "perf"\n\n'
        '[[tool.kernelgate.rules]]\narch = "cpu-*"\nthreshold = "50%"\n',
        encoding="utf-8",
    )
    cfg, found = load_pyproject(path)
    assert found is True
    assert cfg.layer_threshold == 0.12
    assert cfg.baseline_dir == tmp_path / "perf"
    assert cfg.rules == (Rule(arch="cpu-*", threshold=0.5),)


def test_load_pyproject_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.kernelgate\nlayer_threshold = "10%"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML") as info:
        load_pyproject(path)
    assert str(info.value).startswith(f"{path}: ")


def test_load_pyproject_bad_value_names_the_file_and_table(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.kernelgate]\nlayer_threshold = "10"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_pyproject(path)
    assert str(info.value).startswith(f"{path}: [tool.kernelgate].layer_threshold = '10' is ambiguous")


def test_the_repository_pyproject_is_a_valid_config() -> None:
    cfg, found = load_pyproject(Path(__file__).resolve().parents[1] / "pyproject.toml")
    assert found is True
    assert isinstance(cfg, GateConfig)


# --- policies for ends without a comparison -----------------------------------------------------


def test_policies_default_to_fail_and_read_from_the_table() -> None:
    from kernelgate.config import Policy

    assert (GateConfig().on_unreliable, GateConfig().on_nothing_compared) == (Policy.FAIL, Policy.FAIL)
    cfg = from_table({"on_unreliable": "warn", "on_nothing_compared": "warn"}, "t", ROOT)
    assert (cfg.on_unreliable, cfg.on_nothing_compared) == (Policy.WARN, Policy.WARN)


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"on_unreliable": "ignore"}, r"t\.on_unreliable = 'ignore'; use 'fail' or 'warn'"),
        ({"on_nothing_compared": False}, r"t\.on_nothing_compared = False; use 'fail' or 'warn'"),
        ({"on_nothing_compared": ["warn"]}, r"t\.on_nothing_compared = \['warn'\]; use 'fail' or 'warn'"),
        ({"rules": [5]}, r"t\.rules\[0\] = 5 must be a table"),
        ({"rules": [{"name": 22}]}, r"t\.rules\[0\]\.name = 22 must be a string"),
        ({"baseline_dir": 5}, r"t\.baseline_dir = 5 must be a folder path"),
        ({"baseline_dir": ""}, r"t\.baseline_dir = '' must be a folder path"),
    ],
)
def test_from_table_refuses_bad_policies_and_types(table: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        from_table(table, "t", ROOT)


def test_side_environments_default_to_auto_and_read_from_the_table() -> None:
    default = GateConfig()
    assert default.side_envs is SideEnvs.AUTO
    assert default.env_install == "{python} -m pip install --quiet --target {target} -r requirements.txt"
    assert "requirements*.txt" in default.dependency_files and "uv.lock" in default.dependency_files
    cfg = from_table(
        {
            "side_envs": "always",
            "env_install": "{python} -m pip install --no-index --find-links /wheels --target {target} .",
            "dependency_files": ["pyproject.toml", "ci/*.txt"],
        },
        "t",
        ROOT,
    )
    assert cfg.side_envs is SideEnvs.ALWAYS and cfg.dependency_files == ("pyproject.toml", "ci/*.txt")
    assert cfg.env_install.endswith("--target {target} .")


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ({"side_envs": "yes"}, r"t\.side_envs = 'yes'; use 'auto', 'off' or 'always'\.$"),
        ({"side_envs": True}, r"t\.side_envs = True; use 'auto', 'off' or 'always'"),
        (
            {"env_install": "pip install -r requirements.txt"},
            r"t\.env_install = 'pip install -r requirements.txt' must be a command \(run without a shell\) "
            r"that installs a side's dependencies into the folder \{target\}, e\.g\. '\{python\} -m pip",
        ),
        ({"env_install": "pip install --target '{target}"}, r"t\.env_install = .* must be a command"),
        ({"env_install": ["pip", "{target}"]}, r"t\.env_install = \['pip', '\{target\}'\] must be"),
        (
            {"dependency_files": "requirements.txt"},
            r"t\.dependency_files = 'requirements.txt' must be a list",
        ),
        ({"dependency_files": ["../requirements.txt"]}, r"must be a list of globs relative to the folder"),
        ({"dependency_files": ["/etc/requirements.txt"]}, r"e\.g\. \[\"pyproject\.toml\", "),
        ({"dependency_files": [""]}, r"t\.dependency_files = \[''\] must be a list"),
    ],
)
def test_side_environment_settings_are_checked(table: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        from_table(table, "t", ROOT)


def test_the_record_command_selects_exactly_the_tests_it_names() -> None:
    assert cfg.record_command() == "pytest benchmarks --kernelgate-save"
    graph = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640-graph]"
    plain = "benchmarks/test_yolo.py::test_yolo[yolov8n-fp16-bs1-640]"
    # quoted for the shell (brackets glob); a node id, never -k, which would also pick '-graph'
    assert cfg.record_command(plain, graph) == f"pytest '{plain}' '{graph}' --kernelgate-save"
    assert shlex.split(cfg.record_command(plain)) == ["pytest", plain, "--kernelgate-save"]


def test_a_command_without_a_known_test_selects_the_runs_test_paths() -> None:
    """A repository whose benchmarks are in perf/: the record command of a benchmark whose test is
    not known selects the run's own test paths, not benchmarks/."""
    from kernelgate import commands

    before = commands.selection()
    try:
        cfg.use_tests(["perf", "more perf/test_x.py::test_y[a b]"])
        assert cfg.selection() == ("perf", "more perf/test_x.py::test_y[a b]")
        cfg.use_tests(["perf"])
        assert cfg.record_command() == "pytest perf --kernelgate-save"
        assert cfg.default_target() == "perf"
        cfg.use_tests([])  # pytest ran the folder it was started in: no path
        assert cfg.record_command() == "pytest --kernelgate-save" and cfg.default_target() == "."
    finally:
        cfg.use_tests(None)
    assert cfg.record_command() == "pytest benchmarks --kernelgate-save"
    cfg.use_tests(None if before == ("benchmarks",) else before)


def test_a_node_id_is_given_relative_to_the_folder_pytest_ran_in(tmp_path: Path) -> None:
    nodeid = "benchmarks/test_yolo.py::test_yolo[a]"
    assert cfg.node_target(nodeid) == nodeid
    assert cfg.node_target(nodeid, tmp_path, tmp_path) == nodeid
    assert cfg.node_target(nodeid, tmp_path, tmp_path / "benchmarks") == "test_yolo.py::test_yolo[a]"
    assert cfg.node_target(nodeid, tmp_path, tmp_path / "docs") == "../benchmarks/test_yolo.py::test_yolo[a]"


def test_no_module_prints_its_own_record_command() -> None:
    """Every "re-record with ..." line comes from config.record_command (one place to change it)."""
    import kernelgate

    root = Path(kernelgate.__file__).parent
    pattern = re.compile(r"pytest \S+ --kernelgate-save|--kernelgate-save -k")
    found = [
        f"{path.relative_to(root)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_the_host_coupled_layers_have_their_own_threshold_and_name_the_pipeline_stages() -> None:
    from kernelgate.config import HOST_COUPLED
    from kernelgate.measure.stages import STAGE_TYPES

    assert {"input", *STAGE_TYPES} == HOST_COUPLED
    cfg = from_table({"host_threshold": "30%"}, "[tool.kernelgate]", Path("."))
    for name in ("input", "preprocess", "postprocess"):
        assert cfg.threshold("sm90", "b", Scope.LAYER, name).rel == pytest.approx(0.30)
    assert cfg.threshold("sm90", "b", Scope.LAYER, "model.0").rel == pytest.approx(0.025)
    assert GateConfig().threshold("sm90", "b", Scope.LAYER, "input").rel == pytest.approx(0.20)
    ruled = from_table({"rules": [{"name": "input", "threshold": "50%"}]}, "[tool.kernelgate]", Path("."))
    assert ruled.threshold("sm90", "b", Scope.LAYER, "input").rel == pytest.approx(0.50)  # a rule wins
