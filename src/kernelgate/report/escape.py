"""Text from a run put into Markdown (report.md, the merged report, the PR comment): escaped here only.

Benchmark ids, architecture keys, layer, module and kernel names, hints and environment values
come from the suite, the model and the runner, and a merged report reads them from each runner's
``report-data.json``, which pull-request code wrote. None of them may add Markdown or HTML of its
own: ``<script>``, a backtick that closes a code span early, a ``|`` that splits a table cell, a
newline that starts a heading or a table row. :func:`plain` is the one escaping function for text,
:func:`code` the one for inline code; every Markdown renderer calls one of them on every name.
"""

from __future__ import annotations

import re

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones that can start
# markup (emphasis, links, images, HTML, tables, headings, strikethrough, entities).
SPECIAL = "\\`*_[]<>|#~!&"
_BREAKS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_TICKS = re.compile(r"`+")


def one_line(text: str) -> str:
    """Line breaks and other control characters as one space: a name stays on its line."""
    return _BREAKS.sub(" ", str(text))


def plain(text: str) -> str:
    """Text with every character that could start Markdown or HTML escaped; shown as it is."""
    text = one_line(text)
    for char in SPECIAL:
        text = text.replace(char, "\\" + char)
    return text


def code(text: str) -> str:
    """Inline code that survives a table cell: pipes escaped, fenced by more backticks than it holds."""
    text = one_line(text).replace("|", "\\|")
    longest = max((len(run) for run in _TICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest or text.startswith(" ") or text.endswith(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


_SPAN = re.compile(r"(`+)( ?)(.*?)\2\1")
_ESCAPED = re.compile(r"\\([" + re.escape(SPECIAL) + r"])")


def text(markdown: str) -> str:
    """A line that :func:`plain` and :func:`code` wrote, back as plain text (for a terminal): code
    fences dropped, escapes undone."""
    out, last = [], 0
    for span in _SPAN.finditer(markdown):
        out.append(_ESCAPED.sub(r"\1", markdown[last : span.start()]))
        out.append(span.group(3).replace("\\|", "|"))
        last = span.end()
    out.append(_ESCAPED.sub(r"\1", markdown[last:]))
    return "".join(out)
