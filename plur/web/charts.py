"""Server-rendered SVG charts for the statistics page (no JavaScript, no CDN).

Pure functions: literal numbers in, an SVG string out. Every label is
HTML-escaped here (control and bidi characters shown as ``\\uNNNN``, :mod:`plur.web.display`), so the result is safe to embed with Jinja's ``|safe``.
Colours come from CSS classes (``chart-bar``, ``chart-line-<i>``...) in
``static/style.css``; no inline ``style=`` attribute, so the page's
Content-Security-Policy needs no ``'unsafe-inline'``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

from .display import safe_text

#: Left gutter for value labels, bottom gutter for category labels (px).
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 60, 8, 18, 22


def _esc(text: object) -> str:
    """XML-escaped, control and bidi characters shown as \\uNNNN (labels are agent names, scopes, queries)."""
    return escape(safe_text(str(text)))


def nice_max(value: float) -> float:
    """Smallest of 1, 2, 2.5, 5 times a power of ten that is >= ``value`` (axis top); 1 for value <= 0."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = math.floor(math.log10(value))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        top = m * 10 ** exp
        if top >= value * (1 - 1e-12):
            return top
    return 10.0 ** (exp + 1)  # pragma: no cover - the loop always returns


def _fmt(v: float) -> str:
    if v == int(v) and abs(v) < 1e9:
        return str(int(v))
    return f"{v:.3g}"


def _axis(width: int, height: int, top: float, unit: str) -> list[str]:
    out = []
    inner_h = height - _PAD_T - _PAD_B
    for frac in (0.0, 0.5, 1.0):
        y = _PAD_T + inner_h * (1 - frac)
        out.append(f'<line class="chart-grid" x1="{_PAD_L}" y1="{y:.1f}" x2="{width - _PAD_R}" y2="{y:.1f}"/>')
        out.append(f'<text class="chart-tick" x="{_PAD_L - 4}" y="{y + 3:.1f}" text-anchor="end">'
                   f'{_esc(_fmt(top * frac) + unit)}</text>')
    return out


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'role="img" aria-label="{_esc(title)}" xmlns="http://www.w3.org/2000/svg">'
            f'<title>{_esc(title)}</title>{"".join(body)}</svg>')


def bar_chart(labels: Sequence[str], values: Sequence[float], *, title: str, width: int = 560,
              height: int = 180, unit: str = "", max_labels: int = 12) -> str:
    """Vertical bar chart.

    Args:
        labels: one category label per bar (escaped; at most ``max_labels`` are drawn, evenly spaced).
        values: bar heights (>= 0), same length as ``labels``.
        title: accessible name (``<title>`` and ``aria-label``).
        width, height: SVG size in px.
        unit: suffix for axis ticks, e.g. ``" ms"``.
        max_labels: most category labels drawn under the axis.

    Returns:
        An ``<svg>`` element as text; an empty-state ``<p>`` when ``values`` is empty.

    Raises:
        ValueError: ``labels`` and ``values`` differ in length.
    """
    if len(labels) != len(values):
        raise ValueError(f"bar_chart got {len(labels)} labels but {len(values)} values; pass one label per bar")
    if not values:
        return f'<p class="empty">No data yet for {_esc(title)}.</p>'
    top = nice_max(max(values))
    inner_w = width - _PAD_L - _PAD_R
    inner_h = height - _PAD_T - _PAD_B
    slot = inner_w / len(values)
    bar_w = max(1.0, slot * 0.8)
    body = _axis(width, height, top, unit)
    step = max(1, math.ceil(len(labels) / max_labels))
    for i, (label, v) in enumerate(zip(labels, values)):
        h = inner_h * max(0.0, v) / top
        x = _PAD_L + i * slot + (slot - bar_w) / 2
        y = _PAD_T + inner_h - h
        body.append(f'<rect class="chart-bar" x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}">'
                    f'<title>{_esc(str(label))}: {_esc(_fmt(v) + unit)}</title></rect>')
        if i % step == 0:
            body.append(f'<text class="chart-label" x="{x + bar_w / 2:.1f}" y="{height - 6}" '
                        f'text-anchor="middle">{_esc(str(label))}</text>')
    return _svg(width, height, title, body)


