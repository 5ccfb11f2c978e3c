"""Where a project file's error is: the key path's line, and the one-line errors that name it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tileiropt.errors import UserError


class Where:
    """Builds errors that name the file, the line and the key path."""

    def __init__(self, file: str | None):
        self.file = file

    def error(self, key: str, message: str, hint: str | None = None) -> UserError:
        prefix = f"[{key}] " if key else ""
        return UserError(f"{prefix}{message}", file=self.file, line=self.line_of(key), hint=hint)

    def line_of(self, key: str) -> int | None:
        try:
            return key_line(Path(self.file).read_text(encoding="utf-8"), key) if self.file and key else None
        except OSError:
            return None


_KEY_PART = re.compile(r"([A-Za-z_][\w-]*)(?:\[(\d+)\])?")


def key_line(text: str, key: str) -> int | None:
    """The line (1-based) where a key path such as `kernel[1].reference` or `defaults.sizes` is written in the
    TOML text: the key's own line inside its table (`[[kernel]]` counted; `name =`, a dotted `name.x =`, or a
    sub-table `[kernel.name]`), else its table's header; None where neither is found."""
    parts = [m.groups() for m in (_KEY_PART.fullmatch(p) for p in key.split(".")) if m]
    if not parts:
        return None
    lines = text.splitlines()
    table, index = parts[0]
    name = re.escape(table)
    header = re.compile(rf"^\s*\[\[\s*{name}\s*\]\]" if index is not None else rf"^\s*\[\[?\s*{name}\s*\]\]?")
    starts = [n for n, line in enumerate(lines) if header.match(line)]
    wanted = int(index) if index is not None else 0
    if len(starts) <= wanted:
        found = next((n for n, line in enumerate(lines) if re.match(rf"^\s*{name}\s*(=|\.)", line)), None)
        return None if found is None else found + 1
    start = starts[wanted]
    later = [n for n in starts if n > start]
    end = later[0] if later else len(lines)  # the next table of the same name; sub-tables belong to this one
    if len(parts) > 1:
        inner = re.escape(parts[1][0])
        for n in range(start + 1, end):
            if re.match(rf"^\s*\[\s*{name}\s*\.\s*{inner}\s*\]", lines[n]):
                return n + 1  # a sub-table of its own: `[kernel.args]`
        section = next((n for n in range(start + 1, end) if re.match(r"^\s*\[", lines[n])), end)
        for n in range(start + 1, section):
            if re.match(rf"^\s*[\"']?{inner}[\"']?\s*(=|\.)", lines[n]):
                return n + 1
    return start + 1


def unknown_keys(table: dict, allowed: set[str], where: Where, key: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise where.error(key + "." + unknown[0] if key else unknown[0], "unknown key",
                          f"allowed keys: {', '.join(sorted(allowed))}")



def parse_command(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise UserError(f"capture command is not valid shell syntax: {exc}", hint="quote it as a shell would") \
            from None
