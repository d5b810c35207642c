"""The pytest plugin, which drives the flow (measure -> baseline -> verdict -> report) for each test:
options (``options``), the hooks (``hooks``, the ``pytest11`` entry point), the session state in
``config.stash`` (``session``), the ``kernelgate`` fixture (``fixture``, ``coldstart``), the end of a
session (``finish``), the same-host judge's processes (``samehost``, ``invocation``) and pytest-xdist
(``workers``, ``schedule``).

The top layer: it may import every other subpackage, but ``hooks``, ``options`` and ``session`` load
no torch, pandas or matplotlib at import (tests/test_plugin.py checks it in a fresh process); the
work is imported when a test asks for the fixture.
"""
