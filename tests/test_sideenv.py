"""Each side of the same-host A/B in its own environment (kernelgate.machine.sideenv): when the
dependency files differ (committed or not), the cache key, the overlay's build, cache and contents,
the order on PYTHONPATH, and a failed build that leaves every suspect inconclusive. Tiny git
repositories and ``python -c`` install commands: no network, no pytest child."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from factories import measurement

from kernelgate.config import DEPENDENCY_FILES, GateConfig, SideEnvs
from kernelgate.machine import sideenv
from kernelgate.plugin.samehost import KERNEL, Judge, Suspect
from kernelgate.verdict.compare import compare
from kernelgate.verdict.samehost import Outcome

# writes kgprobe.py with the side's requirements.txt into {target}; no network
PROBE = (
    "{python} -c \"import pathlib, sys; t = pathlib.Path('requirements.txt').read_text().strip(); "
    "pathlib.Path(sys.argv[1], 'kgprobe.py').write_text('VERSION = %r' % t)\" {target}"
)
FAILS = "{python} -c \"import sys; sys.stderr.write('ERROR: no wheel for fastlib==2'); sys.exit(3)\" {target}"


def git(path: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=path, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def commit(path: Path, message: str) -> str:
    git(path, "add", "-A")
    git(path, "commit", "-qm", message)
    return git(path, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A git repository with a base commit: pyproject.toml, requirements.txt, README.md."""
    path = tmp_path / "repo"
    path.mkdir()
    (path / "pyproject.toml").write_text('[project]\nname = "demo"\ndependencies = ["torch"]\n')
    (path / "requirements.txt").write_text("fastlib==1\n")
    (path / "README.md").write_text("demo\n")
    git(path, "init", "-q", "-b", "main")
    return path, commit(path, "base")


def base_tree(path: Path, sha: str) -> Path:
    tree = path.parent / "base"
    git(path, "worktree", "add", "--detach", str(tree), sha)
    return tree


def changed(path: Path, sha: str) -> list[str] | None:
    tree = path.parent / "base"
    if not tree.exists():
        base_tree(path, sha)
    return sideenv.changed(path, tree, sha, DEPENDENCY_FILES)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KERNELGATE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "envs"


# --- whether the sides need their own environments ------------------------------------------------


def test_the_sides_need_their_own_environments_only_when_a_dependency_file_differs(
    repo: tuple[Path, str],
) -> None:
    path, sha = repo
    (path / "README.md").write_text("demo, with docs\n")
    (path / "src").mkdir()
    (path / "src" / "demo.py").write_text("X = 1\n")
    commit(path, "docs and code")
    assert changed(path, sha) == []
    (path / "requirements.txt").write_text("fastlib==2\n")
    commit(path, "fastlib 2")
    assert changed(path, sha) == ["requirements.txt"]


def test_an_uncommitted_change_to_a_dependency_file_counts(repo: tuple[Path, str]) -> None:
    path, sha = repo
    (path / "requirements.txt").write_text("fastlib==2\n")  # changed, not committed
    assert changed(path, sha) == ["requirements.txt"]
    git(path, "checkout", "--", "requirements.txt")
    (path / "constraints-gpu.txt").write_text("torch==2.5.1\n")  # new, not committed
    assert changed(path, sha) == ["constraints-gpu.txt"]
    git(path, "add", "constraints-gpu.txt")  # staged
    assert changed(path, sha) == ["constraints-gpu.txt"]


def test_a_pyproject_change_counts_only_where_it_can_change_an_install(repo: tuple[Path, str]) -> None:
    path, sha = repo
    text = (path / "pyproject.toml").read_text()
    (path / "pyproject.toml").write_text(text + '\n[tool.kernelgate]\nlayer_threshold = "5%"\n')
    commit(path, "thresholds")
    assert changed(path, sha) == []
    (path / "pyproject.toml").write_text(text.replace('"torch"', '"torch>=2.5"'))
    assert changed(path, sha) == ["pyproject.toml"]
    (path / "pyproject.toml").unlink()
    assert changed(path, sha) == ["pyproject.toml"]
    (path / "pyproject.toml").write_text('[tool.kernelgate]\nlayer_threshold = "5%"\n')
    assert changed(path, sha) == ["pyproject.toml"]  # its [project] table is gone


