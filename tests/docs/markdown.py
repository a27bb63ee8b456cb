"""Reading the project's Markdown as GitHub renders it: the documents, their links and their anchors."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r'(?<!\!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+(?:\([^()]*\))?[^()\s]*)(?:\s+"[^"]*")?\)')
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def documents() -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def text_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of ``path`` outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: markup dropped, lower case, punctuation other than ``-`` and ``_``
    removed, each space a ``-``."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a document: its headings (a repeated heading gets ``-1``, ``-2``...) and its
    ``<a id>`` tags."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _number, line in text_lines(path):
        out.update(HTML_ID.findall(line))
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link and image outside code."""
    out = []
    for number, line in text_lines(path):
        plain = CODE_SPAN.sub("", line)
        out += [(number, target) for target in LINK.findall(plain)]
        out += [(number, target) for target in IMAGE.findall(plain)]
    return out
