"""Every relative link of README.md and docs/ resolves: the file exists and so does the #anchor."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from tests.docs.markdown import REPO, anchors, documents, links, slug


def test_every_relative_link_resolves():
    broken = []
    for doc in documents():
        for number, target in links(doc):
            parts = urlsplit(target)
            if parts.scheme or target.startswith("//"):
                continue  # an absolute address: not this repository's to check
            path = (doc.parent / unquote(parts.path)).resolve() if parts.path else doc
            where = f"{doc.relative_to(REPO)}:{number}: {target}"
            if not path.exists():
                broken.append(f"{where}: no such file")
            elif parts.fragment and (path.suffix != ".md" or parts.fragment not in anchors(path)):
                broken.append(f"{where}: no anchor #{parts.fragment}")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_link_checker_finds_what_is_broken(tmp_path: Path):
    doc = tmp_path / "page.md"
    doc.write_text(
        "# A `code` title: here\n\n## Same\n\n## Same\n\n<a id=\"ka601\"></a>\n\n"
        "[ok](#a-code-title-here) [ok](#same-1) [ok](#ka601) `[not a link](nowhere.md)`\n\n"
        "```\n[in a fence](gone.md)\n```\n[gone](gone.md) [bad](#nothing) [web](https://example.org/x#y)\n",
        encoding="utf-8",
    )
    assert anchors(doc) == {"a-code-title-here", "same", "same-1", "ka601"}
    assert [t for _n, t in links(doc)] == [
        "#a-code-title-here",
        "#same-1",
        "#ka601",
        "gone.md",
        "#nothing",
        "https://example.org/x#y",
    ]
    assert slug("`audit --export-lost DIR`: lost-records.jsonl and lost-records.parquet") == (
        "audit---export-lost-dir-lost-recordsjsonl-and-lost-recordsparquet"
    )
