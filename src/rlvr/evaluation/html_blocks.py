"""HTML building blocks shared by rlvr's report pages (``rlvr eval``, ``rlvr experiment``, ``rlvr report``).

Each page is one file with its CSS inline. The rule that keeps them safe: text that comes from records,
summaries or file names is escaped once, here or by the caller with :func:`escape`; table cells are HTML the
caller built (so a cell may hold a ``<pre>`` or a link).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def escape(value: Any) -> str:
    """Any value (None, a number, a path) as text that is safe inside HTML."""
    return html.escape(str(value))


def page(title: str, css: str, sections: Iterable[str]) -> str:
    """A whole page: the head with ``title`` (escaped here) and ``css``, then the sections one per line."""
    head = f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title><style>{css}</style></head><body>"
    return "\n".join([head, *sections, "</body></html>"])


def table(head: list[str], rows: Iterable[list[Any]]) -> str:
    """A table with one header row; the header's text is escaped here, the cells are HTML as given."""
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def key_value_table(rows: Iterable[tuple[Any, Any]]) -> str:
    """A two-column table of facts, each row its name as a header cell and its value; both escaped here."""
    return "<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows) + "</table>"


def embedded_png(path: str | Path, alt: str, title: bool = True) -> str:
    """An ``<img>`` that carries the PNG itself (base64), so the page stays one file to share; with ``title``
    the alt text also shows on hover."""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    hover = f" title='{escape(alt)}'" if title else ""
    return f"<img alt='{escape(alt)}'{hover} src='data:image/png;base64,{data}'>"
