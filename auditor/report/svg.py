"""SVG charts for the HTML reports, drawn by hand: no script, no external font or style sheet, offline.

:func:`step_chart` draws one step line per series (a checkpoint value holds from one capture until the next,
so a step, not a slope), with time on the x axis (UTC dates) and offsets on the y axis, a legend, and
vertical lines at marked times (a finding's capture time). The result is one well-formed ``<svg>`` element
(XML: it parses with :mod:`xml.etree.ElementTree`) whose only URL is the SVG namespace; every text in it is
escaped, control and bidi characters made visible first.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Mapping, Sequence

from auditor.text import visible

SVG_NS = "http://www.w3.org/2000/svg"
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#7f7f00", "#000000")
"""Okabe-Ito colours (told apart with the common colour-vision deficiencies); a dash pattern is added from the
ninth series on."""
DASHES = ("", "6 3", "2 2", "8 3 2 3")
MAX_DOTS = 400
"""Above this many points a series is drawn without a dot per capture (drops are still marked)."""
_TIME_STEPS = (
    60_000,
    5 * 60_000,
    15 * 60_000,
    3_600_000,
    3 * 3_600_000,
    6 * 3_600_000,
    12 * 3_600_000,
    86_400_000,
    2 * 86_400_000,
    7 * 86_400_000,
    14 * 86_400_000,
    30 * 86_400_000,
    91 * 86_400_000,
    365 * 86_400_000,
)
DAY_MS = 86_400_000


def esc(text: object) -> str:
    """``text`` safe in XML and HTML text and attribute values."""
    return html.escape(visible(str(text)), quote=True)


def iso_ms(ms: int) -> str:
    """A time in ms since the epoch as ISO-8601 UTC to the second (``2024-05-01T02:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def format_offset(value: float, *, compact: bool = True) -> str:
    """An offset for an axis or a label: grouped digits below 100,000, else (``compact``) with a k/M/G/T
    suffix and up to four significant digits."""
    v = int(value)
    if not compact or abs(v) < 100_000:
        return f"{v:,}"
    for suffix, scale in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if abs(v) >= scale:
            return f"{v / scale:.4g}{suffix}"
    return f"{v:,}"


def nice_step(span: float, count: int = 5) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about ``count`` intervals over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * power:
            return float(m * power)
    return float(10 * power)


def value_ticks(lo: float, hi: float) -> tuple[float, float, list[float]]:
    """The y range widened to round values, and the ticks on it (integers: offsets)."""
    if hi <= lo:
        lo, hi = lo - 1, hi + 1
    step = max(1.0, nice_step(hi - lo))
    start = math.floor(lo / step) * step
    stop = math.ceil(hi / step) * step
    ticks = [start + i * step for i in range(int(round((stop - start) / step)) + 1)]
    return start, stop, ticks


def time_ticks(lo: int, hi: int, count: int = 6) -> tuple[list[int], str]:
    """Ticks (UTC-aligned multiples of a round step) between ``lo`` and ``hi`` ms, and their strftime
    format (dates for steps of a day or more)."""
    span = max(hi - lo, 1)
    step = next((s for s in _TIME_STEPS if span / s <= count), None)
    if step is None:  # more than six years: whole multiples of a year
        step = _TIME_STEPS[-1] * math.ceil(span / (count * _TIME_STEPS[-1]))
    first = -(-lo // step) * step
    ticks = list(range(first, hi + 1, step))
    return ticks, ("%Y-%m-%d" if step >= DAY_MS else "%m-%d %H:%M")


class _Scale:
    def __init__(self, lo: float, hi: float, a: float, b: float) -> None:
        self.lo, self.hi, self.a, self.b = lo, hi, a, b

    def __call__(self, v: float) -> float:
        if self.hi == self.lo:
            return (self.a + self.b) / 2
        return round(self.a + (v - self.lo) * (self.b - self.a) / (self.hi - self.lo), 2)


def step_chart(
    series: Mapping[str, Sequence[tuple[int, int]]],
    *,
    marks: Sequence[tuple[int, str]] = (),
    title: str = "",
    y_label: str = "offset",
    width: int = 760,
    height: int = 300,
) -> str:
    """One ``<svg>``: a step line per series (label -> [(time ms, value)]), a dot per point (a point lower
    than the one before drawn larger, in the series' colour with a dark ring), dashed vertical lines at
    ``marks`` ((time ms, label)), date and offset axes, a legend."""
    clean = {k: sorted((int(t), int(v)) for t, v in pts) for k, pts in series.items() if pts}
    times = [t for pts in clean.values() for t, _ in pts] + [int(t) for t, _ in marks]
    values = [v for pts in clean.values() for _, v in pts]
    left, right, top = 84, 36, 30 if title else 12
    legend_rows = math.ceil(len(clean) / 5) if clean else 0
    bottom = 40 + 18 * legend_rows
    plot_w, plot_h = width - left - right, height - top - bottom
    aria = esc((f"{title}: " if title else "") + f"{y_label} over capture time")
    out = [
        f'<svg xmlns="{SVG_NS}" class="chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{aria}" '
        'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="11">'
    ]
    if title:
        out.append(f'<text x="{left}" y="18" font-size="13" font-weight="600">{esc(title)}</text>')
    if not times:
        out.append(f'<text x="{left}" y="{top + plot_h / 2}">no captures</text></svg>')
        return "".join(out)
    t_lo, t_hi = min(times), max(times)
    if t_hi == t_lo:
        t_lo, t_hi = t_lo - 3_600_000, t_hi + 3_600_000
    pad = (t_hi - t_lo) // 40  # the first and last captures off the frame
    t_lo, t_hi = t_lo - pad, t_hi + pad
    v_lo, v_hi, v_ticks = value_ticks(min(values, default=0), max(values, default=1))
    x = _Scale(t_lo, t_hi, left, left + plot_w)
    y = _Scale(v_lo, v_hi, top + plot_h, top)
    # axes and grid
    out.append(
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#ffffff" stroke="#999999"/>'
    )
    labels = [format_offset(v) for v in v_ticks]
    if len(set(labels)) < len(labels):
        labels = [format_offset(v, compact=False) for v in v_ticks]
    for v, text in zip(v_ticks, labels, strict=True):
        yy = y(v)
        out.append(f'<line x1="{left}" y1="{yy}" x2="{left + plot_w}" y2="{yy}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{yy + 4}" text-anchor="end">{esc(text)}</text>')
    ticks, fmt = time_ticks(t_lo, t_hi)
    span = f"{iso_ms(min(times))[:10]} to {iso_ms(max(times))[:10]}"
    out.append(
        f'<text x="{width - right}" y="{18 if title else top - 2}" text-anchor="end" fill="#57606a">'
        f"capture time (UTC), {esc(span)}</text>"
    )
    for t in ticks:
        xx = x(t)
        out.append(f'<line x1="{xx}" y1="{top}" x2="{xx}" y2="{top + plot_h}" stroke="#eeeeee"/>')
        out.append(
            f'<text x="{xx}" y="{top + plot_h + 15}" text-anchor="middle">'
            f"{esc(time.strftime(fmt, time.gmtime(t / 1000)))}</text>"
        )
    out.append(
        f'<text x="14" y="{top + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2})">{esc(y_label)}</text>'
    )
    # marks under the lines, one per time (labels joined)
    at: dict[int, list[str]] = {}
    for t, text in marks:
        names = at.setdefault(int(t), [])
        if text not in names:
            names.append(text)
    for t, names in sorted(at.items()):
        xx, text = x(t), ", ".join(names)
        right_half = xx > left + plot_w * 0.7
        anchor = f'x="{xx - 3}" text-anchor="end"' if right_half else f'x="{xx + 3}"'
        out.append(
            f'<g class="mark"><title>{esc(text)} at {esc(iso_ms(t))}</title>'
            f'<line x1="{xx}" y1="{top}" x2="{xx}" y2="{top + plot_h}" stroke="#c00000" '
            'stroke-width="1.5" stroke-dasharray="5 3"/>'
            f'<text {anchor} y="{top + 11}" fill="#c00000">{esc(text)}</text></g>'
        )
    # one step line per series
    for i, (name, pts) in enumerate(clean.items()):
        colour, dash = PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]
        path = [f"M{x(pts[0][0])},{y(pts[0][1])}"]
        for t, v in pts[1:]:
            path.append(f"H{x(t)}V{y(v)}")
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<g class="series"><title>{esc(name)}</title>')
        out.append(f'<path d="{"".join(path)}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}/>')
        prev = None
        for t, v in pts:
            drop = prev is not None and v < prev
            prev = v
            if len(pts) > MAX_DOTS and not drop:
                continue
            tip = f"{name} at {iso_ms(t)}: {v:,}" + (" (lower than the capture before)" if drop else "")
            ring = ' stroke="#000000" stroke-width="1.5"' if drop else ""
            out.append(
                f'<circle cx="{x(t)}" cy="{y(v)}" r="{4.5 if drop else 2.5}" fill="{colour}"{ring}>'
                f"<title>{esc(tip)}</title></circle>"
            )
        out.append("</g>")
    # legend
    ly = top + plot_h + 32
    for i, name in enumerate(clean):
        colour, dash = PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)]
        lx = left + (i % 5) * 130
        row = ly + (i // 5) * 18
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<line x1="{lx}" y1="{row - 4}" x2="{lx + 22}" y2="{row - 4}" stroke="{colour}" '
            f'stroke-width="2"{dash_attr}/><text x="{lx + 27}" y="{row}">{esc(name)}</text>'
        )
    out.append("</svg>")
    return "".join(out)
