"""Charts drawn on the server as SVG: no script runs in the browser, and a page works offline and in a CSP.

Only presentation attributes are used (no `style=`), so the strict Content-Security-Policy holds; every
label is escaped. Colours come from CSS classes (`series-0`, `series-1`, ...) in the dashboard's stylesheet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

WIDTH = 640
HEIGHT = 240
PAD_L, PAD_R, PAD_T, PAD_B = 44, 16, 16, 36


@dataclass
class Series:
    name: str
    points: list[tuple[float, float | None]]  # (x, y); None leaves a gap


def _fmt(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 1000 else f"{v:,.0f}"


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    step = (hi - lo) / n
    return [lo + i * step for i in range(n + 1)]


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str = "step",
    y_range: tuple[float, float] | None = None,
    markers: Sequence[tuple[float, str]] = (),
) -> Markup:
    """A line chart of one or more series; `markers` are (x, css class) dots on the x axis (e.g. accepted)."""
    xs = [x for s in series for x, y in s.points if y is not None] + [x for x, _ in markers]
    ys = [y for s in series for _, y in s.points if y is not None]
    if not xs or not ys:
        return Markup(
            f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} 60" width="100%">'
            f"<title>{escape(title)}</title>"
            f'<text x="{WIDTH / 2}" y="34" text-anchor="middle" class="chart-empty">no data yet</text></svg>'
        )
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    y0, y1 = y_range if y_range else (min(ys), max(ys))
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    iw, ih = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B

    def px(x: float) -> float:
        return PAD_L + (x - x0) / (x1 - x0) * iw

    def py(y: float) -> float:
        return PAD_T + ih - (y - y0) / (y1 - y0) * ih

    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for t in _ticks(y0, y1):
        y = py(t)
        out.append(f'<line class="grid" x1="{PAD_L}" x2="{WIDTH - PAD_R}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    whole = sorted({x for x in xs if float(x).is_integer()})
    stride = max(1, len(whole) // 10)
    for x in whole[::stride]:
        out.append(
            f'<text class="tick" x="{px(x):.1f}" y="{HEIGHT - PAD_B + 16}" text-anchor="middle">{int(x)}</text>'
        )
    out.append(
        f'<text class="axis-label" x="{PAD_L + iw / 2}" y="{HEIGHT - 4}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    for i, s in enumerate(series):
        out.extend(_series_svg(i, s, px, py))
    for x, cls in markers:
        out.append(
            f'<circle class="marker {escape(cls)}" cx="{px(x):.1f}" cy="{PAD_T + ih}" r="5">'
            f"<title>{escape(cls)} at step {x:g}</title></circle>"
        )
    out.extend(_legend(series))
    out.append("</svg>")
    return Markup("".join(out))


def _series_svg(i: int, s: Series, px: Callable[[float], float], py: Callable[[float], float]) -> list[str]:
    """One series as polylines (broken where a value is missing) and a dot with a tooltip per point."""
    segments: list[list[str]] = [[]]
    for xv, yv in s.points:
        if yv is None:
            segments.append([])
        else:
            segments[-1].append(f"{px(xv):.1f},{py(yv):.1f}")
    out = [
        f'<polyline class="line series-{i}" fill="none" points="{" ".join(seg)}"/>' for seg in segments if seg
    ]
    for xv, yv in s.points:
        if yv is not None:
            out.append(
                f'<circle class="dot series-{i}" cx="{px(xv):.1f}" cy="{py(yv):.1f}" r="3">'
                f"<title>{escape(s.name)} at {xv:g}: {yv:.3f}</title></circle>"
            )
    return out


def _legend(series: Sequence[Series]) -> list[str]:
    out = []
    legend_x = PAD_L + 8
    for i, s in enumerate(series):
        out.append(
            f'<rect class="swatch series-{i}" x="{legend_x}" y="{PAD_T + 2}" width="10" height="10"/>'
            f'<text class="legend" x="{legend_x + 14}" y="{PAD_T + 11}">{escape(s.name)}</text>'
        )
        legend_x += 14 + 8 * len(s.name) + 16
    return out


def stacked_bars(
    days: Sequence[str], stacks: dict[str, dict[str, int]], *, title: str, keys: Sequence[str]
) -> Markup:
    """Bars per day, stacked by key (agent tool): `stacks[day][key] = count`."""
    if not days:
        return Markup(
            f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} 60" width="100%">'
            f"<title>{escape(title)}</title>"
            f'<text x="{WIDTH / 2}" y="34" text-anchor="middle" class="chart-empty">no sessions yet</text></svg>'
        )
    top = max(sum(stacks.get(d, {}).values()) for d in days) or 1
    iw, ih = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B
    slot = iw / len(days)
    bar = max(2.0, min(36.0, slot * 0.7))
    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for t in _ticks(0, top, min(4, top)):
        y = PAD_T + ih - t / top * ih
        out.append(f'<line class="grid" x1="{PAD_L}" x2="{WIDTH - PAD_R}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end">{t:.0f}</text>')
    stride = max(1, len(days) // 8)
    for i, day in enumerate(days):
        x = PAD_L + i * slot + (slot - bar) / 2
        base = float(PAD_T + ih)
        for k, key in enumerate(keys):
            n = stacks.get(day, {}).get(key, 0)
            if not n:
                continue
            h = n / top * ih
            base -= h
            out.append(
                f'<rect class="bar series-{k}" x="{x:.1f}" y="{base:.1f}" width="{bar:.1f}" height="{h:.1f}">'
                f"<title>{escape(day)}: {n} {escape(key)}</title></rect>"
            )
        if i % stride == 0:
            out.append(
                f'<text class="tick" x="{x + bar / 2:.1f}" y="{HEIGHT - PAD_B + 16}" text-anchor="middle">'
                f"{escape(day[5:])}</text>"
            )
    legend_x = PAD_L + 8
    for k, key in enumerate(keys):
        out.append(
            f'<rect class="swatch series-{k}" x="{legend_x}" y="{PAD_T + 2}" width="10" height="10"/>'
            f'<text class="legend" x="{legend_x + 14}" y="{PAD_T + 11}">{escape(key)}</text>'
        )
        legend_x += 14 + 8 * len(key) + 16
    out.append("</svg>")
    return Markup("".join(out))


def before_after(rows: Sequence[tuple[str, float | None, float | None]], *, title: str) -> Markup:
    """Two bars per row: the share of a family's sessions with the correction before its rule was installed
    and after (`rows`: label, before, after, as shares 0..1; None draws no bar)."""
    if not rows:
        return Markup(
            f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} 60" width="100%">'
            f"<title>{escape(title)}</title>"
            f'<text x="{WIDTH / 2}" y="34" text-anchor="middle" class="chart-empty">no installed rule yet</text>'
            "</svg>"
        )
    label_w, row_h, bar_h = 220, 34, 12
    height = PAD_T + row_h * len(rows) + 24
    iw = WIDTH - label_w - PAD_R - 40
    out = [
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {height}" width="100%" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for i, (label, before, after) in enumerate(rows):
        y = PAD_T + i * row_h
        short = label if len(label) <= 34 else label[:33] + "…"
        out.append(
            f'<text class="tick" x="{label_w - 8}" y="{y + bar_h + 4}" text-anchor="end">{escape(short)}</text>'
        )
        for k, (name, share) in enumerate((("before", before), ("after", after))):
            if share is None:
                continue
            yy = y + k * (bar_h + 2)
            w = max(1.0, share * iw)
            out.append(
                f'<rect class="bar series-{k}" x="{label_w}" y="{yy}" width="{w:.1f}" height="{bar_h}">'
                f"<title>{escape(label)}: {share:.0%} of sessions corrected {name} the rule</title></rect>"
                f'<text class="tick" x="{label_w + w + 4:.1f}" y="{yy + bar_h - 2}">{share:.0%}</text>'
            )
    legend_y = height - 10
    for k, name in enumerate(("before install", "after install")):
        x = label_w + k * 120
        out.append(
            f'<rect class="swatch series-{k}" x="{x}" y="{legend_y - 9}" width="10" height="10"/>'
            f'<text class="legend" x="{x + 14}" y="{legend_y}">{name}</text>'
        )
    out.append("</svg>")
    return Markup("".join(out))
