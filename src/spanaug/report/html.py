"""Small self-contained HTML pages for the Snakemake report.

Snakemake's report shows an ``.html`` entry inline (in an iframe) and only offers a download for
CSV or JSON, so every table is rendered here as a page of its own: inline CSS, no scripts, no
external resources, every piece of text escaped. A page can carry its raw file as a download link
(a data URI), so the report stays a single file that still holds the raw numbers.
"""

from __future__ import annotations

import base64
import html
import math
import mimetypes
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spanaug.core import files

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 14px; color: #1f2933;
       margin: 1.2em 1.6em; line-height: 1.45; }
h1 { font-size: 1.35em; margin: 0 0 .4em; } h2 { font-size: 1.12em; margin: 1.4em 0 .4em; }
h3 { font-size: 1em; margin: 1.2em 0 .3em; }
table { border-collapse: collapse; margin: .4em 0 1em; }
th, td { border: 1px solid #d5dbe1; padding: .25em .6em; vertical-align: top; text-align: left; }
th { background: #eef2f6; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr:nth-child(even) td { background: #fafbfc; }
.note { color: #52606d; } .small { font-size: .9em; }
.banner { padding: .6em .9em; border-radius: 4px; margin: .6em 0 1em; }
.banner.demo { background: #fff4ce; border: 1px solid #e0c060; }
.banner.warn { background: #fde8e8; border: 1px solid #e0a0a0; }
.banner.ok { background: #e6f4ea; border: 1px solid #9ccfa8; }
mark.trigger { background: #ffe08a; padding: 0 .15em; border-radius: 3px; }
mark.aligned { background: #a8e6b4; padding: 0 .15em; border-radius: 3px; }
mark.source { background: #ffe08a; padding: 0 .15em; border-radius: 3px; }
span.kind { font-size: .8em; padding: .05em .4em; border-radius: 3px; color: #fff; }
span.kind.empty { background: #c0392b; } span.kind.degraded { background: #b9770e; }
details summary { cursor: pointer; color: #3e4c59; }
a.download { font-size: .9em; }
img.figure { max-width: 100%; height: auto; display: block; margin: .4em 0 1em; }
"""


def esc(value: Any) -> str:
    """Text made safe for HTML (quotes included, as it may land in attributes)."""
    return html.escape(str(value), quote=True)


def fmt(value: Any) -> str:
    """A scalar for a table cell: floats to 3 decimals (or 4 significant digits), None as a dash."""
    if value is None:
        return "&ndash;"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "&ndash;"
        if value != 0 and abs(value) < 0.001:
            return esc(f"{value:.2e}")
        return esc(f"{value:,.3f}" if abs(value) < 1e6 else f"{value:,.0f}")
    if isinstance(value, int):
        return esc(f"{value:,}")
    return esc(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def cell(value: Any) -> str:
    """A ``<td>``: numbers right-aligned, nested JSON values rendered as nested tables or lists."""
    if _is_number(value) or value is None:
        return f'<td class="num">{fmt(value)}</td>'
    return f"<td>{value_html(value)}</td>"


def table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    max_rows: int | None = None,
    raw_html: Sequence[str] = (),
) -> str:
    """An HTML table of dict rows; columns are the union of the rows' keys unless given.

    ``raw_html`` names columns whose values are already HTML (made by this module); every other
    value is escaped.
    """
    columns = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    shown = rows if max_rows is None else rows[:max_rows]
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for row in shown:
        cells = [f"<td>{row.get(c, '')}</td>" if c in raw_html else cell(row.get(c)) for c in columns]
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = ""
    if max_rows is not None and len(rows) > max_rows:
        more = f'<p class="note small">The first {max_rows:,} of {len(rows):,} rows; the raw file has them all.</p>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{more}"


def value_html(value: Any) -> str:
    """Any JSON value: an object as a key/value table, a list of objects as a table, a list of
    scalars as comma-separated text, a scalar formatted."""
    if isinstance(value, Mapping):
        if not value:
            return '<span class="note">(empty)</span>'
        rows = "".join(f"<tr><th>{esc(k)}</th>{cell(v)}</tr>" for k, v in value.items())
        return f"<table><tbody>{rows}</tbody></table>"
    if isinstance(value, (list, tuple)):
        if not value:
            return '<span class="note">(none)</span>'
        if all(isinstance(v, Mapping) for v in value):
            return table(value)
        return esc(", ".join("–" if v is None else str(v) for v in value))
    return fmt(value)


def marked(tokens: Sequence[str], spans: Sequence[tuple[int | None, int | None, str]]) -> str:
    """Tokens joined by spaces, with each ``(start, end, css_class)`` span (inclusive) in a ``<mark>``."""
    opens: dict[int, list[str]] = {}
    closes: dict[int, int] = {}
    for start, end, cls in spans:
        if start is None or end is None:
            continue
        opens.setdefault(start, []).append(cls)
        closes[end] = closes.get(end, 0) + 1
    out = []
    for i, token in enumerate(tokens):
        piece = "".join(f'<mark class="{esc(c)}">' for c in opens.get(i, [])) + esc(token)
        piece += "</mark>" * closes.get(i, 0)
        out.append(piece)
    return " ".join(out)


def download_link(path: Path | str, label: str | None = None) -> str:
    """A link that downloads ``path`` from a data URI embedded in the page."""
    path = Path(path)
    mime = mimetypes.guess_type(path.name)[0] or "text/plain"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (
        f'<a class="download" download="{esc(path.name)}" href="data:{mime};base64,{data}">'
        f"{esc(label or 'download ' + path.name)}</a>"
    )


def png_image(png: bytes, alt: str) -> str:
    """An ``<img>`` holding a PNG as a data URI (the page stays one self-contained file)."""
    data = base64.b64encode(png).decode("ascii")
    return f'<img class="figure" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def warnings_html(warnings: Sequence[Mapping[str, Any]]) -> str:
    """A stage's recorded warnings (:mod:`spanaug.core.degraded`) as a red banner, or nothing."""
    if not warnings:
        return ""
    items = "".join(
        f'<li><span class="kind {esc(w.get("kind", "degraded"))}">{esc(w.get("kind", "degraded"))}</span> '
        f"{esc(w.get('message', ''))}</li>"
        for w in warnings
    )
    return f'<div class="banner warn"><strong>Warnings</strong><ul>{items}</ul></div>'


def page(title: str, body: str) -> str:
    """A whole self-contained HTML document."""
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f"<style>{STYLE}</style></head>\n<body>\n<h1>{esc(title)}</h1>\n{body}\n</body></html>\n"
    )


def write_page(text: str, path: Path | str) -> None:
    """Write an HTML page atomically."""
    with files.atomic_path(path, ".html") as tmp:
        tmp.write_text(text, encoding="utf-8")
