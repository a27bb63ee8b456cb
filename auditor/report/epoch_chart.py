"""The epoch timeline of one partition as SVG, for the ``audit`` HTML page: one lane per replica along the
offsets, drawn by hand (no script, no external font or style sheet, offline).

Each lane shows the replica's batches grouped by leader epoch (a bar per epoch range, coloured by epoch),
its leader-epoch cache entries (a diamond at each entry's start offset), its high watermark (a filled
triangle above the bar) and its log end offset (a hollow triangle below). The first offset at which a replica
diverges from the reference leader is a vertical line in :data:`DIVERGENCE_COLOUR` across every lane,
labelled ``first divergent offset N``; the records of each diverged replica from its divergence to its log end
offset (what Kafka's epoch-based truncation removes) are outlined in the same colour. The legend lists only
what the chart draws. Values and ranges are repeated in each mark's ``<title>`` (a tooltip) and, for HW and
LEO, at the end of the lane.

The input is the report's partition rows of ``audit`` (``auditor.cli.audit.partition_rows``: ``broker``,
``role``, ``logStartOffset``, ``logEndOffset``, ``highWatermark``, ``divergence``, ``epochs`` [[epoch, start
offset]], ``timeline`` [{``epoch``, ``first``, ``last``, ``records``, ``batches``}]). Every text is escaped
with :func:`auditor.report.svg.esc` (control and bidi characters made visible first).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from auditor.report.svg import PALETTE, SVG_NS, esc, format_offset, value_ticks

DIVERGENCE_COLOUR = "#e6007e"
"""The divergence line and outline: a colour no other mark of the page uses (the browser test looks for
it in the screenshot)."""
NO_EPOCH_COLOUR = "#9a9a9a"
"""Batches without a leader epoch (magic 0/1, written before Kafka 0.11)."""
HW_COLOUR = "#1f2328"
LANE_H = 46
BAR_H = 18
LABEL_W = 150
VALUES_W = 170


def _int(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def epoch_colours(epochs: Sequence[int]) -> dict[int, str]:
    """A colour per leader epoch, in epoch order (the palette repeats past eight epochs)."""
    out: dict[int, str] = {}
    for i, epoch in enumerate(sorted({e for e in epochs if e >= 0})):
        out[epoch] = PALETTE[i % len(PALETTE)]
    for epoch in epochs:
        if epoch < 0:
            out[epoch] = NO_EPOCH_COLOUR
    return out


def first_divergence(replicas: Sequence[Mapping[str, Any]]) -> int | None:
    """The lowest offset at which a replica diverges from the reference leader (None: none diverges)."""
    offsets = [d for d in (_int(r.get("divergence")) for r in replicas) if d is not None]
    return min(offsets) if offsets else None


class _X:
    """Offsets to x positions on [a, b]."""

    def __init__(self, lo: int, hi: int, a: float, b: float) -> None:
        self.lo, self.hi, self.a, self.b = lo, max(hi, lo + 1), a, b

    def __call__(self, offset: float) -> float:
        v = min(max(offset, self.lo), self.hi)
        return round(self.a + (v - self.lo) * (self.b - self.a) / (self.hi - self.lo), 2)


def _lane_label(r: Mapping[str, Any]) -> str:
    role = r.get("role")
    return f"broker {r.get('broker')}" + (f" · {role}" if role else "")


def _bounds(replicas: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    lows: list[int] = []
    highs: list[int] = []
    for r in replicas:
        for span in r.get("timeline") or []:
            lows.append(int(span["first"]))
            highs.append(int(span["last"]) + 1)
        for key in ("logStartOffset",):
            if _int(r.get(key)) is not None:
                lows.append(int(r[key]))
        for key in ("logEndOffset", "highWatermark", "divergence"):
            if _int(r.get(key)) is not None:
                highs.append(int(r[key]))
        lows += [int(s) for _, s in r.get("epochs") or []]
    lo = min(lows, default=0)
    hi = max(highs + [lo + 1])
    return lo, hi


def _triangle(x: float, y: float, down: bool, size: float = 6) -> str:
    """Points of a triangle whose tip is at (x, y), pointing down (above a bar) or up (below it)."""
    base = y - size if down else y + size
    return f"{x},{y} {x - size * 0.75},{base} {x + size * 0.75},{base}"


def _diamond(x: float, y: float, size: float = 5) -> str:
    return f"{x},{y - size} {x + size},{y} {x},{y + size} {x - size},{y}"


def epoch_timeline_svg(replicas: Sequence[Mapping[str, Any]], *, title: str = "", width: int = 980) -> str:
    """One ``<svg>``: a lane per replica (in the given order) with its epoch ranges, cache entries, HW and
    LEO; the first divergent offset marked across the lanes; an offset axis and a legend of what is
    drawn."""
    lo, hi = _bounds(replicas)
    first = first_divergence(replicas)
    epochs = sorted(
        {int(s["epoch"]) for r in replicas for s in r.get("timeline") or []}
        | {int(e) for r in replicas for e, _ in r.get("epochs") or []}
    )
    colours = epoch_colours(epochs)
    top = (30 if title else 10) + (18 if first is not None else 0)
    plot_l, plot_r = LABEL_W, width - VALUES_W
    x = _X(lo, hi, plot_l, plot_r)
    lanes_h = LANE_H * max(1, len(replicas))
    axis_y = top + lanes_h + 4

    drawn: dict[str, bool] = {"hw": False, "leo": False, "cache": False, "diverged": False}
    body: list[str] = []
    # offset axis (under the lanes) and grid
    _lo, _hi, ticks = value_ticks(lo, hi)
    ticks = [t for t in ticks if lo <= t <= hi]
    labels = [format_offset(t) for t in ticks]
    if len(set(labels)) < len(labels):
        labels = [format_offset(t, compact=False) for t in ticks]
    body.append(
        f'<line x1="{plot_l}" y1="{axis_y}" x2="{plot_r}" y2="{axis_y}" stroke="#999999" stroke-width="1"/>'
    )
    for t, text in zip(ticks, labels, strict=True):
        xx = x(t)
        body.append(f'<line x1="{xx}" y1="{top}" x2="{xx}" y2="{axis_y}" stroke="#eeeeee"/>')
        body.append(f'<line x1="{xx}" y1="{axis_y}" x2="{xx}" y2="{axis_y + 4}" stroke="#999999"/>')
        body.append(f'<text x="{xx}" y="{axis_y + 16}" text-anchor="middle">{esc(text)}</text>')
    body.append(
        f'<text x="{plot_r}" y="{axis_y + 30}" text-anchor="end" fill="#57606a">offset '
        f"(first {esc(format_offset(lo, compact=False))}, end {esc(format_offset(hi, compact=False))})</text>"
    )

    for i, r in enumerate(replicas):
        lane_top = top + i * LANE_H
        bar_y = lane_top + 14
        mid = bar_y + BAR_H / 2
        broker = r.get("broker")
        body.append(f'<g class="lane" data-broker="{esc(broker)}">')
        body.append(
            f'<text x="{plot_l - 10}" y="{mid + 4}" text-anchor="end" font-weight="600">'
            f"{esc(_lane_label(r))}</text>"
        )
        body.append(
            f'<rect x="{plot_l}" y="{bar_y}" width="{round(plot_r - plot_l, 2)}" height="{BAR_H}" '
            'fill="#f6f8fa" stroke="#d0d7de"/>'
        )
        for span in sorted(r.get("timeline") or [], key=lambda s: int(s["first"])):
            epoch, a, b = int(span["epoch"]), int(span["first"]), int(span["last"]) + 1
            x0, x1 = x(a), x(b)
            w = max(1.0, round(x1 - x0, 2))
            colour = colours.get(epoch, NO_EPOCH_COLOUR)
            what = f"epoch {epoch}" if epoch >= 0 else "no leader epoch"
            extra = []
            if span.get("records") is not None:
                extra.append(f"{span['records']:,} records")
            if span.get("batches") is not None:
                extra.append(f"{span['batches']:,} batches")
            tip = f"broker {broker}: {what}, offsets {a}..{b - 1}" + (
                f" ({', '.join(extra)})" if extra else ""
            )
            body.append(
                f'<rect class="epoch" data-epoch="{epoch}" x="{x0}" y="{bar_y}" width="{w}" height="{BAR_H}" '
                f'fill="{colour}"><title>{esc(tip)}</title></rect>'
            )
            if w >= 30:
                body.append(
                    f'<text x="{round(x0 + w / 2, 2)}" y="{mid + 4}" text-anchor="middle" fill="#ffffff" '
                    f'font-weight="600" pointer-events="none">{esc("e" + str(epoch) if epoch >= 0 else "-")}'
                    "</text>"
                )
        div, leo = _int(r.get("divergence")), _int(r.get("logEndOffset"))
        if div is not None and leo is not None and leo > div:
            x0, x1 = x(div), x(leo)
            tip = f"broker {broker}: offsets {div}..{leo - 1} diverge from the leader (truncated by Kafka)"
            body.append(
                f'<rect class="diverged" x="{x0}" y="{bar_y - 3}" width="{max(2.0, round(x1 - x0, 2))}" '
                f'height="{BAR_H + 6}" fill="{DIVERGENCE_COLOUR}" fill-opacity="0.16" '
                f'stroke="{DIVERGENCE_COLOUR}" stroke-width="1.5" stroke-dasharray="4 2">'
                f"<title>{esc(tip)}</title></rect>"
            )
            drawn["diverged"] = True
        for epoch, start in r.get("epochs") or []:
            body.append(
                f'<polygon class="cache" points="{_diamond(x(int(start)), mid)}" fill="#ffffff" '
                f'stroke="#1f2328" stroke-width="1.2"><title>'
                f"{esc(f'broker {broker}: leader-epoch-checkpoint entry ({epoch}, {start})')}"
                "</title></polygon>"
            )
            drawn["cache"] = True
        hw = _int(r.get("highWatermark"))
        if hw is not None:
            body.append(
                f'<polygon class="hw" points="{_triangle(x(hw), bar_y - 1, down=True)}" fill="{HW_COLOUR}">'
                f"<title>{esc(f'broker {broker}: high watermark {hw}')}</title></polygon>"
            )
            drawn["hw"] = True
        if leo is not None:
            known = r.get("logEndOffsetKnown") is not False
            body.append(
                f'<polygon class="leo" points="{_triangle(x(leo), bar_y + BAR_H + 1, down=False)}" '
                f'fill="#ffffff" stroke="{HW_COLOUR}" stroke-width="1.5"><title>'
                f"{esc(f'broker {broker}: log end offset ' + ('' if known else 'at least ') + str(leo))}"
                "</title></polygon>"
            )
            drawn["leo"] = True
        values = []
        if hw is not None:
            values.append(f"HW {hw:,}")
        if leo is not None:
            values.append(f"LEO {'≥' if r.get('logEndOffsetKnown') is False else ''}{leo:,}")
        body.append(f'<text x="{plot_r + 12}" y="{mid + 4}">{esc(" · ".join(values))}</text>')
        if div is not None and first is not None and div != first:
            xx = x(div)
            body.append(
                f'<line class="divergence-own" x1="{xx}" y1="{bar_y - 4}" x2="{xx}" y2="{bar_y + BAR_H + 4}" '
                f'stroke="{DIVERGENCE_COLOUR}" stroke-width="3"><title>'
                f"{esc(f'broker {broker} diverges at offset {div}')}</title></line>"
            )
        body.append("</g>")

    if first is not None:
        xx = x(first)
        label = f"first divergent offset {first}"
        right_half = xx > plot_l + (plot_r - plot_l) * 0.6
        anchor = f'x="{xx - 5}" text-anchor="end"' if right_half else f'x="{xx + 5}"'
        body.append(
            f'<g class="divergence" data-offset="{first}"><title>{esc(label)}</title>'
            f'<line x1="{xx}" y1="{top - 14}" x2="{xx}" y2="{axis_y}" stroke="{DIVERGENCE_COLOUR}" '
            'stroke-width="3"/>'
            f'<text {anchor} y="{top - 4}" fill="{DIVERGENCE_COLOUR}" font-weight="700">'
            f"{esc(label)}</text></g>"
        )

    legend = legend_items(epochs, drawn, first is not None)
    per_row = max(1, (width - 20) // 190)
    legend_y = axis_y + 50
    rows = math.ceil(len(legend) / per_row) if legend else 0
    height = legend_y + 18 * rows + 4
    aria = esc((title + ": " if title else "") + "leader epochs along the offsets of each replica")
    out = [
        f'<svg xmlns="{SVG_NS}" class="chart epoch-timeline" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{aria}" '
        + (f'data-first-divergent-offset="{first}" ' if first is not None else "")
        + 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="11">'
    ]
    if title:
        out.append(f'<text x="10" y="18" font-size="13" font-weight="600">{esc(title)}</text>')
    out += body
    for j, (key, text) in enumerate(legend):
        lx = 10 + (j % per_row) * 190
        ly = legend_y + (j // per_row) * 18
        out.append(f'<g class="legend-item" data-item="{esc(key)}">{_legend_mark(key, lx, ly, colours)}')
        out.append(f'<text x="{lx + 26}" y="{ly + 4}">{esc(text)}</text></g>')
    out.append("</svg>")
    return "".join(out)


def legend_items(epochs: Sequence[int], drawn: Mapping[str, bool], divergence: bool) -> list[tuple[str, str]]:
    """(key, label) of every kind of mark the chart draws, in the legend's order."""
    out = [(f"epoch-{e}", f"epoch {e}" if e >= 0 else "no leader epoch") for e in epochs]
    if drawn.get("cache"):
        out.append(("cache", "leader-epoch cache entry"))
    if drawn.get("hw"):
        out.append(("hw", "HW (high watermark)"))
    if drawn.get("leo"):
        out.append(("leo", "LEO (log end offset)"))
    if divergence:
        out.append(("divergence", "first divergent offset"))
    if drawn.get("diverged"):
        out.append(("diverged", "diverged records (truncated)"))
    return out


