"""Runs that save into the same baseline file at the same time lose nothing.

Each writer is a separate Python process (as two CI jobs or two pytest runs would be) calling
``baseline.save``: read the file, merge its own benchmarks, write it back. The lock around that
read-merge-write is what keeps every entry; the first test shows that without it entries are lost,
so the other tests can fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from factories import ARCH

from kernelgate.baseline.store import FILE_NAME

TESTS = Path(__file__).parent

WRITER = """
import contextlib, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from factories import entry, measurement
from kernelgate.baseline import store as baseline

path, go, writer, saves, delay, lock = Path(sys.argv[1]), Path(sys.argv[2]), *map(float, sys.argv[3:])
if not lock:
    baseline.locked = lambda *a, **k: contextlib.nullcontext()
write = baseline.write_atomic

def slow_write(p, text):
    time.sleep(delay)  # widen the window between reading the file and writing it back
    write(p, text)

baseline.write_atomic = slow_write
while not go.exists():
    time.sleep(0.005)
for i in range(int(saves)):
    name = f"bench/test_w.py::test_w[{{int(writer)}}-{{i}}]"
    m = measurement({{"model.0": 100.0 + writer}}, benchmark=f"w{{int(writer)}}-{{i}}")
    baseline.save(
        path, [entry(name, m)], arch={arch!r}, machine_info={{}}, commit_info={{}},
        created="2026-11-21T00:00:00+00:00", pytest_benchmark_version="5.2.3",
    )
"""


def run_writers(tmp_path: Path, writers: int, saves: int, delay: float, lock: bool) -> set[str]:
    path = tmp_path / ARCH / FILE_NAME
    go = tmp_path / "go"
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(tests=str(TESTS), arch=ARCH), encoding="utf-8")
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), str(go), str(w), str(saves), str(delay), str(int(lock))],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    time.sleep(0.5)  # let every writer import and wait at the start line
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    data = json.loads(path.read_text(encoding="utf-8"))
    return {b["fullname"] for b in data["benchmarks"]}


def expected(writers: int, saves: int) -> set[str]:
    return {f"bench/test_w.py::test_w[{w}-{i}]" for w in range(writers) for i in range(saves)}


def test_without_the_lock_concurrent_saves_lose_entries(tmp_path: Path) -> None:
    """The control: all writers read the file before any writes it back, so most entries are lost."""
    found = run_writers(tmp_path, writers=4, saves=1, delay=0.5, lock=False)
    assert found < expected(4, 1)


def test_with_the_lock_concurrent_saves_keep_every_entry(tmp_path: Path) -> None:
    found = run_writers(tmp_path, writers=4, saves=1, delay=0.5, lock=True)
    assert found == expected(4, 1)


def test_many_concurrent_saves_keep_every_entry_and_leave_a_valid_file(tmp_path: Path) -> None:
    found = run_writers(tmp_path, writers=6, saves=8, delay=0.0, lock=True)
    assert found == expected(6, 8)
    leftovers = sorted(p.name for p in (tmp_path / ARCH).iterdir())
    # no temporary files left behind: the lock, the main file, its samples file and the summary
    assert leftovers == [f".{FILE_NAME}.lock", FILE_NAME, "0001_kernelgate.samples.json.xz", "SUMMARY.md"]
