"""Markdown building blocks of the report: a value made safe for a table cell or a line, a table, a list."""

from __future__ import annotations

import re
from typing import Any

LAUNCH_NUMBER = re.compile(r"#\d+$")  # `kernel#2`: the second distinct captured launch of `kernel`


def cell(text: object) -> str:
    """A value made safe for a Markdown table cell."""
    return one_line(text).replace("|", "\\|")


def one_line(text: object) -> str:
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


def launch_names(names: list[str], bold: bool = False) -> str:
    """Names of captured launches said once per kernel: `k#1, k#2, k#3` -> `k (3 launches)`, in first-seen order."""
    counts: dict[str, int] = {}
    for name in names:
        kernel = LAUNCH_NUMBER.sub("", name)
        counts[kernel] = counts.get(kernel, 0) + 1
    shown = (f"**{cell(k)}**" if bold else cell(k) for k in counts)
    return ", ".join(name + (f" ({n} launches)" if n > 1 else "") for name, n in zip(shown, counts.values()))


def grouped_lines(entries: list[tuple[str, str]], bold: bool = True) -> list[str]:
    """`(name, text)` pairs as one line per distinct text, its names first: a reason shared by many launches is
    said once."""
    by_text: dict[str, list[str]] = {}
    for name, text in entries:
        by_text.setdefault(text, []).append(name)
    return [f"{launch_names(names, bold)}: {text}" for text, names in by_text.items()]