def _legend_mark(key: str, lx: float, ly: float, colours: Mapping[int, str]) -> str:
    """The legend's sample of ``key``: the same shape and colours as the chart's mark, 20 px wide."""
    cx = lx + 10
    if key.startswith("epoch-"):
        colour = colours.get(int(key[len("epoch-") :]), NO_EPOCH_COLOUR)
        return f'<rect x="{lx}" y="{ly - 5}" width="20" height="10" fill="{colour}"/>'
    if key == "cache":
        return f'<polygon points="{_diamond(cx, ly)}" fill="#ffffff" stroke="#1f2328" stroke-width="1.2"/>'
    if key == "hw":
        return f'<polygon points="{_triangle(cx, ly + 4, down=True)}" fill="{HW_COLOUR}"/>'
    if key == "leo":
        return (
            f'<polygon points="{_triangle(cx, ly - 4, down=False)}" fill="#ffffff" stroke="{HW_COLOUR}" '
            'stroke-width="1.5"/>'
        )
    if key == "divergence":
        return (
            f'<line x1="{cx}" y1="{ly - 7}" x2="{cx}" y2="{ly + 6}" stroke="{DIVERGENCE_COLOUR}" '
            'stroke-width="3"/>'
        )
    return (
        f'<rect x="{lx}" y="{ly - 6}" width="20" height="12" fill="{DIVERGENCE_COLOUR}" fill-opacity="0.16" '
        f'stroke="{DIVERGENCE_COLOUR}" stroke-width="1.5" stroke-dasharray="4 2"/>'
    )
