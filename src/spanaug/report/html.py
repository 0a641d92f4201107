"""Small self-contained HTML pages for the Snakemake report, rendered from templates.

Snakemake's report shows an ``.html`` entry inline (in an iframe) and only offers a download for
CSV or JSON, so every table is rendered here as a page of its own: inline CSS, no scripts, no
external resources. A page can carry its raw file as a download link (a data URI), so the report
stays a single file that still holds the raw numbers.

The pages are Jinja2 templates (``templates/``, package data): ``base.html`` is the page layout,
``macros.html`` the building blocks (tables of any JSON value, marked sentences, downloads,
figures, warning banners), and each page or fragment has a template of its own. Escaping lives in
one place: the environment autoescapes every value, so only :class:`~markupsafe.Markup` (what a
template rendered) goes into a page unescaped.
"""

from __future__ import annotations

import base64
import math
import mimetypes
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jinja2
from markupsafe import Markup

from spanaug.core import files
from spanaug.core.provenance import TOY_RULE

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

#: A dash for a missing value (markup, so autoescape leaves the entity alone).
DASH = Markup("&ndash;")


def fmt(value: Any) -> str:
    """A scalar for a table cell: floats to 3 decimals (or 4 significant digits), None as a dash.

    Text is returned as is: the template escapes it."""
    if value is None:
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return DASH
        if value != 0 and abs(value) < 0.001:
            return f"{value:.2e}"
        return f"{value:,.3f}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def is_number(value: Any) -> bool:
    """An int or float, not a bool (Jinja's own ``number`` test counts booleans)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_rows(value: Any) -> bool:
    """A list of JSON objects: shown as a table."""
    return isinstance(value, (list, tuple)) and all(isinstance(v, Mapping) for v in value)


def is_list(value: Any) -> bool:
    """A JSON list (Jinja's ``sequence`` test also holds for strings)."""
    return isinstance(value, (list, tuple))


def columns_of(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The union of the rows' keys, in first-seen order."""
    return list(dict.fromkeys(k for r in rows for k in r))


class Attachment(NamedTuple):
    """A file embedded in a page as a data URI."""

    name: str
    mime: str
    data: str


def attachment(path: Path | str) -> Attachment:
    path = Path(path)
    mime = mimetypes.guess_type(path.name)[0] or "text/plain"
    return Attachment(path.name, mime, base64.b64encode(path.read_bytes()).decode("ascii"))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _environment() -> jinja2.Environment:
    # StrictUndefined: a misspelt name fails the page instead of leaving a silent blank.
    # trim_blocks/lstrip_blocks: a line holding only a {% tag %} leaves nothing in the page.
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("spanaug.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(fmt=fmt, b64=b64)
    env.tests.update(number_value=is_number, rows=is_rows, list=is_list)
    env.globals.update(STYLE=Markup(STYLE), columns_of=columns_of, attachment=attachment, TOY_RULE=TOY_RULE)
    return env


ENV = _environment()


def render(template: str, /, **context: Any) -> Markup:
    """A template rendered with ``context``; markup, so it can go into another template as is."""
    return Markup(ENV.get_template(template).render(**context))


def macro(name: str, template: str = "macros.html") -> Any:
    """A macro of ``template``, callable from Python (it returns markup)."""
    return getattr(ENV.get_template(template).module, name)


def marked(tokens: Sequence[str], spans: Sequence[tuple[int | None, int | None, str]]) -> Markup:
    """Tokens joined by spaces, with each ``(start, end, css_class)`` span (inclusive) in a ``<mark>``
    (spans without a start or end are left out)."""
    return macro("marked")(tokens, spans)


def write_page(text: str, path: Path | str) -> None:
    """Write an HTML page atomically."""
    with files.atomic_path(path, ".html") as tmp:
        tmp.write_text(text, encoding="utf-8")
