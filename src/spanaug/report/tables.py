"""Report tables: each CSV or JSON result rendered as an HTML page, its raw file a download on the page."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spanaug.core.errors import ConfigError, InputError
from spanaug.core.provenance import ModelOrigin
from spanaug.report import html


def _number(text: str) -> Any:
    """A CSV cell as int or float when it reads as one (so it is formatted and right-aligned)."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_csv(path: Path | str) -> tuple[list[str], list[dict[str, Any]]]:
    """The header and rows of a CSV file, numbers parsed."""
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            rows = [{k: _number(v or "") for k, v in row.items()} for row in reader]
            return list(reader.fieldnames or []), rows
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(path, None, f"not a readable CSV file ({exc})") from None


def read_json(path: Path | str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(path, None, f"not a readable JSON file ({exc})") from None


def toy_descriptions(toys: Sequence[ModelOrigin]) -> list[str]:
    """What the toy-models banner says of each toy model (``spanaug.core.provenance``)."""
    # describe() is Markdown for the dataset card: its backticks would show on the page.
    return [origin.describe().replace("`", "") for origin in toys]


def table_page(path: Path | str, max_rows: int, title: str | None = None, toys: Sequence[str] = ()) -> str:
    """The HTML page of one CSV or JSON file: the toy-models banner when ``toys`` describes any, its
    warnings (when it records any), then the table (a JSON object: its keys and values, nested
    objects and row lists as tables), each cut at ``max_rows`` rows (``report.max_rows``)."""
    path = Path(path)
    page = {
        "title": title or path.name,
        "path": path,
        "max_rows": max_rows,
        "warnings": [],
        "columns": None,
        "toys": list(toys),
    }
    if path.suffix == ".csv":
        columns, rows = read_csv(path)
        return html.render("table_page.html", **page | {"columns": columns}, rows=rows, data=None)
    if path.suffix == ".json":
        data = read_json(path)
        warnings = data.pop("warnings", None) if isinstance(data, dict) else None
        rows = data if isinstance(data, list) and all(isinstance(r, dict) for r in data) else None
        return html.render("table_page.html", **page | {"warnings": warnings or []}, rows=rows, data=data)
    raise ConfigError(f"{path}: only CSV and JSON files are rendered as report tables")


def render_tables(
    inputs: Sequence[Path | str],
    outputs: Sequence[Path | str],
    max_rows: int,
    titles: Sequence[str] = (),
    toys: Sequence[ModelOrigin] = (),
) -> None:
    """Render each input file into the output page of the same position (each with the toy-models
    banner when ``toys`` holds any: results that derive from those models show mechanics only)."""
    if len(inputs) != len(outputs):
        raise ConfigError(f"{len(inputs)} inputs but {len(outputs)} outputs: give one page per table")
    if titles and len(titles) != len(inputs):
        raise ConfigError(f"{len(titles)} titles for {len(inputs)} tables")
    said = toy_descriptions(toys)
    for n, (src, out) in enumerate(zip(inputs, outputs)):
        html.write_page(table_page(src, max_rows, titles[n] if titles else None, said), out)
