"""The file system under a baseline: folders where files belong, leftovers of a killed writer, and
symbolic links that lead out of the baseline folder (kernelgate.baseline.files)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from factories import ARCH, META, V8, entry

from kernelgate.baseline import store as baseline
from kernelgate.baseline.store import FILE_NAME, BaselineError
from kernelgate.config import GateConfig
from kernelgate.plugin.session import Options, State

REPO = Path(__file__).resolve().parents[1]


def save(path: Path, **kwargs: Any) -> list[str]:
    return baseline.save(path, [entry(V8)], arch=ARCH, **META, **kwargs)


# --- a folder where a file belongs ----------------------------------------------------------------


def test_a_baseline_path_that_is_a_folder_gives_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    path.mkdir(parents=True)
    for attempt in (lambda: save(path, replace_unreadable=True), lambda: baseline.load(path)):
        with pytest.raises(BaselineError) as info:  # was IsADirectoryError from os.replace
            attempt()
        assert str(info.value) == (
            f"{path} is a folder, not a baseline file: nothing is read from it or written to it. Move it "
            f"away (mv {path} {path}.old) and run again."
        )
        assert info.value.replaceable is False
    assert path.is_dir()


def test_a_lock_path_that_is_a_folder_gives_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    baseline.lock_path(path).mkdir(parents=True)
    with pytest.raises(BaselineError) as info:  # was IsADirectoryError from filelock
        save(path)
    lock = baseline.lock_path(path)
    assert str(info.value) == (
        f"{path}: {lock} cannot be opened or created (IsADirectoryError: Is a directory); it is a folder, "
        f"not a file: move it away (mv {lock} {lock}.old), then run again. Nothing was written."
    )
    assert not path.exists()


def test_a_write_that_fails_is_a_baseline_error_and_the_file_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ARCH / FILE_NAME
    save(path)
    before = path.read_text()

    def full(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(BaselineError, match=r"could not be written \(OSError: No space left on device\)"):
        save(path)
    assert path.read_text() == before


# --- what a killed writer leaves -------------------------------------------------------------------


def leftover(path: Path, name: str, age_s: float) -> Path:
    tmp = path.parent / f".{FILE_NAME}.{name}.tmp"
    tmp.write_text('{"half": ')
    then = time.time() - age_s
    os.utime(tmp, (then, then))
    return tmp


def test_temporary_files_of_a_killed_writer_are_ignored_and_removed_when_stale(tmp_path: Path) -> None:
    path = tmp_path / ARCH / FILE_NAME
    save(path)
    stale, fresh = leftover(path, "k1ll3d", 3600), leftover(path, "wr1t1ng", 1)
    # readers look at the baseline file only
    assert list(baseline.load(path)) == [V8]
    state = State(GateConfig(baseline_dir=tmp_path), Options())
    assert list(state.baseline_entries(path, ARCH)) == [V8]

    assert baseline.recorded_keys(tmp_path) == [ARCH]
    # a save (under the lock) removes what is older than a minute; a live writer's file stays
    notes = save(path)
    assert notes == [f"removed 1 temporary file(s) a killed writer left: {stale.name}, ..."]
    assert not stale.exists() and fresh.exists()


def test_git_ignores_the_temporary_and_lock_files_of_baselines() -> None:
    names = [
        f"baselines/{ARCH}/.{FILE_NAME}.a1b2c3.tmp",
        f"baselines/{ARCH}/.{FILE_NAME}.lock",
        f"baselines/{ARCH}/{FILE_NAME}",
    ]
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", *names], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.stdout.splitlines() == names[:2]


# --- symbolic links out of the baseline folder -------------------------------------------------------


def test_a_baseline_file_linked_to_outside_is_neither_read_nor_written(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "victim.json"
    save(outside)  # a valid baseline, somewhere else
    before = outside.read_text()
    root = tmp_path / "baselines"
    path = root / ARCH / FILE_NAME
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    with pytest.raises(BaselineError) as info:
        save(path)
    assert str(info.value).startswith(
        f"{path} is a symbolic link to {outside}, outside the baseline folder {root}: kernelgate reads "
        "and writes baselines only inside it"
    )
    assert f"(rm {path} && cp -r {outside} {path})" in str(info.value)
    assert outside.read_text() == before
    with pytest.raises(BaselineError, match="is a symbolic link to"):
        baseline.load(path, ARCH, root=root)
    state = State(GateConfig(baseline_dir=root), Options())  # how the plugin reads it
    with pytest.raises(BaselineError, match="is a symbolic link to"):
        state.baseline_entries(path, ARCH)


def test_an_arch_folder_linked_to_outside_is_neither_read_nor_written(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    root = tmp_path / "baselines"
    root.mkdir()
    (root / ARCH).symlink_to(outside, target_is_directory=True)
    path = root / ARCH / FILE_NAME
    with pytest.raises(BaselineError, match=rf"{root / ARCH} is a symbolic link to {outside}, outside"):
        save(path)
    assert list(outside.iterdir()) == []  # not even a lock file
    state = State(GateConfig(baseline_dir=root), Options())
    with pytest.raises(BaselineError, match="is a symbolic link to"):
        state.baseline_entries(path, ARCH)


def test_links_inside_the_baseline_folder_and_a_linked_baseline_folder_are_fine(tmp_path: Path) -> None:
    real = tmp_path / "shared-baselines"
    (real / "sm90-nvidia-h200-old").mkdir(parents=True)
    root = tmp_path / "baselines"
    root.symlink_to(real, target_is_directory=True)  # the configured folder itself may be a link
    (root / ARCH).symlink_to(root / "sm90-nvidia-h200-old", target_is_directory=True)
    path = root / ARCH / FILE_NAME
    assert save(path) == []
    assert list(baseline.load(path, ARCH, root=root)) == [V8]
