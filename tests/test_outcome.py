"""The test's outcome is the judge's verdict (kernelgate.plugin.outcome): a suspect's test is failed or
passed in pytest's own report — the counts line, ``-r``, ``--junitxml``, ``--lf``'s cache, ``-x`` and
under pytest-xdist — as the same-host judge decided, with its message.

The judge itself is replaced here by one that returns set verdicts (its decisions are tested in
test_samehost.py and end to end in test_samehost_e2e.py): these tests are about where the verdict
goes, not how it is made. The gate tests shadow the ``kernelgate`` fixture with the session state,
and make themselves suspects as the screen would, so no model is built.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("xdist")

CONFTEST = """
import pytest

from kernelgate.plugin import judgement, outcome
from kernelgate.plugin.session import STATE_KEY

# the judge's verdicts by test name: (failed, headline)
AB = "(same-host A/B, 3 process(es) a side)"
VERDICTS = {
    "test_regressed": (True, "kernelgate: yolo-a: REGRESSION " + AB + ": model.6 +3.6 %"),
    "test_inconclusive": (True, "kernelgate: yolo-b: INCONCLUSIVE " + AB + ": model.6 +2.4 %"),
    "test_judged_pass": (False, "kernelgate: yolo-c: PASS " + AB + ": base and head agree"),
}


def fake_judge(config, state):
    for s in state.suspects:
        failed, headline = VERDICTS[s.nodeid.split("::")[-1]]
        text = headline + "\\n  model.6: stored baseline 100.0 µs -> 103.6 µs (+3.6 %); base -> head ..."
        state.add_verdict(outcome.TestVerdict(s.nodeid, failed, headline, text))
    if getattr(config.option, "crash_judge", False):
        raise RuntimeError("the judge broke")


judgement.judge_session = fake_judge


def pytest_addoption(parser):
    parser.addoption("--crash-judge", action="store_true", dest="crash_judge")


@pytest.fixture
def kernelgate(request):
    return request.config.stash[STATE_KEY]
"""

SUITE = """
from kernelgate.plugin.samehost import Suspect
from kernelgate.verdict.compare import Comparison


def suspect(state, request):
    screen = Comparison("yolo", "cpu-x86_64", (), frozenset())
    state.add_suspect(Suspect(request.node.nodeid, "kernel", screen, {}, "model.6 +3.6 %"))


def test_regressed(kernelgate, request):
    suspect(kernelgate, request)


def test_inconclusive(kernelgate, request):
    suspect(kernelgate, request)


def test_judged_pass(kernelgate, request):
    suspect(kernelgate, request)


def test_not_a_suspect(kernelgate):
    pass


def test_plain():
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml("[tool.kernelgate]\nconfirm = true\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def cases(path: str) -> dict[str, ET.Element]:
    return {c.attrib["name"]: c for c in ET.parse(path).getroot().iter("testcase")}


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_the_judges_verdict_is_the_tests_outcome_everywhere_pytest_reports_it(
    project: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    junit = project.path / "junit.xml"
    result = project.runpytest_subprocess(*workers, "-rA", f"--junitxml={junit}", "--kernelgate-device=cpu")
    assert result.ret == 1
    result.assert_outcomes(passed=3, failed=2)
    # the short summary names the verdict (cut to the terminal's width)
    result.stdout.fnmatch_lines_random(
        [
            "FAILED test_suite.py::test_regressed - kernelgate: yolo-a: REGRESSION*",
            "FAILED test_suite.py::test_inconclusive - kernelgate: yolo-b: INCONCLUSIVE*",
            "PASSED test_suite.py::test_judged_pass",
            # a pass carries the judge's answer too (-rA shows its section)
            "kernelgate: yolo-c: PASS (same-host A/B*",
        ]
    )
    found = cases(str(junit))
    failure = found["test_regressed"].find("failure")
    assert failure is not None
    assert failure.attrib["message"].startswith("kernelgate: yolo-a: REGRESSION")
    assert "model.6: stored baseline 100.0" in (failure.text or "")
    assert found["test_judged_pass"].find("failure") is None
    props = {p.attrib["name"]: p.attrib["value"] for p in found["test_judged_pass"].iter("property")}
    assert props["kernelgate"].startswith("kernelgate: yolo-c: PASS")
    # the whole answer, not only its headline: what the screen flagged and what base -> head said
    assert "model.6: stored baseline 100.0" in props["kernelgate"]
    assert found["test_not_a_suspect"].find("failure") is None and found["test_plain"].find("failure") is None


def test_last_failed_reruns_the_regressed_tests(project: pytest.Pytester) -> None:
    first = project.runpytest_subprocess("--kernelgate-device=cpu")
    first.assert_outcomes(passed=3, failed=2)
    lastfailed = json.loads((project.path / ".pytest_cache/v/cache/lastfailed").read_text())
    assert set(lastfailed) == {"test_suite.py::test_regressed", "test_suite.py::test_inconclusive"}
    again = project.runpytest_subprocess("--lf", "--kernelgate-device=cpu")
    again.assert_outcomes(failed=2)


def test_exitfirst_still_judges_what_ran_and_fails_on_it(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-x", "--kernelgate-device=cpu", "-p", "no:cacheprovider")
    assert result.ret == 1
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1


def test_a_judge_that_breaks_fails_the_suspects_saying_why(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--crash-judge", "-rf", "--kernelgate-device=cpu", "-p", "no:cacheprovider"
    )
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*the judge broke*"])


def test_on_inconclusive_warn_passes_the_inconclusive_test(project: pytest.Pytester) -> None:
    # the verdict's ``failed`` comes from the judge, which honours the policy: here it says pass
    project.makeconftest(
        CONFTEST.replace(
            '(True, "kernelgate: yolo-b: INCONCLUSIVE', '(False, "kernelgate: yolo-b: INCONCLUSIVE'
        )
    )
    result = project.runpytest_subprocess("--kernelgate-device=cpu", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=1)


def test_progress_counts_each_gate_test_once_held_or_not(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--kernelgate-device=cpu")
    counts = [line.split("]", 1)[0] for line in result.outlines if line.startswith("kernelgate [")]
    # three suspects held (1-3), the plain gate test (4), then the held ones released after the judge,
    # each with the number it ended with
    held = ["kernelgate [1/4", "kernelgate [2/4", "kernelgate [3/4"]
    assert counts == [*held, "kernelgate [4/4", *held], counts


def test_a_skipped_gate_tests_progress_line_says_why() -> None:
    from kernelgate.plugin.progress import SKIP_SHOWN, skipped

    def report(longrepr: object) -> pytest.TestReport:
        return pytest.TestReport("t.py::t", ("t.py", 0, "t"), {}, "skipped", longrepr, "call")

    why = "coldstart-x-warm: not measured: coldstart-x-empty, judged just before on this runner"
    assert skipped(report(("t.py", 3, f"Skipped: {why}"))) == f"skipped: {why}"
    long = skipped(report(("t.py", 3, "Skipped: " + "x" * 400)))
    assert long.endswith("…") and len(long) == len("skipped: ") + SKIP_SHOWN
    assert skipped(report(None)) == "skipped"  # no reason to show
