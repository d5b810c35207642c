"""Names that become file names (test ids, benchmark ids, model names, architecture keys), and paths
as messages show them.


A test id such as ``test_yolo[../../etc/passwd]`` or a 300-character parametrization must never
escape its folder, hide itself (leading dot), or exceed the file system's 255-byte limit. Kept by
hand (a dozen lines, see docs/design.md): the rule is a short ASCII allow-list plus a digest.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

MAX_LENGTH = 120
_ALLOWED = re.compile(r"[^A-Za-z0-9._\-\[\]]+")
_DOTS = re.compile(r"\.{2,}")
_DIGEST = 8


def safe_name(name: str, max_length: int = MAX_LENGTH) -> str:
    """``name`` as one path component: ASCII letters, digits and ``._-[]`` only, never empty,
    no ``..`` anywhere, never starting with a dot, at most ``max_length`` characters.

    A name that had to change gets a digest of the original appended, so two different names
    (``a/b`` and ``a:b``) never share a file.
    """
    if max_length < _DIGEST + 2:
        raise ValueError(f"max_length {max_length} is too short for a name and its digest")
    cleaned = _DOTS.sub(".", _ALLOWED.sub("_", name)).lstrip(".")
    if cleaned == name and 0 < len(name) <= max_length:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST]
    head = cleaned[: max_length - _DIGEST - 1].rstrip(".")
    return f"{head}-{digest}" if head else digest


def is_safe(name: str, max_length: int = MAX_LENGTH) -> bool:
    """Whether ``name`` is already a safe path component (what :func:`safe_name` keeps as it is)."""
    return safe_name(name, max_length) == name


def check_component(name: str, what: str) -> str:
    """``name`` unchanged if it is a safe path component; else a ValueError saying what to use."""
    if not is_safe(name):
        raise ValueError(
            f"{what} {name!r} cannot be used as a folder or file name "
            f"(allowed: ASCII letters, digits and '._-[]', no leading dot); e.g. {safe_name(name)!r}"
        )
    return name


def shown(path: Path) -> str:
    """``path`` relative to the working directory where it lies below it (shorter messages)."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
