"""Headless Chromium (Debian's package) for the HTML report's tests: a screenshot and the rendered DOM."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

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


# Laid out in an iframe of the given width (the report forbids scripts of its own; the page around it
# measures it): every <details> opened, then what a reader at that width would meet.
LAYOUT_PAGE = """<!doctype html><html><body style="margin:0">
<iframe id="f" src="REPORT" scrolling="no" style="width:WIDTHpx;height:30000px;border:0"></iframe>
<pre id="out">not measured</pre>
<script>
window.addEventListener("load", () => {
  const d = document.getElementById("f").contentDocument;
  d.querySelectorAll("details").forEach(x => { x.open = true; });
  const out = {viewport: d.documentElement.clientWidth, page: d.documentElement.scrollWidth, pieces: 0,
               split: [], names: 0, wrapped: 0, bad_breaks: [], boxes: []};
  for (const nb of d.querySelectorAll(".nb")) {
    out.pieces++;
    if (nb.getClientRects().length !== 1) out.split.push(nb.textContent);
  }
  for (const code of d.querySelectorAll("td.names code")) {
    const parts = [...code.querySelectorAll(".nb")];
    if (!parts.length) continue;
    out.names++;
    let lines = 1;
    for (let i = 1; i < parts.length; i++) {
      const top = (n) => Math.round(n.getBoundingClientRect().top);
      if (top(parts[i]) > top(parts[i - 1])) {
        lines++;
        const before = parts[i - 1].textContent;
        const allowed = ["::", "<", ","].some(end => before.endsWith(end));
        if (!allowed) out.bad_breaks.push(before);
      }
    }
    if (lines > 1) out.wrapped++;
  }
  for (const box of d.querySelectorAll(".scroll")) {
    if (box.scrollWidth <= box.clientWidth + 1) continue;
    const widest = Math.max(0, ...[...box.querySelectorAll(".nb")].map(n => n.getBoundingClientRect().width));
    if (widest <= box.clientWidth) out.boxes.push((box.querySelector("th") || box).textContent.slice(0, 60));
  }
  document.getElementById("out").textContent = JSON.stringify(out);
});
</script></body></html>
"""


def layout(browser: str, page: Path, width: int, profile: Path) -> dict[str, Any]:
    """How ``page`` lays out ``width`` px wide (:data:`LAYOUT_PAGE`): the page's and the viewport's
    width, the unbreakable pieces of names (``.nb``) and those split over lines, the kernel names and
    those wrapped, wraps after anything but ``::``, ``<`` or ``,``, and the table boxes that scroll
    sideways for a reason other than one piece wider than the box."""
    harness = page.with_name(f"layout-{width}.html")
    harness.write_text(
        LAYOUT_PAGE.replace("REPORT", page.name).replace("WIDTH", str(width)), encoding="utf-8"
    )
    text = run(
        browser, harness, profile, "--allow-file-access-from-files", "--window-size=1600,1200", "--dump-dom"
    )
    found = re.search(r'<pre id="out">(.*?)</pre>', text, re.S)
    assert found and found.group(1) != "not measured", text[-2000:]
    data: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return data
