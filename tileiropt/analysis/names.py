"""Which local names refer to what in Triton, whatever the import spelling.

`import triton as tr`, `import triton.language as tl`, `from triton import language as tl`,
`from triton import jit` and `from triton.language.extra import libdevice` all end up in one
table of local name -> qualified name; `qualified_name(tl.sum)` is then `triton.language.sum`.
"""

from __future__ import annotations

import ast

JIT = frozenset({"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"})
AUTOTUNE = frozenset({"triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune"})
HEURISTICS = frozenset({"triton.heuristics", "triton.runtime.heuristics",
                        "triton.runtime.autotuner.heuristics"})
CONFIG = frozenset({"triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config"})
CONSTEXPR = frozenset({"triton.language.constexpr", "triton.language.core.constexpr"})

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


def qualified_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """`tl.math.exp` -> `triton.language.math.exp` when `tl` is bound to Triton; else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    head = aliases.get(node.id)
    if head is None:
        return None
    parts.append(head)
    return canonical(".".join(reversed(parts)))


def call_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """Qualified name of a call's function, or of a decorator (called or not)."""
    if isinstance(node, ast.Call):
        node = node.func
    return qualified_name(node, aliases)
