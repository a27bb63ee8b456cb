"""The audit HTML page in a real headless browser: Chromium renders the page of a simulated unclean election
(``kafka-auditor simulate unclean-election --seed 7`` then ``audit -f html``, in-process on the session
SparkSession: the session's one audit of it rendered as HTML); the screenshot's pixels hold the divergence
marker's colour (the PNG decoded here with zlib and struct), a clean scan's screenshot holds none, and
``--dump-dom`` shows the page's filter script ran. The ``report`` page of a simulated month (the Makefile's
``demo-history``) is measured as laid out at 1280x1000: the verdict and the findings fit in three screens
above the charts, which stay folded per topic.

Skipped, with the reason, when no Chromium is found ($CHROMIUM, /usr/bin/chromium, or chromium,
chromium-browser, google-chrome on PATH). The screenshot is kept under the test's tmp_path (printed).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.report.epoch_chart import DIVERGENCE_COLOUR
from tests.report.test_findings_page import well_formed

pytestmark = pytest.mark.spark

BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
UNCLEAN_CODES = {"KA601", "KA620", "KA702", "KA704", "KA710"}


def find_browser() -> str | None:
    """$CHROMIUM, /usr/bin/chromium, or the first of :data:`BROWSER_NAMES` on PATH."""
    given = os.environ.get("CHROMIUM")
    if given and (os.path.isfile(given) or shutil.which(given)):
        return shutil.which(given) or given
    if os.path.isfile("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    return next((shutil.which(n) for n in BROWSER_NAMES if shutil.which(n)), None)


@pytest.fixture(scope="module")
def browser() -> str:
    found = find_browser()
    if found is None:
        pytest.skip(
            "no headless browser: set $CHROMIUM or install chromium (checked /usr/bin/chromium, PATH)"
        )
    return found


def headless(browser: str, profile: Path, *args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    """Chromium headless, offline, with its own profile directory."""
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def screenshot(browser: str, page: Path, png: Path, profile: Path) -> Path:
    done = headless(browser, profile, "--window-size=1400,2400", f"--screenshot={png}", page.as_uri())
    assert png.is_file() and png.stat().st_size > 0, done.stderr[-2000:]
    print(f"screenshot: {png}")
    return png


# ---------------------------------------------------------------------------------------------------- PNG


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def decode_png(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, bytes per pixel and the rows of an 8-bit, non-interlaced RGB or RGBA PNG (what
    Chromium writes), from the PNG specification: chunks, zlib-compressed IDAT, the five row filters."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, bytearray(), None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert header is not None
    width, height, depth, colour_type, _, _, interlace = header
    assert depth == 8 and colour_type in (2, 6) and interlace == 0, header
    bpp = 3 if colour_type == 2 else 4
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    low = int.from_bytes(b"\x7f" * stride, "big")
    high = int.from_bytes(b"\x80" * stride, "big")
    rows: list[bytes] = []
    prev = bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif kind == 2:  # Up: bytewise addition without carries (SWAR on one big integer)
            a, b = int.from_bytes(line, "big"), int.from_bytes(prev, "big")
            line = bytearray((((a & low) + (b & low)) ^ ((a ^ b) & high)).to_bytes(stride, "big"))
        elif kind == 3:  # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:  # Paeth
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                corner = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prev[i], corner)) & 0xFF
        else:
            assert kind == 0, kind
        rows.append(bytes(line))
        prev = rows[-1]
    return width, height, bpp, rows


def pixels_of(png: Path, colour: str, tolerance: int = 6) -> list[tuple[int, int]]:
    """(x, y) of every pixel within ``tolerance`` of ``colour`` (``#rrggbb``) on each channel."""
    target = bytes.fromhex(colour.lstrip("#"))
    width, _height, bpp, rows = decode_png(png.read_bytes())
    hits = []
    for y, row in enumerate(rows):
        if tolerance == 0 and target not in row:
            continue
        for x in range(width):
            px = row[x * bpp : x * bpp + 3]
            if all(abs(px[c] - target[c]) <= tolerance for c in range(3)):
                hits.append((x, y))
    return hits


def test_png_decoder_reads_every_filter():
    """Rows written with each of the five filters decode to the same pixels (checked on a PNG built here)."""
    width, bpp = 5, 3
    rows = [
        bytes(v for x in range(width) for v in ((x * 40 + y) % 256, 255 - x * 30 - y, (x * y * 17) % 256))
        for y in range(5)
    ]

    def filtered(kind: int, line: bytes, prev: bytes) -> bytes:
        out = bytearray()
        for i, v in enumerate(line):
            left = line[i - bpp] if i >= bpp else 0
            corner = prev[i - bpp] if i >= bpp else 0
            pred = (0, left, prev[i], (left + prev[i]) >> 1, _paeth(left, prev[i], corner))[kind]
            out.append((v - pred) & 0xFF)
        return bytes([kind]) + bytes(out)

    raw = b"".join(filtered(y, rows[y], rows[y - 1] if y else bytes(width * bpp)) for y in range(5))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, 5, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    assert decode_png(png) == (width, 5, bpp, rows)


# -------------------------------------------------------------------------------------------------- pages


@pytest.fixture(scope="module")
def unclean_audit_page(unclean_audit, tmp_path_factory) -> Path:
    """``audit -f html -o`` of ``simulate unclean-election --seed 7``: the session's audit of it
    (``unclean_audit``, tests/conftest.py) rendered through the CLI as HTML (once for the module)."""
    page = tmp_path_factory.mktemp("html-browser") / "audit.html"
    done = unclean_audit.again("--format", "html", "--output", str(page))
    assert done.exit_code == 1, done.output  # critical and error findings: exit 1
    return page


@pytest.fixture(scope="module")
def clean_scan_page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("html-browser-clean")
    runner = CliRunner()
    done = runner.invoke(app, ["simulate", "clean", "--out", str(root / "clean"), "--seed", "7"])
    assert done.exit_code == 0, done.output
    page = root / "scan.html"
    done = runner.invoke(app, ["scan", str(root / "clean"), "--format", "html", "--output", str(page)])
    assert done.exit_code == 0, done.output
    return page


def test_audit_page_of_an_unclean_election(unclean_audit_page):
    """The real audit's page (no browser needed): well-formed, its findings, the timeline with the marker."""
    page = unclean_audit_page.read_text(encoding="utf-8")
    parsed = well_formed(page)
    codes = {re.search(r"KA\d{3}", f["text"]).group(0) for f in parsed.findings}
    assert codes == UNCLEAN_CODES
    assert parsed.findings[0]["severity"] == "critical"  # KA710, the committed loss, first
    diverged = page[page.index('id="diverged"') :]
    diverged = diverged[: diverged.index("</section>")]
    assert 'data-first-divergent-offset="500"' in diverged and "first divergent offset 500" in diverged
    assert diverged.count('class="lane"') == 3 and "UNCLEAN election" in diverged
    assert "Which replica to elect" in diverged


def test_screenshot_shows_the_divergence_marker(browser, unclean_audit_page, clean_scan_page, tmp_path):
    png = screenshot(browser, unclean_audit_page, tmp_path / "audit-html.png", tmp_path / "profile")
    print(f"screenshot: {png}")
    marker = pixels_of(png, DIVERGENCE_COLOUR)
    # a vertical line: many pixels of the colour, stacked in a narrow column
    assert len(marker) >= 100, f"{len(marker)} pixels of {DIVERGENCE_COLOUR} in {png}"
    xs = sorted({x for x, _ in marker})
    ys = [y for _, y in marker]
    assert max(ys) - min(ys) >= 80, (min(ys), max(ys))
    column = max(xs, key=lambda x: sum(1 for px, _ in marker if px == x))
    assert sum(1 for px, _ in marker if px == column) >= 60
    # the control: a clean scan's page has nothing of that colour
    clean = screenshot(browser, clean_scan_page, tmp_path / "clean-scan.png", tmp_path / "profile")
    assert pixels_of(clean, DIVERGENCE_COLOUR) == []


def test_dump_dom_shows_the_filter_script_ran(browser, unclean_audit_page, tmp_path):
    done = headless(browser, tmp_path / "profile", "--dump-dom", unclean_audit_page.as_uri())
    dom = done.stdout
    assert "<html" in dom, done.stderr[-2000:]
    root = re.search(r"<html[^>]*>", dom).group(0)
    # set by the page's script once the filter ran over the findings (not in the file itself)
    assert 'data-filter="ready"' in root and 'data-shown="6"' in root, root
    assert 'data-filter="' not in unclean_audit_page.read_text(encoding="utf-8").split("<head>")[0]


# ------------------------------------------------------------------------------------ a month's report page

SCREEN = (1280, 1000)
MAX_ABOVE_CHARTS = 3 * SCREEN[1]
"""The verdict and the findings of a month fit in three screens: the charts start above this (px)."""
MEASURE = """<script>(function(){
var root=document.documentElement, y=window.scrollY;
function top(el){return el?Math.round(el.getBoundingClientRect().top+y):-1;}
var topic=document.querySelector('details.topic'), chart=document.querySelector('svg.chart');
root.setAttribute('data-history-top',String(top(document.getElementById('history'))));
root.setAttribute('data-topic-top',String(top(topic)));
root.setAttribute('data-topic-open',String(topic?topic.open:null));
root.setAttribute('data-topic-height',String(topic?Math.round(topic.getBoundingClientRect().height):-1));
root.setAttribute('data-chart-visible',String(chart&&chart.checkVisibility?chart.checkVisibility():null));
root.setAttribute('data-entries',String(document.querySelectorAll('#findings .finding').length));
})();</script>"""


@pytest.fixture(scope="module")
def month_page(browser, spark, tmp_path_factory) -> Path:
    """``simulate history --days 30 --seed 7``, ``ingest`` and ``report --all -f html`` (the Makefile's
    ``demo-history``; ingest and report on the session SparkSession)."""
    root = tmp_path_factory.mktemp("html-browser-month")
    runner = CliRunner()
    steps = [
        ["simulate", "history", "--out", str(root / "captures"), "--days", "30", "--seed", "7"],
        ["ingest", str(root / "captures" / "archives"), "--into", str(root / "wh"), "--master", "local[2]"],
        ["report", "--warehouse", str(root / "wh"), "--all", "--format", "html"]
        + ["--output", str(root / "month.html"), "--exit-zero", "--master", "local[2]"],
    ]
    for step in steps:
        done = runner.invoke(app, step)
        assert done.exit_code == 0, (step, done.output)
    return root / "month.html"


def laid_out(browser: str, page: Path, profile: Path) -> dict[str, str]:
    """The ``data-*`` measures :data:`MEASURE` takes of ``page`` laid out at :data:`SCREEN` (a copy of the
    page with the script added before ``</body>``; its CSP allows inline scripts)."""
    probe = page.with_name(page.stem + "-measured.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8"
    )
    size = f"--window-size={SCREEN[0]},{SCREEN[1]}"
    done = headless(browser, profile, size, "--dump-dom", probe.as_uri())
    root = re.search(r"<html[^>]*>", done.stdout)
    assert root is not None, done.stderr[-2000:]
    return dict(re.findall(r'data-([\w-]+)="([^"]*)"', root.group(0)))


def test_a_months_report_page_answers_within_three_screens(browser, month_page, tmp_path):
    page = month_page.read_text(encoding="utf-8")
    parsed = well_formed(page)
    assert [i for i in parsed.ids() if i in ("verdict", "findings", "history")] == [
        "verdict",
        "findings",
        "history",
    ]
    # the re-created topic: one finding for its 24 topic-id changes (8 partitions, 3 replicas each)
    [recreated] = [b for b in parsed.findings if "KA814" in b["text"]]
    assert "on 8 partitions (0, 1, 2, 3, 4, 5, 6, 7)" in recreated["text"], recreated["text"]
    measured = laid_out(browser, month_page, tmp_path / "profile")
    print(f"measured at {SCREEN}: {measured}")
    entries = int(measured["entries"])
    assert measured["filter"] == "ready" and int(measured["shown"]) == entries < 20
    above = int(measured["topic-top"])
    assert 0 < int(measured["history-top"]) <= above < MAX_ABOVE_CHARTS, measured
    # the charts are there, folded: the first topic's block is closed (a few lines high), its chart hidden
    assert measured["topic-open"] == "false" and measured["chart-visible"] == "false", measured
    assert 0 < int(measured["topic-height"]) < SCREEN[1] / 4, measured
    # two topics charted, five partitions: the re-created topic's incarnations are compared apart (no lag,
    # no epoch fork across them), so its partitions have no chart
    assert page.count('<details class="topic"') == 2 and page.count('class="chart"') == 5
