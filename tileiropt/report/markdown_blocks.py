"""Markdown building blocks of the report: a value made safe for a table cell or a line, a table, a list."""

from __future__ import annotations

from typing import Any


def cell(text: Any) -> str:
    """A value made safe for a Markdown table cell."""
    return one_line(text).replace("|", "\\|")


def one_line(text: Any) -> str:
    """A value on one line: a name from the records can never start a heading or a block of its own."""
    return " ".join(str(text).split()) if any(c in str(text) for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029") \
        else str(text)


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table, every value made safe for its cell."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("-" * (len(h) + 2) for h in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def bullets(lines: list[str]) -> str:
    """A Markdown list, one line per item."""
    return "\n".join(f"- {line}" for line in lines)
