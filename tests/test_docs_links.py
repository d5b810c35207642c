"""The README stays short and the docs stay reachable: README.md has at most 250 lines, docs/README.md
(the index, linked from the README) links every file in docs/, and every relative link in README.md
and docs/*.md names a file that exists and, where it has one, a heading of that file (GitHub's
anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
MARKDOWN = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def prose(text: str) -> str:
    """The text outside fenced code blocks and inline code: what Markdown renders as links."""
    kept, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(kept)


def anchors(path: Path) -> set[str]:
    """GitHub's anchor of each heading: lower case, punctuation dropped, spaces to hyphens, -1, -2 …
    for a repeated one."""
    found: set[str] = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        heading = re.match(r"#{1,6} (.+)", line)
        if fenced or not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        unique, n = slug, 0
        while unique in found:
            n += 1
            unique = f"{slug}-{n}"
        found.add(unique)
    return found


def links(path: Path) -> list[str]:
    targets = LINK.findall(prose(path.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t)]  # relative: no https:, mailto:


def test_the_readme_has_at_most_250_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the rest to docs/ and link it"


def test_the_readme_links_the_docs_index_and_the_index_links_every_doc() -> None:
    assert "docs/README.md" in links(ROOT / "README.md")
    indexed = {target.split("#", 1)[0] for target in links(DOCS / "README.md")}
    files = sorted(p.name for p in DOCS.iterdir() if p.is_file() and p.name != "README.md")
    unlinked = [name for name in files if name not in indexed]
    assert not unlinked, f"docs/README.md links none of: {unlinked}"


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_a_file_and_a_heading_that_exist(path: Path) -> None:
    broken = []
    for target in links(path):
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no such heading in {linked.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n## A `code` heading, 2 %\n\n```\n# not a heading\n```\n")
    assert anchors(page) == {"top", "a-code-heading-2-"}
    page.write_text("[a](gone.md) `[b](skipped.md)` [c](page.md#top) [d](https://example.com)\n")
    assert links(page) == ["gone.md", "page.md#top"]
