"""A criterion's trend as inline SVG for report.html: no script, no external anything.

The chart is composed only of numbers we format and short commit ids (hex: the trend file's
model checks them, and that its means are finite, on every read: `evalgate.gate.trends.TrendPoint`),
so it is safe to print as markup; names (suite, criterion) stay out of it and go through the
template's escaping; its words ("this run") are our own translations, escaped all the same.
Colours come from classes in report.css (the page's CSP forbids inline style attributes).
"""

from __future__ import annotations

from html import escape
from typing import Optional

from evalgate.gate.trends import Series, axis_range
from evalgate.i18n import _

WIDTH, HEIGHT = 360, 150
LEFT, RIGHT, TOP, BOTTOM = 40, 58, 10, 22


def svg_chart(s: Series) -> Optional[str]:
    """The runs (oldest first) as a line with a dot per run, the band of their range, and this
    run as a distinct dot at the right; each dot has a tooltip. None without a point."""
    values = list(s.values) + ([s.current] if s.current is not None else [])
    if not values:
        return None
    low, high = axis_range(values)
    span = (high - low) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    n = len(s.values)

    def x(i: int) -> float:
        return LEFT + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - (v - low) / span)

    out = [
        f'<svg class="trend" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img">',
        # the range of the earlier runs, where this run is placed against
        f'<rect class="band" x="{LEFT}" y="{y(s.high):.1f}" width="{plot_w}" height="{max(y(s.low) - y(s.high), 1):.1f}"/>',
    ]
    for v in (low, (low + high) / 2, high):
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>')
        out.append(f'<text class="ax" x="{LEFT - 4}" y="{y(v) + 3:.1f}" text-anchor="end">{v:.2f}</text>')
    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(s.values))
    out.append(f'<polyline class="line" points="{points}"/>')
    for i, (label, v) in enumerate(zip(s.labels, s.values)):
        out.append(f'<circle class="pt" cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5"><title>{label}: {v:.3f}</title></circle>')
    out.append(f'<text class="ax" x="{LEFT}" y="{HEIGHT - 6}">{s.labels[0]}</text>')
    if n > 1:
        out.append(f'<text class="ax" x="{WIDTH - RIGHT}" y="{HEIGHT - 6}" text-anchor="end">{s.labels[-1]}</text>')
    if s.current is not None:
        cx = WIDTH - RIGHT / 2
        title, label = escape(_("this run: {value}", value=f"{s.current:.3f}")), escape(_("this run"))
        out.append(f'<line class="now-line" x1="{x(n - 1):.1f}" y1="{y(s.values[-1]):.1f}" x2="{cx:.1f}" y2="{y(s.current):.1f}"/>')
        out.append(f'<circle class="now" cx="{cx:.1f}" cy="{y(s.current):.1f}" r="4"><title>{title}</title></circle>')
        out.append(f'<text class="ax now-label" x="{cx:.1f}" y="{HEIGHT - 6}" text-anchor="middle">{label}</text>')
    out.append("</svg>")
    return "".join(out)
