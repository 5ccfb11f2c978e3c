"""The launches an optimized file gives TileIR hints to (`hinted_launches`): each `kernel[grid](...)` or
`kernel.warmup(...)` a plan names, found by the name it launches through and its line, with the gated splat
(`launch_hints.hint_splat`) appended as its last argument, laid out as its arguments are. `harness.gate_off`
undoes exactly this."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import libcst as cst
from libcst.metadata import PositionProvider

from tileiropt.apply.plan import KernelPlan
from tileiropt.harness.launch_hints import hint_splat


def hinted_launches(module: cst.Module, plans: dict[str, KernelPlan], flag: str
                    ) -> dict[int, Callable[[Any], cst.CSTNode]]:
    """Per launch call (`kernel[grid](...)` or `kernel.warmup(...)`, by id) a plan gives hints to: its call with the
    gated splat appended (`launch_hints.hint_splat`). Calls are found by line and the name they launch through: the
    kernel's, or those its assignments bind (`plan.launched_as`: `add[grid](...)` for `add = triton.jit(_add_py)`)."""
    wanted = {(launched, line): hints for name, plan in plans.items() for line, hints in plan.launch_hints.items()
              for launched in plan.launched_as or [name]}
    if not wanted:
        return {}
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)  # the module's own nodes: their ids are kept
    positions = wrapper.resolve(PositionProvider)
    found: dict[int, Callable[[Any], cst.CSTNode]] = {}
    for node, position in positions.items():
        if not (isinstance(node, cst.Call) and isinstance(node.func, (cst.Subscript, cst.Attribute))
                and isinstance(node.func.value, cst.Name)):
            continue
        if isinstance(node.func, cst.Attribute) and node.func.attr.value != "warmup":
            continue
        hints = wanted.get((node.func.value.value, position.start.line))
        if hints is not None and node.args and not any(  # never a second occupancy, nor a launch without arguments
                arg.star == "**" or (arg.keyword is not None and arg.keyword.value == "occupancy")
                for arg in node.args):
            splat = cst.Arg(value=cst.parse_expression(hint_splat(hints, flag)[2:]), star="**")
            found[id(node)] = functools.partial(_with_splat, splat=splat, column=position.start.column + len(
                module.code_for_node(node.func)) + 1)
    return found


LAUNCH_LINE = 100  # a one-line launch longer than this with its hint gets the hint on a line of its own


def _with_splat(call: cst.Call, splat: cst.Arg, column: int) -> cst.Call:
    """`call` with `splat` as its last argument, laid out as its arguments are: after a trailing comma (kept, after
    the splat); on a line of its own where the closing parenthesis is; else on the same line, or, where the line
    would grow past `LAUNCH_LINE` columns, on a line of its own (under the first argument, or as the other arguments
    are). What followed the last argument (the space before the closing parenthesis) follows the splat; comments are
    never copied. `harness.gate_off` undoes exactly this."""
    args = list(call.args)
    empty = cst.Module(body=[])
    last = args[-1]
    splat = splat.with_changes(whitespace_after_arg=last.whitespace_after_arg)
    if isinstance(last.comma, cst.Comma):  # a trailing comma: it stays the call's last
        if isinstance(last.comma.whitespace_after, cst.ParenthesizedWhitespace):  # one argument a line
            between = args[-2].comma if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else last.comma
            comma = _without_comment(between)
        else:
            comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        splat = splat.with_changes(comma=last.comma)
    elif isinstance(last.whitespace_after_arg, cst.ParenthesizedWhitespace):  # `)` on a line of its own
        after = call.whitespace_before_args
        comma = _without_comment(cst.Comma(whitespace_after=after if isinstance(after, cst.ParenthesizedWhitespace)
                                           else cst.SimpleWhitespace(" ")))
    elif "\n" not in empty.code_for_node(call) and column + len(empty.code_for_node(call)) + len(
            empty.code_for_node(splat)) > LAUNCH_LINE:
        comma = cst.Comma(whitespace_after=cst.ParenthesizedWhitespace(last_line=cst.SimpleWhitespace(" " * column),
                                                                       indent=False))
    elif len(empty.code_for_node(call).splitlines()[-1]) + len(empty.code_for_node(splat)) > LAUNCH_LINE and any(
            isinstance(a.comma, cst.Comma) and isinstance(a.comma.whitespace_after, cst.ParenthesizedWhitespace)
            for a in args[:-1]):  # a call over several lines: the splat on a line of its own, as its arguments are
        comma = _without_comment(next(a.comma for a in reversed(args[:-1]) if isinstance(a.comma, cst.Comma)
                                      and isinstance(a.comma.whitespace_after, cst.ParenthesizedWhitespace)))
    else:
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    args[-1] = last.with_changes(comma=comma, whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=[*args, splat])


def _without_comment(comma: cst.Comma) -> cst.Comma:
    """`comma` with no comment after it (a copied line break must not copy the author's comment)."""
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        return comma.with_changes(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=after.with_changes(
            first_line=cst.TrailingWhitespace(), empty_lines=[]))
    return comma
