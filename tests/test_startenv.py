"""The environment the same-host judge's processes start from (kernelgate/plugin/startenv.py): the one
pytest was started with, never what the run's code set since."""

from __future__ import annotations

import os

import pytest

from kernelgate.plugin import startenv


def test_what_the_code_set_since_the_start_does_not_travel(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KG_USER", "from the job")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("KG_GONE", "there at the start")
    config = pytester.parseconfig()
    startenv.remember(config)
    # the head's conftest.py / `import ultralytics`
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("KG_GONE")
    monkeypatch.setenv("KG_LONG", "/a/long/path/" * 10)  # cv2 sets LD_LIBRARY_PATH so
    # pytest's own, set while a test runs (a cold start is judged inside its test): not the code's
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "test_suite.py::test_coldstart (call)")

    env, changed = startenv.for_children(config)
    assert "OMP_NUM_THREADS" not in env
    assert env["KG_GONE"] == "there at the start"
    assert env["KG_USER"] == "from the job"
    assert changed == ["OMP_NUM_THREADS", "KG_GONE", "KG_LONG"]  # a thread count first
    line = startenv.describe(changed, config.stash[startenv.START_KEY])
    assert "OMP_NUM_THREADS=1 (started unset)" in line
    assert "KG_GONE=(unset) (started there at the start)" in line
    assert "KG_LONG=/a/long/path//a/long/path//a/long/pat... (started unset)" in line


def test_without_a_start_the_environment_as_it_is(pytester: pytest.Pytester) -> None:
    # kernelgate registered late (a conftest.py's pytest_plugins): no start was kept
    config = pytester.parseconfig()
    startenv.forget(config)
    env, changed = startenv.for_children(config)
    assert env == dict(os.environ) and changed == []


def test_the_start_is_kept_only_where_kernelgate_is_on(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        conftest="""
import os
os.environ["KG_FROM_CONFTEST"] = "1"

def pytest_configure(config):
    from kernelgate.plugin import startenv
    start = config.stash.get(startenv.START_KEY, None)
    print("START-KEPT", start is not None and "KG_FROM_CONFTEST" not in start)
"""
    )
    pytester.makepyfile(test_x="def test_x(): pass")
    args = ("-s", "-p", "no:cacheprovider")
    on = pytester.runpytest_subprocess(*args, "--kernelgate", "--kernelgate-device=cpu")
    on.stdout.fnmatch_lines(["START-KEPT True"])
    off = pytester.runpytest_subprocess(*args)
    off.stdout.fnmatch_lines(["START-KEPT False"])
