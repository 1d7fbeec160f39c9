"""The report's HTML: one file with its style, charts (inline SVG) and thumbnails (data
URIs) inside, so it opens from disk or a CI artifact with no network. It renders what
report.py gathered and computes nothing of its own; the --stats report it drew from is
embedded at the end as JSON."""

from __future__ import annotations

import json
import os
from html import escape
from typing import Any, NamedTuple

from ..dataset import order_quality
from ..dataset.near_duplicates import THRESHOLD
from .charts import grouped_bars, histogram
from .paths import split_of
from .summary import counted, human_bytes

MAX_BARS = 60  # classes drawn in a label chart; the rest are counted in its title

STYLE = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;margin:0;background:#f6f7f9}
main{max-width:1200px;margin:0 auto;padding:16px 24px 40px}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #d8dbe0}
h3{font-size:15px;margin:14px 0 6px}
.facts{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
.fact{background:#fff;border:1px solid #d8dbe0;border-radius:6px;padding:4px 10px}
table{border-collapse:collapse;width:100%;background:#fff;margin:6px 0}
th,td{border:1px solid #e1e4e8;padding:3px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#eef0f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font:12px ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:12px}
.charts figure{margin:0;background:#fff;border:1px solid #d8dbe0;border-radius:6px;padding:6px}
svg.chart{width:100%;height:auto;display:block}
svg.chart text{font-size:11px;fill:#444}svg.chart text.title{font-size:13px;font-weight:600;fill:#1d1d1f}
svg.chart line.grid{stroke:#e4e6ea}
.row{display:flex;gap:10px;align-items:flex-start;margin:6px 0}
.row h3{flex:0 0 110px;margin:4px 0;overflow-wrap:anywhere}
.thumbs{display:flex;flex-wrap:wrap;gap:6px}
figure.thumb{margin:0;width:104px;background:#fff;border:1px solid #d8dbe0;border-radius:4px;padding:3px}
figure.thumb img{width:96px;height:96px;object-fit:contain;display:block;margin:0 auto}
figure.thumb img.px{image-rendering:pixelated}
figure.thumb figcaption{font-size:11px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.pair{display:flex;flex-wrap:wrap;gap:10px;align-items:center;background:#fff;border:1px solid #d8dbe0;
border-radius:6px;padding:6px;margin:6px 0}
.ok{color:#0a7d32}.bad{color:#b3261e}.note{color:#5f6368}
"""


class Page(NamedTuple):
    html: str
    thumbnails: int
    charts: int


def _fact(label: str, value: Any) -> str:
    return f'<span class="fact">{escape(label)}: <b>{escape(str(value))}</b></span>'


def _table(head: list[str], rows: list[list[Any]], numeric: set[int] = frozenset()) -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=n' if i in numeric else ''}>{c if isinstance(c, Markup) else escape(str(c))}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


class Markup(str):
    """HTML already escaped, placed in a table cell as it is."""


def _code(value: Any, limit: int = 120) -> Markup:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return Markup(f"<code>{escape(text[:limit] + ('…' if len(text) > limit else ''))}</code>")


def _header(data: dict[str, Any]) -> str:
    summary = data["summary"]
    files = summary["files"]
    formats = sorted({f["format"] for f in files})
    compressions = sorted({f["compression"] for f in files})
    parts = [
        f"<h1>{escape(data['title'])}</h1>",
        '<div class="facts">',
        _fact("records", f"{summary['records']:,}"),
        _fact("files", len(files)),
        _fact("size", human_bytes(summary["bytes"])),
        _fact("format", ", ".join(formats)),
        _fact("compression", ", ".join(compressions)),
        "</div>",
    ]
    splits: dict[str, list[int]] = {}
    for f in files:
        entry = splits.setdefault(split_of(f["path"]) or os.path.basename(f["path"]), [0, 0, 0])
        entry[0] += f["records"]
        entry[1] += 1
        entry[2] += f["bytes"]
    parts.append("<h2>Splits</h2>")
    parts.append(
        _table(
            ["split (or file)", "records", "files", "size"],
            [[name, f"{r:,}", n, human_bytes(b)] for name, (r, n, b) in splits.items()],
            numeric={1, 2, 3},
        )
    )
    return "".join(parts)


def _schema(data: dict[str, Any]) -> str:
    summary = data["summary"]
    example = summary["examples"][0]["features"] if summary["examples"] else {}
    rows = []
    for name, s in summary["schema"].items():
        lo, hi = s["min_values"], s["max_values"]
        shape = str(lo) if lo == hi else f"{lo}..{hi}"
        values = example.get(name, {}).get("values", "")
        rows.append([Markup(f"<code>{escape(name)}</code>"), s["kind"], shape, f"{s['fraction']:.1%}", _code(values)])
    of = summary["schema_from_records"]
    note = f'<p class="note">Inferred from {counted(of, "record")}; the example is the first record.</p>'
    return "<h2>Schema</h2>" + _table(["feature", "kind", "values", "present in", "example"], rows) + note


def _provenance(data: dict[str, Any]) -> str:
    parts = []
    for p in data["provenance"]:
        parts.append(f"<h3>{escape(p['path'])}</h3>")
        parts.append(
            '<div class="facts">'
            + _fact("written by", p["tool"])
            + _fact("converter", p["converter"])
            + _fact("skipped inputs", p["skipped"])
            + "</div>"
        )
        options = [
            f'<code class="fact">{escape(k)}={escape(json.dumps(v, ensure_ascii=False)[:80])}</code>'
            for k, v in sorted(p["options"].items())
        ]
        if options:
            parts.append('<div class="facts">' + "".join(options) + "</div>")
        sources = [
            [s.get("file", ""), f"{s.get('bytes', 0):,}", _code(s.get("sha256", ""))]
            for s in p["sources"]
            if isinstance(s, dict)
        ]
        if sources:
            parts.append(_table(["input", "bytes", "sha256"], sources, numeric={1}))
        parts += [f'<p class="note">warning: {escape(str(w))}</p>' for w in p["warnings"]]
    return "<h2>Provenance</h2>" + "".join(parts) if parts else ""


def _label_charts(figures: dict[str, Any]) -> list[str]:
    charts = []
    splits = figures.get("splits", {})
    for name, feature in figures["features"].items():
        if "histogram" not in feature:
            continue
        names = feature.get("class_names", {})
        totals = feature["histogram"]
        keys = sorted(totals, key=int)
        if len(keys) > MAX_BARS:
            kept = set(sorted(keys, key=lambda k: -totals[k])[:MAX_BARS])
            keys = [k for k in keys if k in kept]
        title = f"{name} per split" if len(splits) > 1 else name
        if len(totals) > len(keys):
            title += f" ({len(keys)} most frequent of {len(totals)})"
        series = {
            split: [s["histograms"].get(name, {}).get(k, 0) for k in keys]
            for split, s in splits.items()
            if name in s["histograms"]
        } or {"all": [totals[k] for k in keys]}
        charts.append(grouped_bars(title, [names.get(k, k) for k in keys], series, share=len(series) > 1))
    for name, feature in figures["features"].items():
        mask = feature.get("mask")
        if mask:
            named = mask.get("class_names", {})
            keys = list(mask["pixels"])[:MAX_BARS]
            labels = [named.get(k, k) for k in keys]
            charts.append(
                grouped_bars(
                    f"{name}: share of pixels", labels, {"pixels": [mask["pixels"][k] for k in keys]}, share=True
                )
            )
            charts.append(
                grouped_bars(
                    f"{name}: images showing each class", labels, {"images": [mask["images_with"][k] for k in keys]}
                )
            )
    boxes = figures.get("boxes")
    if boxes and boxes["classes"]:
        classes = list(boxes["classes"].items())[:MAX_BARS]
        title = "boxes per class" + (
            f" ({MAX_BARS} of {len(boxes['classes'])})" if len(boxes["classes"]) > MAX_BARS else ""
        )
        charts.append(grouped_bars(title, [k or "?" for k, _ in classes], {"boxes": [v for _, v in classes]}))
    return charts


def _distribution_charts(figures: dict[str, Any]) -> list[str]:
    charts = []
    for name, feature in figures["features"].items():
        spread = feature.get("image", {}).get("distribution", {})
        for key, unit in (("width", " px"), ("height", " px"), ("aspect", "")):
            if spread.get(key, {}).get("values"):
                what = "aspect (width / height)" if key == "aspect" else f"{key} (px)"
                charts.append(histogram(f"{name}: image {what}", spread[key]["bins"], unit))
    for name, feature in figures["features"].items():
        spread = feature.get("distribution", {})
        if spread.get("values") and "histogram" not in feature:  # labels have their bars above
            missing = f", missing in {feature['missing_share']:.1%}" if feature.get("missing") else ""
            charts.append(histogram(f"{name}: values{missing}", spread["bins"]))
    if figures.get("record_bytes", {}).get("values"):
        charts.append(histogram("bytes per record", figures["record_bytes"]["bins"], " B"))
    boxes = figures.get("boxes", {}).get("distribution", {})
    unit = " px" if figures.get("boxes", {}).get("size_unit") == "px" else ""
    for key, title in (("per_image", "boxes per image"), ("width", "box width"), ("height", "box height")):
        if boxes.get(key, {}).get("values"):
            charts.append(
                histogram(
                    title + (f" ({unit.strip()})" if key != "per_image" and unit else ""),
                    boxes[key]["bins"],
                    "" if key == "per_image" else unit,
                )
            )
    return charts


def _thumb(thumb: dict[str, Any] | None, label: str) -> str:
    if thumb is None:
        return f'<figure class="thumb"><figcaption>{escape(label)} (no picture)</figcaption></figure>'
    pixelated = ' class="px"' if thumb["src"].startswith("data:image/png") else ""
    where = f"{thumb['file']} record {thumb['record']}"
    return (
        f'<figure class="thumb" title="{escape(where)}"><img{pixelated} src="{thumb["src"]}" '
        f'alt="{escape(label)}"><figcaption>{escape(label)}</figcaption></figure>'
    )


def _galleries(data: dict[str, Any]) -> tuple[str, int]:
    rows = data["galleries"]
    if not rows:
        return "", 0
    limits = data["limits"]
    if data["classes"]:
        said = (
            f"At most {limits['per_class']} pictures per class, the first in reading order, "
            f"for the first {limits['max_classes']} classes met"
            f" ({len(rows)} of {data['classes']} shown)."
        )
    else:
        said = f"No labels: the first {limits['unlabelled']} pictures."
    parts = [
        f"<h2>Pictures</h2><p class=note>{escape(said)} Feature <code>{escape(str(data['image_feature']))}</code>; "
        f"thumbnails {limits['side']} px; hover for file and record.</p>"
    ]
    count = 0
    for name, thumbs in rows.items():
        parts.append(f'<div class="row"><h3>{escape(name or "?")}</h3><div class="thumbs">')
        parts += [_thumb(t, t["caption"]) for t in thumbs]
        parts.append("</div></div>")
        count += len(thumbs)
    return "".join(parts), count


def _ref(ref: dict[str, Any]) -> str:
    """A record in a pair: its split, then its file name (the filename feature, else the
    picture's caption), else its shard and record."""
    split = ref.get("split") or split_of(ref["file"]) or ""
    caption = ref["thumb"]["caption"] if ref.get("thumb") else ""
    return f"{split}: " + (ref.get("filename") or caption or f"{os.path.basename(ref['file'])} record {ref['record']}")


def _duplicates(data: dict[str, Any]) -> tuple[str, int]:
    leakage = data["stats"].get("leakage")
    if leakage is None:
        return "", 0
    exact, near = leakage["images_in_several_splits"], leakage["near_duplicate_pairs"]
    formats = {k for f in data["stats"]["features"].values() for k in f.get("image", {}).get("formats", {})}
    parts = [
        "<h2>Duplicates across splits</h2>",
        f'<p class="{"bad" if exact else "ok"}">{counted(exact, "image")} with the same bytes in more than one split.</p>',
        f'<p class="{"bad" if near else "ok"}">{counted(near, "pair")} of similar images in different splits '
        f"(perceptual hash within {THRESHOLD} of 64 bits).</p>"
        if formats - {"raw"}
        else '<p class="note">Near-duplicates not looked for: the images are raw pixels, which are not hashed.</p>',
    ]
    count = 0
    listed = len(leakage["examples"])
    for i, group in enumerate(data["pairs"]):
        kind = "same bytes" if i < listed else f"distance {leakage['near_duplicates'][i - listed]['distance']}"
        parts.append(f'<div class="pair"><span>{escape(kind)}</span>')
        for ref in group:
            parts.append(_thumb(ref["thumb"], _ref(ref)))
            count += ref["thumb"] is not None
        parts.append("</div>")
    return "".join(parts), count


def _problems(data: dict[str, Any]) -> str:
    checked, figures = data["verify"], data["stats"]
    rows = [
        [f["path"], p["record"], "" if p["offset"] is None else f"{p['offset']:,}", p["kind"], p["message"]]
        for f in checked["files"]
        for p in f["problems"]
    ]
    rows += [
        [os.path.join(d["path"], p["file"]), "", "", p["kind"], p["message"]]
        for d in checked["datasets"]
        for p in d["problems"]
    ]
    parts = ["<h2>Problems</h2>"]
    if rows:
        parts.append(f'<p class="bad">{counted(len(rows), "problem")} found by --verify.</p>')
        parts.append(_table(["file", "record", "byte offset", "kind", "message"], rows, numeric={1, 2}))
    else:
        parts.append(
            f'<p class="ok">--verify: no problems; every CRC of {counted(checked["records"], "record")} '
            f"in {counted(len(checked['files']), 'file')} checked.</p>"
        )
    if figures["undecodable_records"]:
        parts.append(f'<p class="bad">{counted(figures["undecodable_records"], "record")} not a tf.train.Example.</p>')
    parts += [f'<p class="note">{escape(note)}</p>' for d in checked["datasets"] for note in d.get("notes", [])]
    order = [
        [split, name, order_quality.verdict(figure)]
        for split, by_feature in figures.get("order", {}).items()
        for name, figure in by_feature.items()
    ]
    if order:
        parts.append("<h3>Shuffle quality</h3>" + _table(["split", "label", "order"], order))
    return "".join(parts)


def render(data: dict[str, Any]) -> Page:
    charts = _label_charts(data["stats"]) + _distribution_charts(data["stats"])
    pictures, thumbnails = _galleries(data)
    duplicates, paired = _duplicates(data)
    figures = json.dumps(data["stats"], ensure_ascii=False).replace("</", "<\\/")
    body = "".join(
        [
            _header(data),
            _schema(data),
            "<h2>Charts</h2><div class=charts>" + "".join(f"<figure>{c}</figure>" for c in charts) + "</div>"
            if charts
            else "",
            pictures,
            duplicates,
            _problems(data),
            _provenance(data),
        ]
    )
    html = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(data['title'])}: tfr-inspect report</title><style>{STYLE}</style></head>"
        f"<body><main>{body}"
        f'<p class="note">Made by tfr-inspect {escape(data["version"])} --report. Its numbers are those of '
        "<code>tfr-inspect --stats --json</code>, embedded in this page as <code>#tfr-stats</code>.</p>"
        f'<script type="application/json" id="tfr-stats">{figures}</script></main></body></html>\n'
    )
    return Page(html, thumbnails + paired, len(charts))
