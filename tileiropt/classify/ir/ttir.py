"""Read the TTIR text Triton prints (`module.str()`): every op with its function and source location."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_LOC_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_FILE_LOC = re.compile(r'"([^"]+)":(\d+):(\d+)')
_LOC_REF = re.compile(r"#loc\d*")
_TRAILING_LOC = re.compile(r"\s+loc\((.*)\)\s*$")
_OP = re.compile(r'^(?:%[^=]+=\s*)?"?([a-z_][a-z_0-9]*\.[a-z_][a-z_0-9.]*)"?')
_FUNC = re.compile(r"^tt\.func\s+(?:public\s+|private\s+)?@([\w.$-]+)\(")
_OP_RESULT = re.compile(r"^%[^=]+=\s")
_SSA = re.compile(r"%[\w#.$-]+")
_CALLEE = re.compile(r"tt\.call\s+@([\w.$-]+)\(")


@dataclass(frozen=True)
class Op:
    name: str  # "tt.atomic_rmw"
    text: str  # the op's line, location removed
    function: str  # the tt.func it is in
    file: str | None
    line: int | None
    results: tuple[str, ...] = ()  # SSA names it defines ("%6")
    operands: tuple[str, ...] = ()  # SSA names it uses, in order


@dataclass(frozen=True)
class Function:
    name: str
    noinline: bool
    calls: tuple[tuple[str, str | None, int | None], ...]  # (callee, file, line) of each tt.call


def parse(text: str) -> tuple[list[Op], dict[str, Function]]:
    """The ops (in order) and functions of a printed TTIR module."""
    definitions: dict[str, str] = {}
    for raw in text.splitlines():
        match = _LOC_DEF.match(raw.strip())
        if match:
            definitions[match.group(1)] = match.group(2)
    resolve = _resolver(definitions)
    ops: list[Op] = []
    functions: dict[str, Function] = {}
    calls: dict[str, list[tuple[str, str | None, int | None]]] = {}
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#loc", "}", "^", "module", "//")):
            continue
        header = _FUNC.match(line)
        if header:
            current = header.group(1)
            functions[current] = Function(current, "noinline = true" in line, ())
            calls[current] = []
            continue
        location = _TRAILING_LOC.search(line)
        where = resolve(location.group(1)) if location else (None, None)
        body = line[: location.start()] if location else line
        match = _OP.match(body)
        if not match:
            continue
        results, _, rest = body.partition("=") if _OP_RESULT.match(body) else ("", "", body)
        operands = tuple(_SSA.findall(rest.split(" : ", 1)[0]))
        op = Op(match.group(1), body, current, *where, tuple(_SSA.findall(results)), operands)
        ops.append(op)
        callee = _CALLEE.search(body)
        if callee and current in calls:
            calls[current].append((callee.group(1), *where))
    for name, function in functions.items():
        functions[name] = Function(function.name, function.noinline, tuple(calls.get(name, [])))
    return ops, functions


def pointer_origin(ops: list[Op], op: Op) -> str:
    """Where the pointer operand of `op` comes from: "cast" when a pointer cast (tt.bitcast, tt.int_to_ptr)
    fixes its element type, else "argument" (a kernel argument, whose dtype the caller picks, or a value the
    trace cannot follow)."""
    defined = {name: candidate for candidate in ops for name in candidate.results}
    pending = list(op.operands[:1])
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        source = defined.get(name.split("#")[0])
        if source is None:
            continue  # a function or block argument
        if source.name in ("tt.bitcast", "tt.int_to_ptr"):
            return "cast"
        if source.name == "arith.select":
            pending += list(source.operands[1:3])
        elif source.operands:
            pending.append(source.operands[0])
    return "argument"


def _resolver(definitions: dict[str, str]) -> Callable[[str], tuple[str | None, int | None]]:
    cache: dict[str, tuple[str | None, int | None]] = {}

    def resolve(body: str, depth: int = 0) -> tuple[str | None, int | None]:
        found = _FILE_LOC.search(body)
        if found:
            return found.group(1), int(found.group(2))
        if depth > 16:
            return None, None
        for ref in _LOC_REF.findall(body):
            if ref in cache:
                return cache[ref]
            if ref in definitions:
                result = resolve(definitions[ref], depth + 1)
                cache[ref] = result
                if result[0] is not None:
                    return result
        return None, None

    return resolve
