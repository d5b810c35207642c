"""pytest plugin for the fleet measurement (tools/fleet-timing): when the session started, when each test
ran on which worker, and when the session's end (the gate's results and report) began and ended.
One JSON object per line in $KERNELGATE_TIMELINE; the controller writes, workers write nothing.
Load it with PYTHONPATH=tools pytest -p timeline ..."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from typing import Any

import pytest


def _write(**record: Any) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") or not os.environ.get("KERNELGATE_TIMELINE"):
        return
    with open(os.environ["KERNELGATE_TIMELINE"], "a") as out:
        out.write(json.dumps({"t": time.time(), **record}) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    _write(event="configure")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)
    worker = str(node.gateway.id) if node is not None else "main"
    _write(event=report.when, nodeid=report.nodeid, worker=worker, start=report.start, stop=report.stop)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, None, None]:
    _write(event="finish-start")
    try:
        return (yield)
    finally:
        _write(event="finish-end")


def pytest_unconfigure(config: pytest.Config) -> None:
    _write(event="unconfigure")
