"""Repository-wide pytest configuration.

The kernelgate plugin loads through its ``pytest11`` entry point once the package is installed
(``pip install -e .``); ``[tool.kernelgate]`` in pyproject.toml configures it for benchmarks/.
The unit tests in tests/ need neither a GPU nor ultralytics.
"""

from __future__ import annotations

pytest_plugins = ["pytester"]
