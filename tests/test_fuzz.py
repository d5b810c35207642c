"""Property tests (hypothesis): the baseline loader, the configuration and the comparator.

- Any JSON, any text, any single edit of a valid baseline -> a valid result or a BaselineError that
  names the file; never another exception.
- Any ``[tool.kernelgate]`` table -> a GateConfig or a ConfigError.
- The comparator never raises on valid records; a record compared with itself is unchanged; swapping
  baseline and current swaps new and missing, and never makes both directions regress; where the
  absolute floor decides, regressed one way is exactly improved the other way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from factories import ARCH, entry, measurement
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kernelgate.baseline import store as baseline
from kernelgate.baseline.store import FILE_NAME, BaselineError
from kernelgate.config import ConfigError, GateConfig, Scope, from_table, parse_floor, parse_fraction
from kernelgate.measure.results import Measurement
from kernelgate.verdict.compare import Verdict, compare, median_rule

FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def check_load(path: Path, text: str | bytes) -> None:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        entries = baseline.load(path)
    except BaselineError as exc:
        assert str(exc).startswith(f"{path}: "), str(exc)
        return
    for name, loaded in entries.items():
        assert isinstance(name, str)
        assert isinstance(loaded.measurement, Measurement)
        compare(loaded.measurement, loaded.measurement, GateConfig())  # a loaded record is usable


@FUZZ
@given(json_values)
def test_any_json_loads_or_fails_cleanly(tmp_path: Path, value: Any) -> None:
    check_load(tmp_path / FILE_NAME, json.dumps(value))


@FUZZ
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_bytes_load_or_fail_cleanly(tmp_path: Path, data: bytes) -> None:
    check_load(tmp_path / FILE_NAME, data)


def valid_document() -> dict[str, Any]:
    m = measurement(
        {"model.0": [100.0, 101.0, 99.0], "model.1": [50.0, 50.5, 49.0]},
        {"model.0.conv :: gemm": [80.0, 81.0, 79.0]},
        total=[150.0, 151.5, 148.0],
    )
    data: dict[str, Any] = baseline.document([entry("b.py::test[x]", m)], ARCH, {}, {}, "2026-11-21", "5.2.3")
    return json.loads(json.dumps(data))


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from paths(value, (*prefix, i))


VALID = valid_document()
PATHS = [p for p in paths(VALID) if p]
DELETE = object()
finite_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@FUZZ
@given(st.sampled_from(PATHS), json_values | st.just(DELETE))
def test_any_single_edit_of_a_valid_baseline_loads_or_fails_cleanly(
    tmp_path: Path, where: tuple[Any, ...], value: Any
) -> None:
    data = json.loads(json.dumps(VALID))
    parent = data
    for key in where[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    check_load(tmp_path / FILE_NAME, json.dumps(data))


@FUZZ
@given(st.sampled_from(PATHS), finite_json)
def test_a_duplicated_key_anywhere_is_refused(tmp_path: Path, where: tuple[Any, ...], value: Any) -> None:
    """Write one object with a key twice (the second a random value): it is never silently read."""
    keyed = [p for p in (where, where[:-1]) if p and isinstance(p[-1], str)]
    assume(keyed)
    target = keyed[0]
    text = json.dumps(VALID)
    key = json.dumps(target[-1])
    marker = f"{key}: "
    assume(marker in text)
    duplicated = text.replace(marker, f"{key}: {json.dumps(value)}, {marker}", 1)
    path = tmp_path / FILE_NAME
    path.write_text(duplicated, encoding="utf-8")
    try:
        baseline.load(path)
    except BaselineError as exc:
        assert "appears twice in one object" in str(exc)
    else:
        raise AssertionError(f"a duplicated key {target[-1]!r} was accepted")


# --- configuration ----------------------------------------------------------------------------------

KEYS = [
    "layer_threshold",
    "kernel_threshold",
    "total_threshold",
    "floor_us",
    "baseline_dir",
    "missing_baseline",
    "fail_on_new",
    "fail_on_missing",
    "on_unreliable",
    "on_nothing_compared",
    "rules",
    "treshold",
]
config_values = json_values | st.sampled_from(["5", "5%", "-1", "0.1", "warn", "fail", "10 %", "1e3%"])
rule_tables = st.dictionaries(
    st.sampled_from(["arch", "benchmark", "scope", "name", "threshold", "floor_us", "other"]),
    config_values,
    max_size=4,
)


@FUZZ
@given(st.dictionaries(st.sampled_from(KEYS), config_values | st.lists(rule_tables, max_size=3), max_size=5))
def test_any_config_table_gives_a_config_or_a_config_error(table: dict[str, Any]) -> None:
    try:
        cfg = from_table(table, "t", Path("/repo"))
    except ConfigError as exc:
        assert str(exc).startswith("t")
        return
    for rel in (cfg.layer_threshold, cfg.kernel_threshold, cfg.total_threshold):
        assert 0 < rel < math.inf
    assert 0 <= cfg.floor_us < math.inf


@FUZZ
@given(scalars)
def test_parse_fraction_and_floor_never_return_nonsense(value: Any) -> None:
    try:
        rel = parse_fraction(value, "x")
        assert 0 < rel < math.inf
    except ConfigError:
        pass
    try:
        floor = parse_floor(value, "x")
        assert 0 <= floor < math.inf
    except ConfigError:
        pass


@FUZZ
@given(st.integers(min_value=1, max_value=10_000))
def test_a_percentage_means_a_percentage(percent: int) -> None:
    assert parse_fraction(f"{percent}%", "x") == percent / 100
    if percent > 1:
        try:
            parse_fraction(str(percent), "x")
        except ConfigError as exc:
            assert "ambiguous" in str(exc)
        else:
            raise AssertionError(f"a bare {percent} was accepted")


# --- comparator ---------------------------------------------------------------------------------------

N = 3
samples = st.lists(st.floats(min_value=0.0, max_value=1e4, allow_nan=False), min_size=N, max_size=N)
names = st.sampled_from(["model.0", "model.1", "model.2", "input"])


@st.composite
def records(draw: st.DrawFn) -> Measurement:
    layers = draw(st.dictionaries(names, samples, max_size=4))
    kernels = draw(st.dictionaries(names.map(lambda n: f"{n}.conv :: gemm"), samples, max_size=4))
    total = draw(samples)
    return measurement(layers, kernels, total=total)


def verdicts(
    base: Measurement, cur: Measurement, cfg: GateConfig, **kw: Any
) -> dict[tuple[Scope, str], Verdict]:
    comparison = compare(base, cur, cfg, **kw)
    keys = [(d.scope, d.name) for d in comparison.deltas]
    assert len(keys) == len(set(keys)), "each total, layer and kernel is judged once"
    return {(d.scope, d.name): d.verdict for d in comparison.deltas}


@FUZZ
@given(records(), records())
def test_compare_judges_every_name_once_and_never_raises(a: Measurement, b: Measurement) -> None:
    result = verdicts(a, b, GateConfig())
    expected = {(Scope.TOTAL, "total")}
    expected |= {(Scope.LAYER, lay.name) for lay in (*a.layers, *b.layers)}
    expected |= {(Scope.KERNEL, k.key) for k in (*a.kernels, *b.kernels)}
    expected |= {(Scope.WALL, "wall")} if a.wall.n and b.wall.n else set()
    if a.host_layers and b.host_layers:
        expected |= {(Scope.HOST, lay.name) for lay in (*a.host_layers, *b.host_layers)}
    assert set(result) == expected


@FUZZ
@given(records())
def test_a_record_compared_with_itself_is_unchanged(a: Measurement) -> None:
    comparison = compare(a, a, GateConfig(fail_on_new=True, fail_on_missing=True))
    assert {d.verdict for d in comparison.deltas} == {Verdict.UNCHANGED}
    assert not comparison.failed


@FUZZ
@given(records(), records())
def test_swapping_baseline_and_current_swaps_new_and_missing(a: Measurement, b: Measurement) -> None:
    forward = verdicts(a, b, GateConfig())
    backward = verdicts(b, a, GateConfig())
    assert set(forward) == set(backward)
    for key, verdict in forward.items():
        if verdict is Verdict.NEW:
            assert backward[key] is Verdict.MISSING
        if verdict is Verdict.MISSING:
            assert backward[key] is Verdict.NEW
        if verdict is Verdict.REGRESSED:
            assert backward[key] is not Verdict.REGRESSED, "both directions cannot be slower"


@FUZZ
@given(records(), records(), st.floats(min_value=0.0, max_value=50.0))
def test_where_the_floor_decides_regressed_one_way_is_improved_the_other(
    a: Measurement, b: Measurement, floor: float
) -> None:
    # 1e-9 of at most 1e4 µs is far below any floor used here: the floor alone sets the limit. Every
    # relative threshold, the host-coupled layers' (``input``) included: a relative limit is not
    # symmetric (1092 -> 1311 µs is +20 %, 1311 -> 1092 µs is -16.7 %: over 20 % one way only).
    cfg = GateConfig(
        layer_threshold=1e-9, host_threshold=1e-9, kernel_threshold=1e-9, total_threshold=1e-9,
        host_layer_threshold=1e-9, wall_threshold=1e-9, floor_us=floor + 1e-3,
        host_floor_us=floor + 1e-3, wall_floor_us=floor + 1e-3,
    )  # fmt: skip
    forward = verdicts(a, b, cfg, judge=median_rule)
    backward = verdicts(b, a, cfg, judge=median_rule)
    mirror = {Verdict.REGRESSED: Verdict.IMPROVED, Verdict.IMPROVED: Verdict.REGRESSED}
    for key, verdict in forward.items():
        if verdict in mirror:
            assert backward[key] is mirror[verdict]
        if verdict is Verdict.UNCHANGED:
            assert backward[key] is Verdict.UNCHANGED


@FUZZ
@given(records(), records())
def test_a_regression_is_always_slower_and_an_improvement_faster(a: Measurement, b: Measurement) -> None:
    comparison = compare(a, b, GateConfig(floor_us=0.0))
    for d in comparison.deltas:
        if d.verdict is Verdict.REGRESSED:
            assert d.current_us is not None and d.baseline_us is not None and d.current_us > d.baseline_us
        if d.verdict is Verdict.IMPROVED:
            assert d.current_us is not None and d.baseline_us is not None and d.current_us < d.baseline_us
