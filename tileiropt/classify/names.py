"""Which local names refer to what in Triton, whatever the import spelling.

`import triton as tr`, `import triton.language as tl`, `from triton import language as tl`,
`from triton import jit` and `from triton.language.extra import libdevice` all end up in one
table of local name -> qualified name; `qualified_name(tl.sum)` is then `triton.language.sum`.

The one resolver of the tool, for both syntax trees: the analysis reads Python's `ast`, the rewrites libcst's,
and a dotted name read from either (`dotted_parts`) resolves alike.
"""

from __future__ import annotations

import ast

JIT = frozenset({"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"})
AUTOTUNE = frozenset({"triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune"})
HEURISTICS = frozenset({"triton.heuristics", "triton.runtime.heuristics",
                        "triton.runtime.autotuner.heuristics"})
CONFIG = frozenset({"triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config"})
CONSTEXPR = frozenset({"triton.language.constexpr", "triton.language.core.constexpr"})
TL = "triton.language."

# Submodules whose public names are re-exported as `triton.language.<name>`.
_LANGUAGE_SUBMODULES = ("triton.language.core.", "triton.language.standard.", "triton.language.semantic.")


def canonical(name: str) -> str:
    """`triton.language.core.sum` -> `triton.language.sum`; other names unchanged."""
    for prefix in _LANGUAGE_SUBMODULES:
        if name.startswith(prefix):
            return "triton.language." + name[len(prefix):]
    return name


def collect_import(node: ast.Import | ast.ImportFrom, aliases: dict[str, str]) -> None:
    """Record the Triton names an import statement binds into `aliases` (local -> qualified)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name != "triton" and not alias.name.startswith("triton."):
                continue
            if alias.asname:
                aliases[alias.asname] = alias.name
            else:  # `import triton.language` binds `triton`
                aliases[alias.name.split(".", 1)[0]] = "triton"
        return
    module = node.module or ""
    if node.level or (module != "triton" and not module.startswith("triton.")):
        return
    for alias in node.names:
        if alias.name == "*":
            continue
        aliases[alias.asname or alias.name] = canonical(f"{module}.{alias.name}")


def qualified(parts: list[str] | None, aliases: dict[str, str]) -> str | None:
    """`["tl", "math", "exp"]` -> `triton.language.math.exp` when `tl` is bound to Triton; else None."""
    if not parts:
        return None
    head = aliases.get(parts[0])
    if head is None:
        return None
    return canonical(".".join([head, *parts[1:]]))


def called(parts: list[str] | None, aliases: dict[str, str]) -> str | None:
    """What a call to the dotted name `parts` calls: its qualified Triton name (`triton.language.load`), else
    the name as written (`min`, `offs.to`, a module function's name); None when the function is not a dotted name."""
    name = qualified(parts, aliases)
    if name is None and parts:
        return ".".join(parts)
    return name


def short_name(name: str) -> str:
    """`tl.load` for `triton.language.load`, as messages write it; other names unchanged."""
    return "tl." + name[len(TL):] if name.startswith(TL) else name


def dotted_parts(node: object) -> list[str] | None:
    """`["tl", "math", "exp"]` for `tl.math.exp`; None for anything but a dotted name. `node` is a node of Python's
    `ast` or of libcst's tree (the rewrites'), whose `Attribute` and `Name` hold their text in `Name.value`:
    matched by class name, so the analysis runs without importing libcst."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute) or type(node).__name__ == "Attribute":
        attribute = node.attr  # type: ignore[attr-defined]
        parts.append(attribute if isinstance(attribute, str) else attribute.value)
        node = node.value  # type: ignore[attr-defined]
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif type(node).__name__ == "Name" and isinstance(getattr(node, "value", None), str):
        parts.append(node.value)  # type: ignore[attr-defined]
    else:
        return None
    parts.reverse()
    return parts


def qualified_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """`tl.math.exp` -> `triton.language.math.exp` when `tl` is bound to Triton; else None."""
    return qualified(dotted_parts(node), aliases)


def call_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """Qualified name of a call's function, or of a decorator (called or not)."""
    if isinstance(node, ast.Call):
        node = node.func
    return qualified_name(node, aliases)


def callee(call: object, aliases: dict[str, str]) -> str | None:
    """What a call (of either tree, see `dotted_parts`) calls (see `called`)."""
    return called(dotted_parts(call.func), aliases)  # type: ignore[attr-defined]