def test_a_pyproject_added_for_the_gate_alone_changes_no_install(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    path.mkdir()
    (path / "requirements.txt").write_text("fastlib==1\n")
    git(path, "init", "-q", "-b", "main")
    sha = commit(path, "base without a pyproject.toml")
    (path / "pyproject.toml").write_text('[tool.kernelgate]\nlayer_threshold = "5%"\n')  # not committed
    assert changed(path, sha) == []
    (path / "pyproject.toml").write_text('[project]\nname = "demo"\n[tool.kernelgate]\nscreen = 0.5\n')
    assert changed(path, sha) == ["pyproject.toml"]


def test_git_that_cannot_list_the_changes_gives_a_reason(repo: tuple[Path, str]) -> None:
    path, _ = repo
    tree = base_tree(path, "HEAD")
    reason = sideenv.prepare(path, tree, "0" * 40, GateConfig(), print)
    assert isinstance(reason, str)
    assert "git cannot list the files changed since the base 000000000000" in reason
    assert "side_envs = 'always' or 'off'" in reason


@pytest.mark.parametrize(
    ("path", "pattern", "matches"),
    [
        ("requirements.txt", "requirements*.txt", True),
        ("requirements-dev.txt", "requirements*.txt", True),
        ("sub/requirements.txt", "requirements*.txt", False),  # `*` stays in its folder
        ("requirements/gpu.txt", "requirements/*.txt", True),
        ("requirements/extra/gpu.txt", "requirements/*.txt", False),
        ("uv.lock", "*.lock", True),
        ("pkg/uv.lock", "*.lock", False),
        ("pkg/uv.lock", "**/*.lock", True),
        ("uv.lock", "**/*.lock", True),  # `**` is zero or more folders
        ("pyproject.toml", "pyproject.toml", True),
        ("docs/pyproject.toml", "pyproject.toml", False),
        ("environment.yml", "environment.yml", True),
        ("environment.yaml", "environment.yml", False),
    ],
)
def test_dependency_globs(path: str, pattern: str, matches: bool) -> None:
    assert sideenv.matches(path, pattern) is matches


# --- the cache key --------------------------------------------------------------------------------


def test_the_cache_key_follows_the_dependency_files_and_the_command_only(repo: tuple[Path, str]) -> None:
    path, _ = repo

    def key(template: str = PROBE) -> str:
        return sideenv.cache_key(path, DEPENDENCY_FILES, template)

    first = key()
    assert key() == first
    (path / "README.md").write_text("unrelated\n")
    (path / "train.py").write_text("print('unrelated')\n")
    assert key() == first
    (path / "requirements.txt").write_text("fastlib==2\n")  # uncommitted counts here too
    second = key()
    assert second != first
    (path / "requirements").mkdir()
    (path / "requirements" / "gpu.txt").write_text("torch==2.5.1\n")
    assert key() not in (first, second)
    (path / "requirements" / "gpu.txt").unlink()
    assert key() == second
    assert key(PROBE + " --extra") != second
    (path / ".gitignore").write_text("requirements-local.txt\n")  # ignored by git: not the side's
    (path / "requirements-local.txt").write_text("fastlib==3\n")
    assert key() == second  # neither .gitignore nor a file git ignores is a dependency file of the side
    assert sideenv.dependency_files(path, DEPENDENCY_FILES) == ["pyproject.toml", "requirements.txt"]


# --- building, caching and the overlay's contents -------------------------------------------------


def test_an_overlay_is_built_once_then_taken_from_the_cache(repo: tuple[Path, str], cache: Path) -> None:
    path, _ = repo
    gate = GateConfig(env_install=PROBE)
    built = sideenv.overlay("head", path, gate)
    assert isinstance(built, sideenv.Overlay) and built.built
    assert built.path.parent == cache
    assert (built.path / "kgprobe.py").read_text() == "VERSION = 'fastlib==1'"
    assert (built.path / sideenv.MARKER).is_file()
    again = sideenv.overlay("base", path, gate)
    assert isinstance(again, sideenv.Overlay) and not again.built and again.path == built.path
    assert [p.name for p in cache.iterdir()] == [built.path.name]  # no temporary folder left


def test_a_folder_without_its_marker_is_never_taken_as_built(repo: tuple[Path, str], cache: Path) -> None:
    path, _ = repo
    gate = GateConfig(env_install=PROBE)
    half = cache / sideenv.cache_key(path, gate.dependency_files, gate.env_install)
    half.mkdir(parents=True)
    (half / "kgprobe.py").write_text("VERSION = 'half-built'")
    built = sideenv.overlay("base", path, gate)
    assert isinstance(built, sideenv.Overlay) and built.built and built.path == half
    assert (half / "kgprobe.py").read_text() == "VERSION = 'fastlib==1'"


def test_a_failed_build_names_the_side_the_command_its_stderr_and_the_fix(
    repo: tuple[Path, str], cache: Path
) -> None:
    path, _ = repo
    reason = sideenv.overlay("base", path, GateConfig(env_install=FAILS))
    assert isinstance(reason, str)
    assert reason.startswith("the base side's environment could not be built: ")
    assert f"`{sys.executable} -c " in reason
    assert f"(in {path}) exited 3: ERROR: no wheel for fastlib==2." in reason
    assert "Set env_install in [tool.kernelgate]" in reason and "side_envs = 'off'" in reason
    assert "--no-index --find-links DIR" in reason
    assert list(cache.iterdir()) == []  # the half-built folder is gone
    missing = sideenv.overlay("head", path, GateConfig(env_install="no-such-installer {target}"))
    assert isinstance(missing, str) and "could not run: FileNotFoundError" in missing


def test_the_overlay_holds_neither_kernelgate_nor_the_project(repo: tuple[Path, str], cache: Path) -> None:
    path, _ = repo
    fake_install = (
        '{python} -c "import pathlib, sys\n'
        "t = pathlib.Path(sys.argv[1])\n"
        "for name, top in (('kernelgate', 'kernelgate'), ('demo', 'demo'), ('fastlib', 'fastlib')):\n"
        "    (t / top / 'sub').mkdir(parents=True)\n"
        "    (t / top / '__init__.py').write_text('')\n"
        "    (t / top / 'sub' / 'x.py').write_text('')\n"
        "    info = t / (name + '-1.0.dist-info')\n"
        "    info.mkdir()\n"
        "    rows = [top + '/__init__.py,,', top + '/sub/x.py,,', info.name + '/RECORD,,']\n"
        "    rows.append('../../escape.py,,')\n"
        "    (info / 'RECORD').write_text(chr(10).join(rows))\n"
        '" {target}'
    )
    cache.mkdir(parents=True)
    (cache.parent / "escape.py").write_text("outside the overlay: never removed\n")
    built = sideenv.overlay("head", path, GateConfig(env_install=fake_install))
    assert isinstance(built, sideenv.Overlay)
    left = sorted(p.name for p in built.path.iterdir())
    assert left == ["fastlib", "fastlib-1.0.dist-info", sideenv.MARKER]
    assert (cache.parent / "escape.py").is_file()


def test_a_side_finds_its_checkout_then_its_overlay_then_the_environment(tmp_path: Path) -> None:
    found = sideenv.Overlay("base", tmp_path / "env", True, 1.0)
    joined = sideenv.pythonpath(["/base/src", "/base"], found, "/site")
    assert joined.split(os.pathsep) == ["/base/src", "/base", str(tmp_path / "env"), "/site"]
    assert sideenv.pythonpath([], None, None) == ""
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "env"))
    (tmp_path / "env").mkdir()
    line = sideenv.describe(found, env, tmp_path)
    assert line.startswith(f"kernelgate: base environment {tmp_path / 'env'} (built in 1.0 s): torch ")
    assert ", ultralytics " in line


