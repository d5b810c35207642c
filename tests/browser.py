"""Headless Chromium (Debian's package) for the HTML report's tests: a screenshot and the rendered DOM."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
)


def find() -> str:
    """The browser; skipped only where none can be installed (no apt-get), failed in CI otherwise."""
    found = os.environ.get("KERNELGATE_BROWSER") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
    )
    if found:
        return found
    if os.environ.get("CI") and shutil.which("apt-get"):
        pytest.fail(
            "no Chromium in CI although apt-get exists: .ci/run installs it (apt-get install chromium)"
        )
    pytest.skip("no Chromium here: apt-get install chromium")


def run(browser: str, page: Path, profile: Path, *args: str) -> str:
    result = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, f"{browser} exited {result.returncode}: {result.stderr[-2000:]}"
    return result.stdout


def screenshot(browser: str, page: Path, png: Path, profile: Path, size: tuple[int, int]) -> None:
    run(browser, page, profile, f"--window-size={size[0]},{size[1]}", f"--screenshot={png}")
    assert png.is_file(), f"{browser} wrote no screenshot to {png}"


def dom(browser: str, page: Path, profile: Path) -> str:
    return run(browser, page, profile, "--dump-dom")
