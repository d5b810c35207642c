"""The environment the run was started in: what the same-host judge's processes start from.

The parent pytest process runs the head's code: a ``conftest.py``, a plugin or an import of it may set
environment variables (``os.environ["OMP_NUM_THREADS"] = "1"``; some ultralytics versions set
variables of their own at import). Handed on to the base's processes, such a variable makes the base
run with the head's setting, and a regression that comes in through it is measured on both sides and
called "base and head agree": a green build that hid the change (a head whose ``conftest.py`` sets
``OMP_NUM_THREADS=1`` at import would give every base process one torch thread).

So each side's processes start from the environment pytest was started with (taken in
``pytest_load_initial_conftests``, before the initial ``conftest.py`` files are loaded); what a side's
own code sets at import it sets again in its own processes. Plugins are imported before that hook
(``-p`` plugins, entry points, ``PYTEST_PLUGINS``): what one sets at import is in the start, and both
sides load the same plugins. The judge runs in the process that prints (never in a pytest-xdist
worker); what kernelgate sets there (``YOLO_OFFLINE`` when it builds a model) each process sets itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

START_KEY = pytest.StashKey[dict[str, str]]()
# pytest's own, set for the test that runs (a cold start judged at its test's own time runs the judge
# inside one): each process sets it for its own tests
PYTEST_OWN = frozenset({"PYTEST_CURRENT_TEST"})


def remember(config: pytest.Config) -> None:
    """Keep the environment as it is now (``pytest_load_initial_conftests``: before conftest.py)."""
    config.stash[START_KEY] = dict(os.environ)


def forget(config: pytest.Config) -> None:
    """Drop what :func:`remember` kept (kernelgate is off in this run)."""
    if START_KEY in config.stash:
        del config.stash[START_KEY]


def for_children(config: pytest.Config) -> tuple[dict[str, str], list[str]]:
    """The environment the judge's processes start from, and the variables this process changed
    since pytest started that they do not get (set, changed or removed by a conftest.py or an
    import), those that set a thread count first. Where the start was not kept (kernelgate
    registered late, by a conftest.py's ``pytest_plugins``), the environment as it is now."""
    start = config.stash.get(START_KEY, None)
    if start is None:
        return dict(os.environ), []
    now = os.environ
    changed = sorted(
        (k for k in set(start) | set(now) if start.get(k) != now.get(k) and k not in PYTEST_OWN),
        key=lambda k: ("THREADS" not in k, k),
    )
    return dict(start), changed


def describe(changed: list[str], start: Mapping[str, str]) -> str:
    """The judge's line about ``changed`` (from :func:`for_children`)."""

    def cut(value: str) -> str:  # LD_LIBRARY_PATH and the like: their start is what tells them apart
        return value if len(value) <= 40 else value[:37] + "..."

    shown = [
        f"{k}={cut(os.environ.get(k, '(unset)'))} (started {cut(start.get(k, 'unset'))})" for k in changed[:6]
    ]
    more = f" and {len(changed) - 6} more" if len(changed) > 6 else ""
    now = ", ".join(shown)
    return (
        f"kernelgate: same-host judge: this run's code changed the environment after pytest started: "
        f"{now}{more}. Each side's processes start from the environment pytest started with and set "
        "again what their own code sets (a conftest.py or import of the head sets it in the head's "
        "processes only)."
    )
