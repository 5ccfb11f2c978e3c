"""Reading and parsing kernel files, and cutting the exact source text of syntax-tree nodes.

The analysis works on Python's own syntax tree (`ast`): it is exact for structure and line
numbers and is several times faster than a concrete syntax tree, which matters when a whole
repository is scanned. Rewrites (which must keep comments) use libcst in `tileiropt.apply`.
"""

from __future__ import annotations

import ast
import io
import os
import stat
import tokenize
from pathlib import Path

from tileiropt.errors import UserError


class SourceText:
    """The lines of a file, for cutting node source text by (line, column) without re-splitting."""

    def __init__(self, source: str):
        self.source = source
        self.lines = source.splitlines(keepends=True)

    def line(self, number: int) -> str:
        """Physical line `number` (1-based) without its line ending; '' when out of range."""
        if 1 <= number <= len(self.lines):
            return self.lines[number - 1].rstrip("\r\n")
        return ""

    def before(self, number: int, column: int) -> str:
        """Line `number`'s text before `column` (a UTF-8 byte offset, as `ast` counts)."""
        return _cut(self.line(number), 0, column)

    def segment(self, node: ast.AST) -> str:
        """The exact source text of `node` (columns in `ast` are UTF-8 byte offsets)."""
        first, last = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        if first is None or last is None or end is None:
            return ast.unparse(node)
        return self.span(first, start, last, end)

    def span(self, first: int, start: int, last: int, end: int) -> str:
        """The text from line `first`, column `start` to line `last`, column `end` (UTF-8 byte offsets)."""
        if first == last:
            return _cut(self.lines[first - 1], start, end)
        parts = [_cut(self.lines[first - 1], start, None)]
        parts.extend(self.lines[first:last - 1])
        parts.append(_cut(self.lines[last - 1], 0, end))
        return "".join(parts)


def _cut(line: str, start: int, end: int | None) -> str:
    if line.isascii():
        return line[start:end]
    return line.encode("utf-8")[start:end].decode("utf-8", errors="replace")


def parse_source(source: str, path: str = "<string>") -> ast.Module:
    """Parse Python source; a syntax error becomes a one-line `UserError` naming file and line."""
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise UserError(f"cannot parse: {exc.msg}", file=path, line=exc.lineno,
                        hint="the file must be valid Python for the running interpreter") from None
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        raise UserError(f"cannot parse: {exc}", file=path, hint="is this a Python source file?") from None
    except (RecursionError, MemoryError):
        raise UserError("cannot parse: expressions nested too deeply for Python's parser", file=path,
                        hint="split the deepest expression into named parts") from None


MAX_SOURCE_BYTES = 32 * 1024 * 1024


def read_regular_file(path: Path, what: str = "file", limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; a FIFO, a device, a folder, a missing
    or unreadable path becomes a one-line UserError (never a hang on `/dev/zero` or a pipe)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"not a regular {what} (a folder, pipe or device)", file=str(path),
                            hint=f"give the path of a {what}")
        if info.st_size > limit:
            raise UserError(f"{what} too large ({info.st_size} bytes; at most {limit})", file=str(path))
        with open(path, "rb") as handle:
            return handle.read(limit + 1)
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None


def read_source(path: Path) -> str:
    """Text of a Python file, honouring a PEP 263 encoding line."""
    return read_source_file(path)[0]


def read_source_file(path: Path) -> tuple[str, str]:
    """Text of a Python file and the encoding it is written in (its PEP 263 line's, else UTF-8), from one read:
    a rewrite writes its output in the same encoding, so the declaration stays true."""
    data = read_regular_file(Path(path))
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), encoding
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot decode: {exc}", file=str(path),
                        hint="save the file as UTF-8 or declare its encoding") from None
