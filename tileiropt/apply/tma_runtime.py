"""The TMA runtime block of a transformed file: a marker line, then the launch-time helpers of
`launch_runtime` (TMA dispatch, the autotuner under a wrapper) copied from their source. `apply` writes it after the
gate into a file whose TileIR blocks call them (with its own `import triton as _tileiropt_triton`): only the
helpers its TileIR blocks call (`runtime_source`); a library's helper module holds them all.
"""

from __future__ import annotations

import ast

from tileiropt.apply import launch_runtime
from tileiropt.apply.copied_source import copied_source

RUNTIME_MARKER = "# --- tileiropt: TMA dispatch"

RUNTIME_SOURCE = (f"\n{RUNTIME_MARKER} (standalone; acts only where a TileIR block calls it) ---\n"
                  + copied_source(launch_runtime))
RUNTIME_NAMES = ("_tileiropt_tma_dispatch", "_tileiropt_autotuner")  # the blocks call
# the definitions each called helper needs, in the order of `launch_runtime`
NEEDS = {"_tileiropt_tma_dispatch": ("_tileiropt_prod", "_tileiropt_allocator", "_tileiropt_tma_flags",
                                     "_tileiropt_tma_dispatch"),
         "_tileiropt_autotuner": ("_tileiropt_autotuner",)}


def runtime_source(called: set[str]) -> str:
    """The runtime block with only what the `called` helpers need (its imports always)."""
    wanted = {name for helper in called for name in NEEDS.get(helper, ())}
    text = copied_source(launch_runtime)
    lines = text.splitlines(keepends=True)
    kept = []
    for node in ast.parse(text).body:
        names = {a.asname or a.name for a in node.names} if isinstance(node, (ast.Import, ast.ImportFrom)) else {
            getattr(node, "name", "")}
        if isinstance(node, ast.Import) or names & wanted or (
                isinstance(node, ast.ImportFrom) and "_tileiropt_tma_dispatch" in called):
            kept.append("".join(lines[node.lineno - 1:node.end_lineno]))
    imports = [k for k in kept if k.startswith(("import", "from"))]
    definitions = [k for k in kept if not k.startswith(("import", "from"))]
    return (f"\n{RUNTIME_MARKER} (standalone; acts only where a TileIR block calls it) ---\n"
            + "".join(imports) + "\n\n" + "\n\n".join(definitions))
