"""An optimized file as the gate off reads it: each in-place rewrite `(a if TILEIR else b)` as `b`, and each
launch's gated hint splat (`**({...} if TILEIR else {})`) removed. Used to say that a file's kernels compile with
the gate off to what they did before (`validate.worker.same_kernel_code`), that its host code is the author's
(`harness.host_code`), and by the tests that every statement of the original is kept."""

from __future__ import annotations

import libcst as cst


class _GateOff(cst.CSTTransformer):
    def __init__(self, flags: set[str]):
        super().__init__()
        self.flags = flags

    def leave_IfExp(self, original: cst.IfExp, updated: cst.IfExp) -> cst.BaseExpression:
        if isinstance(updated.test, cst.Name) and updated.test.value in self.flags and not (
                isinstance(updated.body, cst.Dict) and isinstance(updated.orelse, cst.Dict)):  # a splat: the call's
            return updated.orelse
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        """A launch's gated hint splat (`launch_hints.hint_splat`) removed, the comma before it as it was."""
        args = list(updated.args)
        if len(args) < 2 or not _hint_splat(args[-1]):
            return updated  # a splat is only ever added after an argument (`apply.hinted_launches`)
        removed = args.pop()
        comma = removed.comma if isinstance(removed.comma, cst.Comma) else cst.MaybeSentinel.DEFAULT
        args[-1] = args[-1].with_changes(comma=comma, whitespace_after_arg=removed.whitespace_after_arg)
        return updated.with_changes(args=args)


def _hint_splat(arg: cst.Arg) -> bool:
    """`**({"occupancy": 4} if TILEIR else {})`: a dict of constants if the gate's value (a name, or a call of the
    gate as earlier versions wrote it), else an empty dict."""
    value = arg.value
    return (arg.star == "**" and isinstance(value, cst.IfExp) and isinstance(value.body, cst.Dict)
            and isinstance(value.orelse, cst.Dict) and not value.orelse.elements
            and (isinstance(value.test, cst.Name) or (isinstance(value.test, cst.Call) and isinstance(
                value.test.func, cst.Name) and not value.test.args))
            and all(isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)
                    and isinstance(e.value, cst.Integer) for e in value.body.elements))


# The names `apply.plan.file_names` chooses from, the first the file does not use: the gate's value, log2(e), the
# lever lists several kernels' configs are crossed with (each list's name a prefix)
FLAGS = {"TILEIR", "TILEIR_ON", "_TILEIROPT_TILEIR"}
LOG2E_NAMES = ("LOG2E", "TILEIR_LOG2E", "_TILEIROPT_LOG2E")
LEVER_NAMES = ("TILEIR_LEVERS", "_TILEIROPT_LEVERS")


def gate_off(source: str, flags: set[str] = FLAGS) -> str:
    """`source` as the gate off reads it: each in-place rewrite `(a if TILEIR else b)` as `b`, and each launch's
    gated hint splat (`**({...} if TILEIR else {})`, empty then) removed."""
    return cst.parse_module(source).visit(_GateOff(flags)).code
