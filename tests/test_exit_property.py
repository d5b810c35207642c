"""The invariant of the run's exit status, as a property: a run exits nonzero iff some gate
verdict says fail (a regression or a measurement error always; an inconclusive verdict or a missing
baseline as their policies say; nothing compared at all), whatever the tests do around the gate
(``xfail``, catching ``Failed``, skipping after it, raising after it), with and without pytest-xdist.
report.md, where written, agrees with the exit.

The verdicts reach the session's state as the fixture puts them there (a comparison, then
``pytest.fail`` where it fails; a missing baseline; an inconclusive one only at the session's end,
as the same-host judge leaves it); a measurement error is a real crash inside ``kernelgate.module``.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# imported here, before pytester's in-process runs: each run restores sys.modules as it found them,
# and torch does not survive a second import into one process
pytest.importorskip("torch")
pytest.importorskip("kernelgate.plugin.fixture")

OUTCOMES = ("pass", "ambiguous", "regression", "inconclusive", "no baseline", "error")
WRAPPERS = ("plain", "xfail", "catch", "skip_after", "raise_after_xfail", "skip_before")

# torch is imported where a crash needs it: not in pytest-xdist's controller, which runs no test
CONFTEST = """
import pytest
from kernelgate.config import MissingBaseline, Scope, Threshold
from kernelgate.models.layers import Layers
from kernelgate.verdict.compare import Comparison, Delta, Verdict, fail_set

VERDICTS = {"pass": Verdict.UNCHANGED, "ambiguous": Verdict.AMBIGUOUS, "regression": Verdict.REGRESSED,
            "inconclusive": Verdict.INCONCLUSIVE}


