"""Python's bytecode for the processes of the same-host judge and of A/B rounds, where the environment
keeps none.

With ``PYTHONDONTWRITEBYTECODE`` set (common in container images) and packages installed without
their ``.pyc`` files (``uv pip install`` compiles none unless asked), every Python process compiles
the sources it imports: ``import torch`` alone compiles some 2,500 files, seconds in each process.
The judge, ``kernelgate ab`` and ``kernelgate bisect`` start many processes on each side (a pair a
round, and every fresh process of a cold start), so there Python keeps the bytecode it compiles in a
folder of kernelgate's own (``PYTHONPYCACHEPREFIX``), never beside the installed sources. Both sides
import the same way; the first process compiles, the others read. The run's own process, and the
screen's cold starts compared with the stored baseline, import as the environment says.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path

NO_WRITE_VAR = "PYTHONDONTWRITEBYTECODE"
PREFIX_VAR = "PYTHONPYCACHEPREFIX"


def compiles_each_time(env: Mapping[str, str], probe: str = "torch") -> bool:
    """Whether a process started with ``env`` compiles ``probe``'s sources again: writing bytecode
    is off, no prefix is set, and the package has no ``.pyc`` beside its ``__init__.py``. Read
    without importing ``probe``."""
    if not env.get(NO_WRITE_VAR) or env.get(PREFIX_VAR):
        return False
    try:
        spec = importlib.util.find_spec(probe)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return False
    try:
        cached = importlib.util.cache_from_source(spec.origin)
    except (NotImplementedError, ValueError):
        return False
    return not Path(cached).is_file()


def kept(env: Mapping[str, str], folder: Path) -> dict[str, str] | None:
    """``env`` with Python's bytecode kept under ``folder``, where :func:`compiles_each_time` says it
    is compiled in every process; None where ``env`` needs no change. The ``.pyc`` names carry the
    interpreter's tag, so processes of other Python versions share ``folder``."""
    if not compiles_each_time(env):
        return None
    out = {k: v for k, v in env.items() if k != NO_WRITE_VAR}
    out[PREFIX_VAR] = str(folder)
    return out


def describe(folder: Path, who: str = "same-host judge") -> str:
    """The line of ``who`` (the same-host judge, the A/B rounds) when its processes keep their
    bytecode (:func:`kept`)."""
    return (
        f"kernelgate: {who}: {NO_WRITE_VAR} is set and the installed packages have no bytecode, so each "
        f"Python process would compile torch's sources again: these processes keep what they compile in "
        f"{folder} ({PREFIX_VAR}), on both sides alike. To give every process that saving: "
        "python -m compileall -q \"$(python -c 'import sysconfig; "
        'print(sysconfig.get_paths()["purelib"])\')"'
    )
