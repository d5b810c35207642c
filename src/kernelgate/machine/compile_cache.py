"""The compile caches of ``torch.compile``: where they are, what they hold, whether they outlive a CI job.

Inductor keeps its FX-graph, AOTAutograd and autotuning caches in ``TORCHINDUCTOR_CACHE_DIR``
(default ``<temp>/torchinductor_<user>``, i.e. ``/tmp``); Triton keeps each compiled kernel (PTX,
cubin) in a folder of ``TRITON_CACHE_DIR``, which Inductor points at ``<inductor>/triton/<device>``
when it is unset. So by default both live in ``/tmp``: a CI job in a fresh container or VM starts with
none and pays the whole compile at every start. Read without importing torch.
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelgate.machine.jit_cache import folder_bytes

INDUCTOR_VAR, TRITON_VAR = "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"
# variables that switch compile caches off ("0" for the first two, "1" for the others)
CACHE_OFF = {
    "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
    "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
    "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1",
    "TORCH_COMPILE_FORCE_DISABLE_CACHES": "1",
}
# kernelgate's hooks for the mega-cache (torch.compiler.save_cache_artifacts / load_cache_artifacts): a
# file a cold-start child writes after its timed phases, or loads in its `load_cache` phase
SAVE_ARTIFACTS = "KERNELGATE_SAVE_COMPILE_ARTIFACTS"
LOAD_ARTIFACTS = "KERNELGATE_LOAD_COMPILE_ARTIFACTS"
# variables that change how long a compile (cold or warm) takes: recorded with every measurement
COMPILE_VARIABLES = (
    *CACHE_OFF,
    "TORCHINDUCTOR_COMPILE_THREADS",
    "TORCH_CACHING_PRECOMPILE",
    SAVE_ARTIFACTS,
    LOAD_ARTIFACTS,
)
CI_VARIABLES = (
    ("GITHUB_ACTIONS", "GitHub Actions"),
    ("GITLAB_CI", "GitLab CI"),
    ("BUILDKITE", "Buildkite"),
    ("JENKINS_URL", "Jenkins"),
    ("TF_BUILD", "Azure Pipelines"),
    ("CIRCLECI", "CircleCI"),
    ("CI", "a CI system"),
)


def default_inductor_dir() -> str:
    """Inductor's default (``torch._inductor.runtime.cache_dir_utils.default_cache_dir``)."""
    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}"
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


def inductor_dir(environ: Mapping[str, str]) -> str:
    return os.path.abspath(environ.get(INDUCTOR_VAR) or default_inductor_dir())


def triton_dir(environ: Mapping[str, str], device: int = 0) -> str:
    """Where Triton's kernels go under ``torch.compile``: ``TRITON_CACHE_DIR``, else Inductor's
    ``<inductor>/triton/<device>``."""
    return environ.get(TRITON_VAR) or os.path.join(inductor_dir(environ), "triton", str(device))


def scenario_env(folder: Path) -> dict[str, str]:
    """Both caches inside a cold-start scenario's cache folder."""
    return {INDUCTOR_VAR: str(folder / "inductor"), TRITON_VAR: str(folder / "triton")}


def triton_kernels(path: Path) -> int:
    """Compiled kernels in a Triton cache folder: its entries that hold a cubin."""
    if not path.is_dir():
        return 0
    return sum(1 for entry in path.iterdir() if entry.is_dir() and any(entry.glob("*.cubin")))


def ci_system(environ: Mapping[str, str]) -> str | None:
    """The CI system this runs under, from its variables (None: not CI)."""
    for name, system in CI_VARIABLES:
        if environ.get(name, "").lower() not in ("", "0", "false"):
            return system
    return None


def mount_of(path: str, mounts: str) -> tuple[str, str]:
    """The mount point and file system type that hold ``path`` (``/proc/self/mounts`` text)."""
    best = ("/", "unknown")
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0]):
            best = (point, fields[2])
    return best


@dataclass(frozen=True)
class Persistence:
    """Whether a folder outlives a CI job: True, False, or None (depends on how the runner is run)."""

    kept: bool | None
    why: str

    @property
    def pair(self) -> tuple[bool | None, str]:
        return self.kept, self.why


def persistence(
    path: str, environ: Mapping[str, str], mounts: str, container: bool, temp: str = tempfile.gettempdir()
) -> Persistence:
    """What happens to ``path`` between two CI jobs, judged from where it lies."""
    point, fstype = mount_of(path, mounts)
    runner_temp = environ.get("RUNNER_TEMP")
    if environ.get("RUNNER_ENVIRONMENT") == "github-hosted":
        return Persistence(False, "a GitHub-hosted runner is a fresh machine for every job")
    if runner_temp and _inside(path, runner_temp):
        return Persistence(False, f"under RUNNER_TEMP ({runner_temp}), emptied at every job")
    if fstype == "tmpfs":
        return Persistence(False, f"on a tmpfs ({point}): in memory, gone with the machine or container")
    if container and point == "/" and fstype == "overlay":
        return Persistence(False, "on the container's own file system (overlay): gone with the container")
    if _inside(path, temp) or _inside(path, "/tmp"):
        return Persistence(
            None,
            f"in the temporary folder ({temp}): kept while this machine"
            f"{' and container' if container else ''} last; a fresh runner or container starts without it",
        )
    return Persistence(True, f"on {point} ({fstype}): kept as long as that file system is")


def _inside(path: str, folder: str) -> bool:
    folder = folder.rstrip("/")
    return path == folder or path.startswith(folder + "/")


@dataclass(frozen=True)
class CacheFolder:
    """One compile cache as the doctor reads it."""

    name: str  # "Inductor" or "Triton"
    variable: str  # the variable that sets it
    path: str
    from_env: bool  # set by the variable (else the default)
    bytes: int
    kernels: int | None  # Triton: compiled kernels in it
    writable: bool
    kept: bool | None
    kept_why: str


def read_folders(environ: Mapping[str, str], mounts: str, container: bool) -> tuple[CacheFolder, ...]:
    """Inductor's and Triton's cache folders: size, kernels, writable, kept between jobs."""
    found = []
    for name, variable, path in (
        ("Inductor", INDUCTOR_VAR, inductor_dir(environ)),
        ("Triton", TRITON_VAR, triton_dir(environ)),
    ):
        anchor = Path(path)
        while not anchor.exists() and anchor != anchor.parent:
            anchor = anchor.parent
        keep = persistence(path, environ, mounts, container)
        kernels = triton_kernels(Path(path)) if name == "Triton" else None
        writable = os.access(anchor, os.W_OK)
        size = folder_bytes(Path(path))
        found.append(
            CacheFolder(name, variable, path, variable in environ, size, kernels, writable, *keep.pair)
        )
    return tuple(found)


def read_mounts() -> str:
    try:
        return Path("/proc/self/mounts").read_text(encoding="utf-8")
    except OSError:
        return ""


def in_container(markers: Sequence[str] = ("/.dockerenv", "/run/.containerenv")) -> bool:
    return any(os.path.exists(m) for m in markers)
