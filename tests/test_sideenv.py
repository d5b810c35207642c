"""Each side of the same-host A/B in its own environment when base and head declare different
dependencies (kernelgate.plugin.sideenv): which files count, the cache key, a failed build, and end
to end on the CPU a head whose requirements.txt pins a "package" that slows the model: measured in
the runner's environment alone both sides would be slow and agree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kernelgate.config import DEPENDENCY_FILES, ConfigError, from_table
from kernelgate.plugin import sideenv


def git(path: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args],
        cwd=path, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


def repo(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "requirements.txt").write_text("probe==1\n")
    (tmp_path / "model.py").write_text("x = 1\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    return tmp_path, git(tmp_path, "rev-parse", "HEAD")


def test_only_dependency_files_count_committed_or_not(tmp_path: Path) -> None:
    root, base = repo(tmp_path)
    (root / "model.py").write_text("x = 2\n")
    assert sideenv.changed(root, base, DEPENDENCY_FILES) == []
    (root / "requirements.txt").write_text("probe==2\n")  # not committed
    assert sideenv.changed(root, base, DEPENDENCY_FILES) == ["requirements.txt"]
    git(root, "commit", "-qam", "pin probe 2")
    (root / "uv.lock").write_text("lock\n")  # new, untracked
    (root / "requirements").mkdir()
    (root / "requirements" / "gpu.txt").write_text("torch\n")
    assert sideenv.changed(root, base, DEPENDENCY_FILES) == [
        "requirements.txt",
        "requirements/gpu.txt",
        "uv.lock",
    ]


def test_the_cache_key_follows_the_dependency_files_and_the_command(tmp_path: Path) -> None:
    root, _ = repo(tmp_path)
    first = sideenv.key(root, DEPENDENCY_FILES, "install {target}")
    (root / "model.py").write_text("x = 3\n")
    assert sideenv.key(root, DEPENDENCY_FILES, "install {target}") == first
    assert sideenv.key(root, DEPENDENCY_FILES, "other {target}") != first
    (root / "requirements.txt").write_text("probe==2\n")
    assert sideenv.key(root, DEPENDENCY_FILES, "install {target}") != first


PROBE = (
    '{python} -c "import pathlib, sys; t = pathlib.Path(sys.argv[1]); t.mkdir(parents=True); '
    "(t / 'kgprobe.py').write_text('PINNED = ' + repr(open('requirements.txt').read().strip()))\" {target}"
)


def test_an_overlay_is_built_once_then_taken_from_the_cache(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    root, _ = repo(tmp_path / "tree")
    cache = tmp_path / "cache"
    made = sideenv.build("base", root, DEPENDENCY_FILES, PROBE, cache)
    assert isinstance(made, sideenv.Overlay) and made.built
    assert (made.path / "kgprobe.py").read_text() == "PINNED = 'probe==1'"
    again = sideenv.build("base", root, DEPENDENCY_FILES, PROBE, cache)
    assert isinstance(again, sideenv.Overlay) and not again.built and again.path == made.path
    assert [p.name for p in cache.iterdir()] == [made.path.name]  # no partial folder left


def test_a_failed_build_says_which_side_the_command_and_what_to_do(tmp_path: Path) -> None:
    root, _ = repo(tmp_path)
    command = "{python} -c \"import sys; print('no such package: probe==1'); sys.exit(3)\" {target}"
    why = sideenv.build("head", root, DEPENDENCY_FILES, command, tmp_path / "cache")
    assert isinstance(why, str)
    assert "the head's environment failed (exit 3)" in why and "no such package: probe==1" in why
    assert sys.executable in why and "env_install" in why and 'side_envs = "off"' in why
    assert not any((tmp_path / "cache").iterdir())  # nothing half-built is kept


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"side_envs": "sometimes"}, "must be 'auto'"),
        ({"env_install": "pip install -r requirements.txt"}, "must be a command with {target}"),
        ({"dependency_files": "requirements.txt"}, "must be a list of file patterns"),
    ],
)
def test_side_env_settings_are_checked(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("{", r"\{").replace("(", r"\(")):
        from_table(table, "[tool.kernelgate]", Path("."))
    ok = from_table(
        {"side_envs": "always", "dependency_files": ["deps/*.txt"]}, "[tool.kernelgate]", Path(".")
    )
    assert ok.side_envs == "always" and ok.dependency_files == ("deps/*.txt",)


PYPROJECT = """
[tool.kernelgate]
layer_threshold = "100%"
kernel_threshold = "100%"
total_threshold = "100%"
floor_us = 300.0
kernel_floor_us = 300.0
confirm_min_rounds = 2
confirm_max_rounds = 2
env_install = '''PROBE_COMMAND'''
"""

# every process imports kgprobe from wherever its PYTHONPATH says; "probe==2" makes Upsample 30x slower
CONFTEST = """
import os, sys
import kgprobe
import torch

with open(os.environ["KG_SIDES"], "a") as f:
    f.write(("child " if any(a.startswith("--kernelgate-confirm-out") for a in sys.argv) else "parent ")
            + kgprobe.PINNED + "\\n")
if kgprobe.PINNED == "probe==2":
    _forward = torch.nn.Upsample.forward

    def _slow(self, x):
        for _ in range(30):
            _forward(self, x)
        return _forward(self, x)

    torch.nn.Upsample.forward = _slow
"""


@pytest.mark.slow
def test_a_dependency_pinned_in_the_head_is_measured_against_the_bases_own(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytest.importorskip("ultralytics")
    pytester.makepyprojecttoml(PYPROJECT.replace("PROBE_COMMAND", PROBE))
    pytester.makepyfile(test_suite="def test_yolo(kernelgate):\n    kernelgate.yolo(model='yolov8n', "
                        "precision='fp32', batch=1, imgsz=64)\n")  # fmt: skip
    pytester.makeconftest(CONFTEST)
    pytester.path.joinpath(".gitignore").write_text(".kernelgate/\n")
    pytester.path.joinpath("requirements.txt").write_text("probe==1\n")
    sides = tmp_path / "sides.txt"
    monkeypatch.setenv("KG_SIDES", str(sides))
    monkeypatch.setenv("KERNELGATE_CACHE", str(tmp_path / "cache"))
    runner_env = tmp_path / "runner"  # what the CI job installed: the base's pin, then the head's
    runner_env.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(runner_env))
    args = ("-p", "no:cacheprovider", "--kernelgate-device=cpu", "--benchmark-min-rounds=3")

    (runner_env / "kgprobe.py").write_text("PINNED = 'probe==1'")
    git(pytester.path, "init", "-q", "-b", "main")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "base")
    pytester.runpytest_subprocess(*args, "--kernelgate-save").assert_outcomes(passed=1)
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-qm", "baseline")
    git(pytester.path, "checkout", "-q", "-b", "pr")
    pytester.path.joinpath("requirements.txt").write_text("probe==2\n")  # the upgrade under review
    git(pytester.path, "commit", "-qam", "pin probe 2")
    (runner_env / "kgprobe.py").write_text("PINNED = 'probe==2'")
    sides.unlink()

    result = pytester.runpytest_subprocess(*args)
    out = result.stdout.str()
    assert "requirements.txt differ between base and head: the base runs with its own packages" in out
    assert sides.read_text().split("\n").count("child probe==1") == 2  # the base's 2 rounds
    assert sides.read_text().split("\n").count("child probe==2") == 2  # the head's
    result.stdout.fnmatch_lines(["*REGRESSION (same-host A/B): base -> head on this runner: *model.1*"])
    assert result.ret == 1
