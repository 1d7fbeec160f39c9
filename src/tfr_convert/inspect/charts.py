"""Bar charts as inline SVG: the report draws them without a script or a CDN, and a page
saved from a CI job shows them offline. Each chart scales to the width it is given."""

from __future__ import annotations

from html import escape

# Series colours that stay apart for the colour-blind (Okabe and Ito's palette).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
WIDTH, HEIGHT = 600, 220
LEFT, BOTTOM, TOP = 48, 48, 24


def _number(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:.3g}"


def _frame(
    title: str, peak: float, legend: list[str], body: list[str], labels: list[str], percent: bool = False
) -> str:
    """The chart: title, y axis up to `peak` with three ticks (a fraction shown as a percentage
    with `percent`), the bars, the x labels and a legend."""
    plot_h = HEIGHT - BOTTOM - TOP
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        'preserveAspectRatio="xMinYMin meet">',
        f'<text class="title" x="{LEFT}" y="14">{escape(title)}</text>',
    ]
    for i in range(4):
        value = peak * i / 3
        y = TOP + plot_h - plot_h * i / 3
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - 8}" y1="{y:.1f}" y2="{y:.1f}"/>')
        tick = f"{value:.0%}" if percent else _number(value)
        parts.append(f'<text class="tick" x="{LEFT - 4}" y="{y + 3:.1f}" text-anchor="end">{tick}</text>')
    parts += body + labels
    x = LEFT
    for i, name in enumerate(legend if len(legend) > 1 else []):
        colour = PALETTE[i % len(PALETTE)]
        parts.append(f'<rect x="{x}" y="{HEIGHT - 12}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text class="legend" x="{x + 14}" y="{HEIGHT - 3}">{escape(name)}</text>')
        x += 24 + 7 * len(name)
    parts.append("</svg>")
    return "".join(parts)


def _x_labels(names: list[str], slot: float) -> list[str]:
    """Category names under their bars: all when they fit, else every k-th; slanted when long."""
    step = max(1, round(len(names) / (WIDTH / 40)))
    slanted = any(len(n) * 6 > slot * step for n in names[::step])
    out = []
    for i in range(0, len(names), step):
        x = LEFT + slot * (i + 0.5)
        y = HEIGHT - BOTTOM + 12
        name = escape(names[i][:14])
        if slanted:
            out.append(
                f'<text class="label" x="{x:.1f}" y="{y}" text-anchor="end" transform="rotate(-35 {x:.1f} {y})">'
                f"{name}</text>"
            )
        else:
            out.append(f'<text class="label" x="{x:.1f}" y="{y}" text-anchor="middle">{name}</text>')
    return out


def grouped_bars(title: str, categories: list[str], series: dict[str, list[float]], share: bool = False) -> str:
    """One group of bars per category, a bar per series in it (splits side by side). With
    `share`, each series is drawn as its share of its own total, so splits of different
    sizes compare: the tooltip gives both."""
    totals = {name: sum(values) or 1 for name, values in series.items()}
    heights = {name: [v / totals[name] if share else v for v in values] for name, values in series.items()}
    peak = max((v for values in heights.values() for v in values), default=0) or 1
    slot = (WIDTH - LEFT - 8) / max(1, len(categories))
    bar = slot * 0.8 / max(1, len(series))
    plot_h = HEIGHT - BOTTOM - TOP
    body = []
    for s, (name, values) in enumerate(series.items()):
        colour = PALETTE[s % len(PALETTE)]
        for i, value in enumerate(values):
            h = plot_h * heights[name][i] / peak
            x = LEFT + slot * i + slot * 0.1 + bar * s
            tip = f"{name}: {categories[i]}: {_number(value)}"
            if share:
                tip += f" ({value / totals[name]:.1%})"
            body.append(
                f'<rect class="bar" x="{x:.2f}" y="{TOP + plot_h - h:.2f}" width="{max(bar, 0.5):.2f}" '
                f'height="{h:.2f}" fill="{colour}"><title>{escape(tip)}</title></rect>'
            )
    shown = f"{title} (share of each split)" if share and len(series) > 1 else title
    return _frame(shown, peak, list(series), body, _x_labels(categories, slot), percent=share)


def histogram(title: str, bins: list[dict[str, float]], unit: str = "") -> str:
    """Adjacent bars of a distribution's bins ({from, to, count}), labelled by where they start."""
    names = [_number(b["from"]) for b in bins]
    counts = [b["count"] for b in bins]
    peak = max(counts, default=0) or 1
    slot = (WIDTH - LEFT - 8) / max(1, len(bins))
    plot_h = HEIGHT - BOTTOM - TOP
    body = []
    for i, b in enumerate(bins):
        h = plot_h * b["count"] / peak
        tip = f"{_number(b['from'])} to {_number(b['to'])}{unit}: {_number(b['count'])}"
        body.append(
            f'<rect class="bar" x="{LEFT + slot * i:.2f}" y="{TOP + plot_h - h:.2f}" width="{max(slot - 1, 0.5):.2f}" '
            f'height="{h:.2f}" fill="{PALETTE[0]}"><title>{escape(tip)}</title></rect>'
        )
    return _frame(title, peak, [], body, _x_labels(names, slot))
