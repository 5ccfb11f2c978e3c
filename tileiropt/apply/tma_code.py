"""The code of a TMA twin, in libcst: descriptor statements, descriptor loads and stores in place of pointer
ones, the layout-flag parameters, and the transformer that puts them into the kernel (`tma.py` plans what goes
where).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

Replacement = Callable[[cst.Call], cst.BaseExpression]  # the new expression for a (rewritten) call
Inserts = dict[int, list[tuple[int, list[cst.BaseStatement]]]]  # id of a block -> (index, statements) pairs


@dataclass
class Descriptor:
    """One device-side tensor descriptor, as source: the expressions of its base and, per tile dimension
    (rows, columns), its extent, stride and block size."""

    name: str
    pointer: str  # the kernel argument it reads
    base: str
    extents: tuple[str, str]
    strides: tuple[str, str]
    blocks: tuple[str, str]
    orient: str  # "n": columns have the unit stride; "t": rows have; "nt": `flag` decides per launch
    flag: str | None


def descriptor_statement(descriptor: Descriptor, tl: str) -> cst.BaseStatement:
    """`<name> = tl.make_tensor_descriptor(...)` over the tile's layout (both, under `if FLAG:`, for "nt")."""
    d = descriptor

    def make(d0: int, d1: int) -> str:
        return (f"{d.name} = {tl}.make_tensor_descriptor(\n    {d.base}, shape=[{d.extents[d0]}, {d.extents[d1]}], "
                f"strides=[{d.strides[d0]}, 1], block_shape=[{d.blocks[d0]}, {d.blocks[d1]}])")

    if d.orient == "n":
        statement = cst.parse_statement(make(0, 1) + "\n")
    elif d.orient == "t":
        statement = cst.parse_statement(make(1, 0) + "\n")
    else:
        transposed, normal = (make(1, 0).replace("\n", "\n    "), make(0, 1).replace("\n", "\n    "))
        statement = cst.parse_statement(f"if {d.flag}:\n    {transposed}\nelse:\n    {normal}\n")
    what = f"# tileiropt: TMA descriptor for the {d.pointer} tiles"
    return statement.with_changes(leading_lines=[cst.EmptyLine(comment=cst.Comment(what))])


def replacement(kind: str, descriptor: Descriptor, coordinates: tuple[str, str], tl: str) -> Replacement:
    """What replaces a tile `tl.load` / `tl.store`: the descriptor's load or store at the tile's start
    (`tl.trans`-ed through the transposed view where the layout says so)."""
    c0, c1 = coordinates
    desc, flag, orient = descriptor.name, descriptor.flag, descriptor.orient
    if kind == "load":
        if orient == "n":
            text = f"{desc}.load([{c0}, {c1}])"
        elif orient == "t":
            text = f"{tl}.trans({desc}.load([{c1}, {c0}]))"
        else:
            text = f"({tl}.trans({desc}.load([{c1}, {c0}])) if {flag} else {desc}.load([{c0}, {c1}]))"
        expression = cst.parse_expression(text)

        def load(updated: cst.Call) -> cst.BaseExpression:
            if updated.lpar and isinstance(expression, cst.IfExp):
                return expression.with_changes(lpar=updated.lpar, rpar=updated.rpar)
            if isinstance(expression, cst.Call):
                return expression.with_changes(lpar=updated.lpar, rpar=updated.rpar)
            return expression

        return load

    normal = f"{desc}.store([{c0}, {c1}], _tileiropt_value)"
    transposed = f"{desc}.store([{c1}, {c0}], {tl}.trans(_tileiropt_value))"
    if orient == "n":
        template = cst.parse_expression(normal)
    elif orient == "t":
        template = cst.parse_expression(transposed)
    else:
        template = cst.parse_expression(f"{transposed} if {flag} else {normal}")

    def store(updated: cst.Call) -> cst.BaseExpression:
        filled = template.visit(_Fill(_store_value(updated)))
        assert isinstance(filled, cst.BaseExpression)
        return filled.with_changes(lpar=updated.lpar, rpar=updated.rpar)

    return store


class _Fill(cst.CSTTransformer):
    """Put the stored value where the template says `_tileiropt_value`."""

    def __init__(self, value: cst.BaseExpression):
        super().__init__()
        self.value = value

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.value if updated.value == "_tileiropt_value" else updated


def _store_value(call: cst.Call) -> cst.BaseExpression:
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) > 1:
        return positional[1].value
    return next(a.value for a in call.args if a.keyword is not None and a.keyword.value == "value")


class Rewriter(cst.CSTTransformer):
    """Replace calls (by the id of the original call) and insert statements into blocks (by the id of the original
    block)."""

    def __init__(self, replacements: dict[int, Replacement], inserts: Inserts):
        super().__init__()
        self.replacements = replacements
        self.inserts = inserts

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        make = self.replacements.get(id(original))
        return make(updated) if make else updated

    def leave_IndentedBlock(self, original: cst.IndentedBlock, updated: cst.IndentedBlock) -> cst.IndentedBlock:
        items = self.inserts.get(id(original))
        if not items:
            return updated
        body = list(updated.body)
        # from the end, so indexes stay valid; at one index, last first, so they end up in the order given
        for _, (index, statements) in sorted(enumerate(items), key=lambda item: (item[1][0], item[0]), reverse=True):
            body[index:index] = statements
        return updated.with_changes(body=body)


def add_flags(function: cst.FunctionDef, flags: list[str], tl: str) -> cst.FunctionDef:
    """Append `FLAG: tl.constexpr = False` parameters (after any existing default)."""
    if not flags:
        return function
    params = list(function.params.params)
    annotation = cst.Annotation(cst.parse_expression(f"{tl}.constexpr"))
    between = _between(params)
    closing = params[-1].comma if params else cst.MaybeSentinel.DEFAULT
    new = [cst.Param(cst.Name(flag), annotation=annotation, default=cst.Name("False"),
                     equal=cst.AssignEqual(), comma=between) for flag in flags]
    if params:  # what followed the last parameter (a comment, the line break before `)`) follows the new last one
        new[-1] = new[-1].with_changes(whitespace_after_param=params[-1].whitespace_after_param)
        inner = params[-2].whitespace_after_param if len(params) >= 2 else cst.SimpleWhitespace("")
        params[-1] = params[-1].with_changes(comma=between, whitespace_after_param=inner)
    new[-1] = new[-1].with_changes(comma=closing)
    return function.with_changes(params=function.params.with_changes(params=params + new))


def _between(params: list[cst.Param]) -> cst.Comma:
    """The comma style between two parameters of this signature."""
    if len(params) >= 2 and isinstance(params[-2].comma, cst.Comma):
        return params[-2].comma
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
