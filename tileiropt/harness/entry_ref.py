"""A kernel entry as a project names it: ``"name.attr"`` in the kernel's own module, or ``"pkg.mod:name.attr"``
in another; the harness resolves it in the loaded module, the project file checks it before anything runs. And
what kind of reference a project names, read without torch (`reference_kind`), so that the tool checks it before
any worker starts."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

REFERENCE_ORIGINAL = "original"  # the untransformed file is the reference
FUNCTION_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")  # "package.module:function"


def reference_kind(text: str) -> str:
    """"original", "function" (``"pkg.mod:function"``) or "expression" (a Python expression over the inputs); raises
    ValueError, saying why, for text that is none of them."""
    text = text.strip()
    if text == REFERENCE_ORIGINAL:
        return "original"
    if FUNCTION_REF.match(text):
        return "function"
    try:
        compile(text, "<reference>", "eval")
    except SyntaxError as exc:
        raise ValueError(f"reference is not a Python expression: {exc.msg}: {text!r}") from None
    return "expression"


REFERENCE_SCOPE = ("torch", "F", "math")  # beside Python's builtins, the inputs, dims and args


def unknown_names(text: str, known: Iterable[str]) -> list[str]:
    """The names an expression reference reads that its scope will not hold: neither `known` (the kernel's inputs,
    dims and args), `REFERENCE_SCOPE` nor a builtin, nor bound inside the expression itself (a lambda's parameters,
    a comprehension's targets). Empty for a function, "original" or an expression that does not parse."""
    import ast
    import builtins

    try:
        if reference_kind(text) != "expression":
            return []
        tree = ast.parse(text.strip(), mode="eval")
    except (ValueError, SyntaxError):
        return []
    bound = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    bound |= {arg.arg for node in ast.walk(tree) if isinstance(node, ast.arguments)
              for arg in [*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg] if arg}
    scope = set(known) | set(REFERENCE_SCOPE) | set(dir(builtins)) | {"__builtins__"} | bound
    read = [node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)]
    return sorted(set(read) - scope)


@dataclass(frozen=True)
class EntryRef:
    """``"name.attr"`` (in the kernel module) or ``"pkg.mod:name.attr"`` (in another module)."""

    module: str | None
    attributes: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> EntryRef | None:
        module, colon, attrs = text.strip().rpartition(":")
        if not colon:
            module, attrs = "", text.strip()
        parts = tuple(attrs.split("."))
        if not all(p.isidentifier() for p in parts) or (module and not all(
                p.isidentifier() for p in module.split("."))):
            return None
        return cls(module or None, parts)

    @property
    def name(self) -> str:
        """The name the entry is bound to in a call expression's scope (its first attribute)."""
        return self.attributes[0]