def test_side_envs_off_never_builds_and_always_builds_without_a_change(
    repo: tuple[Path, str], cache: Path
) -> None:
    path, sha = repo
    (path / "requirements.txt").write_text("fastlib==2\n")
    tree = base_tree(path, sha)
    lines: list[str] = []
    off = GateConfig(side_envs=SideEnvs.OFF, env_install=FAILS)
    assert sideenv.prepare(path, tree, sha, off, print) == {}
    assert not cache.exists()
    auto = sideenv.prepare(path, tree, sha, GateConfig(env_install=PROBE), lines.append)
    assert isinstance(auto, dict) and sorted(auto) == ["base", "head"]
    assert (auto["base"].path / "kgprobe.py").read_text() == "VERSION = 'fastlib==1'"
    assert (auto["head"].path / "kgprobe.py").read_text() == "VERSION = 'fastlib==2'"
    assert lines == [
        "kernelgate: the dependency files differ from the base (requirements.txt): each side runs in its "
        "own environment"
    ]
    git(path, "checkout", "--", "requirements.txt")
    assert sideenv.prepare(path, tree, sha, GateConfig(env_install=PROBE), print) == {}
    always = sideenv.prepare(path, tree, sha, GateConfig(side_envs=SideEnvs.ALWAYS, env_install=PROBE), print)
    assert isinstance(always, dict) and always["base"].path == always["head"].path == auto["base"].path


# --- the judge ------------------------------------------------------------------------------------


def test_a_failed_build_makes_every_suspect_inconclusive_with_the_command(
    repo: tuple[Path, str], cache: Path
) -> None:
    path, sha = repo
    (path / "requirements.txt").write_text("fastlib==2\n")
    commit(path, "fastlib 2")
    config = SimpleNamespace(
        rootpath=path,
        invocation_params=SimpleNamespace(args=(), dir=path),
        option=SimpleNamespace(file_or_dir=[]),
    )
    state = SimpleNamespace(config=GateConfig(base=sha, env_install=FAILS))
    screen = compare(measurement({"model.0": 100.0}), measurement({"model.0": 150.0}), GateConfig())
    suspects = [Suspect(f"test_suite.py::test_{n}", KERNEL, screen, {}) for n in ("a", "b")]
    lines: list[str] = []
    judge = Judge(config, state, lines.append)  # type: ignore[arg-type]
    try:
        decisions = judge.run(suspects, {})
    finally:
        judge.close()
    assert sorted(decisions) == ["test_suite.py::test_a", "test_suite.py::test_b"]
    for decision in decisions.values():
        assert decision.outcome is Outcome.INCONCLUSIVE
        assert decision.reason.startswith("the base side's environment could not be built: `")
        assert "ERROR: no wheel for fastlib==2" in decision.reason and "side_envs = 'off'" in decision.reason
    assert any("dependency files differ from the base (requirements.txt)" in line for line in lines)
    assert "kernelgate-judge" not in git(path, "worktree", "list")  # the base checkout was removed