def crash():
    import torch

    class Crash(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("simulated crash in the model")

    return Crash(), torch.zeros(1)


def gate(kernelgate, outcome, name):
    state = kernelgate.state
    if outcome == "error":
        kernelgate.module(*crash(), Layers({}), name=name)
    if outcome == "no baseline":
        state.missing.append(name)
        if state.config.missing_baseline is MissingBaseline.FAIL:
            pytest.fail(f"kernelgate: no baseline for {name}", pytrace=False)
        return
    verdict = VERDICTS[outcome]
    limit = Threshold(0.1, 1.0)
    deltas = (Delta(Scope.TOTAL, "total", "", 100.0, 300.0, limit, verdict, note="simulated"),
              Delta(Scope.LAYER, "model.1", "model.1", 50.0, 250.0, limit, verdict, note="simulated"))
    comparison = Comparison(name, state.arch, deltas, fail_set(state.config))
    state.comparisons.append(comparison)
    if comparison.failed and outcome != "inconclusive":  # the judge decides doubts after the tests
        pytest.fail(f"kernelgate: {name}: {outcome}", pytrace=False)
"""

TEMPLATES = {
    "plain": "def test_{i}(kernelgate):\n    gate(kernelgate, {o!r}, 'b{i}')\n",
    "xfail": (
        "@pytest.mark.xfail(reason='known')\ndef test_{i}(kernelgate):\n    gate(kernelgate, {o!r}, 'b{i}')\n"
    ),
    "catch": (
        "def test_{i}(kernelgate):\n    try:\n        gate(kernelgate, {o!r}, 'b{i}')\n"
        "    except pytest.fail.Exception:\n        pass\n"
    ),
    "skip_after": (
        "def test_{i}(kernelgate):\n    try:\n        gate(kernelgate, {o!r}, 'b{i}')\n"
        "    finally:\n        pytest.skip('after the gate')\n"
    ),
    "raise_after_xfail": (
        "@pytest.mark.xfail(raises=RuntimeError)\ndef test_{i}(kernelgate):\n"
        "    gate(kernelgate, {o!r}, 'b{i}')\n    raise RuntimeError('after the gate')\n"
    ),
    "skip_before": (
        "def test_{i}(kernelgate):\n    pytest.skip('before the gate')\n    gate(kernelgate, {o!r}, 'b{i}')\n"
    ),
}

Case = tuple[str, str]  # (outcome, wrapper)


def expected_failure(cases: Sequence[Case], on_inconclusive: str, missing_baseline: str) -> bool:
    """The invariant, written out independently of kernelgate.verdict.policy."""
    reached = [outcome for outcome, wrapper in cases if wrapper != "skip_before"]
    compared = any(o in ("pass", "ambiguous", "regression", "inconclusive") for o in reached)
    fails = any(
        o in ("regression", "error")
        or (o == "inconclusive" and on_inconclusive == "fail")
        or (o == "no baseline" and missing_baseline == "fail")
        for o in reached
    )
    return fails or not compared


def write_suite(pytester: pytest.Pytester, cases: Sequence[Case], on_inconclusive: str, missing: str) -> None:
    shutil.rmtree(pytester.path / ".kernelgate", ignore_errors=True)
    pytester.makepyprojecttoml(
        f'[tool.kernelgate]\non_inconclusive = "{on_inconclusive}"\nmissing_baseline = "{missing}"\n'
    )
    pytester.makeconftest(CONFTEST)
    body = "import pytest\nfrom conftest import gate\n\n\n" + "\n\n".join(
        TEMPLATES[w].format(i=i, o=o) for i, (o, w) in enumerate(cases)
    )
    pytester.makepyfile(test_suite=body)


def check(pytester: pytest.Pytester, result: pytest.RunResult, failed: bool) -> None:
    assert (result.ret != 0) == failed, result.stdout.str()[-3000:]
    assert result.ret in (0, 1)
    report = pytester.path / ".kernelgate" / "report" / "report.md"
    if report.is_file():
        headline = report.read_text(encoding="utf-8").splitlines()[1]
        assert headline.startswith("### ❌" if failed else "### ✅"), headline


cases = st.lists(st.tuples(st.sampled_from(OUTCOMES), st.sampled_from(WRAPPERS)), min_size=1, max_size=4)
policies = st.sampled_from(("fail", "warn"))
ARGS = ("-p", "no:cacheprovider", "--kernelgate-device=cpu", "-q", "--benchmark-disable")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases=cases, on_inconclusive=policies, missing=policies)
def test_the_run_fails_iff_a_verdict_says_fail(
    pytester: pytest.Pytester, cases: list[Case], on_inconclusive: str, missing: str
) -> None:
    write_suite(pytester, cases, on_inconclusive, missing)
    result = pytester.runpytest_inprocess(*ARGS)
    check(pytester, result, expected_failure(cases, on_inconclusive, missing))


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cases=st.lists(st.tuples(st.sampled_from(OUTCOMES), st.sampled_from(WRAPPERS)), min_size=2, max_size=5),
    on_inconclusive=policies,
    missing=policies,
)
def test_the_run_fails_iff_a_verdict_says_fail_under_xdist(
    pytester: pytest.Pytester, cases: list[Case], on_inconclusive: str, missing: str
) -> None:
    pytest.importorskip("xdist")
    write_suite(pytester, cases, on_inconclusive, missing)
    result = pytester.runpytest_subprocess(*ARGS, "-n", "2")
    check(pytester, result, expected_failure(cases, on_inconclusive, missing))


@pytest.mark.parametrize(
    "cases",
    [
        [("regression", "xfail")],
        [("regression", "catch")],
        [("regression", "skip_after")],
        [("error", "raise_after_xfail"), ("pass", "plain")],
        [("inconclusive", "plain")],
        [("pass", "skip_before")],
    ],
)
def test_the_silent_passes_of_issue_15_fail(pytester: pytest.Pytester, cases: list[Case]) -> None:
    write_suite(pytester, cases, "fail", "fail")
    result = pytester.runpytest_inprocess(*ARGS)
    assert expected_failure(cases, "fail", "fail")
    check(pytester, result, True)