def line_chart(labels: Sequence[str], series: Mapping[str, Sequence[float | None]], *, title: str,
               width: int = 560, height: int = 180, unit: str = "", max_labels: int = 8) -> str:
    """Line chart of one or more series over shared x labels; ``None`` leaves a gap.

    Args:
        labels: x-axis labels (e.g. days ``YYYY-MM-DD``).
        series: name -> values (same length as ``labels``); drawn as ``chart-line-<i>``, i from 0.
        title: accessible name.
        width, height: SVG size in px.
        unit: suffix for axis ticks and point titles, e.g. ``" ms"``.
        max_labels: most x labels drawn.

    Returns:
        An ``<svg>`` element with a legend, or an empty-state ``<p>`` when there are no points.

    Raises:
        ValueError: a series' length differs from ``labels``.
    """
    for name, vals in series.items():
        if len(vals) != len(labels):
            raise ValueError(f"line_chart series {name!r} has {len(vals)} values for {len(labels)} labels")
    points = [v for vals in series.values() for v in vals if v is not None]
    if not labels or not points:
        return f'<p class="empty">No data yet for {_esc(title)}.</p>'
    top = nice_max(max(points))
    inner_w = width - _PAD_L - _PAD_R
    inner_h = height - _PAD_T - _PAD_B
    n = len(labels)

    def xy(i: int, v: float) -> tuple[float, float]:
        x = _PAD_L + (inner_w / 2 if n == 1 else inner_w * i / (n - 1))
        return x, _PAD_T + inner_h * (1 - max(0.0, v) / top)

    body = _axis(width, height, top, unit)
    step = max(1, math.ceil(n / max_labels))
    for i, label in enumerate(labels):
        if i % step == 0:
            x, _ = xy(i, 0)
            body.append(f'<text class="chart-label" x="{x:.1f}" y="{height - 6}" text-anchor="middle">'
                        f'{_esc(str(label))}</text>')
    for s, (name, vals) in enumerate(series.items()):
        runs: list[list[tuple[float, float]]] = [[]]
        for i, v in enumerate(vals):
            if v is None:
                runs.append([])
                continue
            runs[-1].append(xy(i, v))
            cx, cy = xy(i, v)
            body.append(f'<circle class="chart-dot-{s}" cx="{cx:.1f}" cy="{cy:.1f}" r="2.5">'
                        f'<title>{_esc(str(name))} {_esc(str(labels[i]))}: {_esc(_fmt(v) + unit)}</title>'
                        f'</circle>')
        for run in runs:
            if len(run) > 1:
                pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
                body.append(f'<polyline class="chart-line-{s}" fill="none" points="{pts}"/>')
        lx = width - _PAD_R - (len(series) - s) * 70
        body.append(f'<rect class="chart-dot-{s}" x="{lx}" y="2" width="10" height="10"/>'
                    f'<text class="chart-legend" x="{lx + 14}" y="11">{_esc(str(name))}</text>')
    return _svg(width, height, title, body)


def share_bar(parts: Sequence[tuple[str, int]], *, title: str, width: int = 560, height: int = 26) -> str:
    """One horizontal 100% bar split into labelled parts (e.g. recalled vs never recalled).

    Args:
        parts: (label, count) pairs, drawn left to right as ``chart-part-<i>``.
        title: accessible name.
        width, height: SVG size in px.

    Returns:
        An ``<svg>`` element, or an empty-state ``<p>`` when all counts are 0.
    """
    total = sum(max(0, c) for _, c in parts)
    if total <= 0:
        return f'<p class="empty">No data yet for {_esc(title)}.</p>'
    body: list[str] = []
    x = 0.0
    for i, (label, count) in enumerate(parts):
        w = width * max(0, count) / total
        pct = 100.0 * max(0, count) / total
        body.append(f'<rect class="chart-part-{i}" x="{x:.1f}" y="0" width="{w:.1f}" height="{height}">'
                    f'<title>{_esc(str(label))}: {count} ({pct:.0f}%)</title></rect>')
        if w > 80:
            body.append(f'<text class="chart-part-label" x="{x + 6:.1f}" y="{height / 2 + 4:.1f}">'
                        f'{_esc(str(label))} {pct:.0f}%</text>')
        x += w
    return _svg(width, height, title, body)
