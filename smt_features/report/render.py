"""Report documents: tables, figures and sections, rendered as Markdown and as self-contained HTML (inline CSS)."""
from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


@dataclass
class Figure:
    title: str
    file: str  # PNG name, beside the report
    caption: str = ""


@dataclass
class Section:
    title: str
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _md_text(text: str) -> str:
    """Markdown-safe text: ``<`` outside backquotes as ``&lt;`` (so ``</s>`` is not read as HTML)."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|")


def render_markdown(title: str, sections: Sequence[Section]) -> str:
    out = [f"# {_md_text(title)}", ""]
    for sec in sections:
        out += [f"## {sec.title}", ""]
        for t in sec.tables:
            out += [f"**{_md_text(t.title)}**", "", "| " + " | ".join(_md_cell(h) for h in t.header) + " |",
                    "|" + "|".join("---" for _ in t.header) + "|"]
            out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
            out += [""] + [f"*{_md_text(n)}*" for n in t.notes]
        for f in sec.figures:
            out += [f"![{_md_text(f.title)}]({f.file})", "", f"*{_md_text(f.title)}.* {_md_text(f.caption)}", ""]
        out += [f"- {_md_text(n)}" for n in sec.notes]
        out.append("")
    return "\n".join(out)


CSS = """body{font-family:system-ui,sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #bbb;padding:.25em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#eee}figure{margin:1em 0}
img{max-width:100%}figcaption{font-size:.9em;color:#555}.note{color:#666;font-size:.9em}
code{background:#f4f4f4;padding:0 .2em}td.t{text-align:left}"""


def _html_text(text: str) -> str:
    # backquoted pieces (signatures) as <code>
    parts = html.escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


_NUMERIC = re.compile(r"^[-+0-9.,%±()–= n]*$")


def _html_cell(text: str) -> str:
    """A table cell: figures right-aligned (the CSS default), text left-aligned."""
    cls = "" if _NUMERIC.match(text) else ' class="t"'
    return f"<td{cls}>{html.escape(text)}</td>"


def render_html(title: str, sections: Sequence[Section]) -> str:
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{html.escape(title)}</title>",
           f"<style>{CSS}</style></head><body>", f"<h1>{html.escape(title)}</h1>"]
    for sec in sections:
        out.append(f"<h2>{html.escape(sec.title)}</h2>")
        for t in sec.tables:
            out.append(f"<table><caption>{html.escape(t.title)}</caption><thead><tr>"
                       + "".join(f"<th>{html.escape(h)}</th>" for h in t.header) + "</tr></thead><tbody>")
            out += ["<tr>" + "".join(_html_cell(c) for c in row) + "</tr>" for row in t.rows]
            out.append("</tbody></table>")
            out += [f'<p class="note">{_html_text(n)}</p>' for n in t.notes]
        for f in sec.figures:
            out.append(f'<figure><img src="{html.escape(f.file)}" alt="{html.escape(f.title)}">'
                       f"<figcaption><b>{html.escape(f.title)}.</b> {html.escape(f.caption)}</figcaption></figure>")
        out += [f'<p class="note">{_html_text(n)}</p>' for n in sec.notes]
    out.append("</body></html>")
    return "\n".join(out) + "\n"
