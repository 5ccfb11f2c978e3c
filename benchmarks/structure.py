"""Structure figures of a Python package, read from its syntax trees (nothing is imported or run).

    python benchmarks/structure.py [PACKAGE_FOLDER] [--json] [--long 600]

PACKAGE_FOLDER defaults to this repository's `tileiropt/`; its folder name is the package name.

- code in strings: string literals written as a block (triple-quoted, spanning two or more source lines; plain
  or f-strings; docstrings excluded) of at least two non-blank lines that parse as Python with at least one
  statement other than a bare expression. An f-string's replacement fields are read as a name, and a line
  where that does not parse is read as a comment. Counted: the string's lines that are neither blank nor
  comments. Literals built from one-line pieces with `\\n` escapes (the rules' example kernels, single
  statements handed to libcst) are data or one generated statement, and are left out.
- deferred imports: `import`/`from` statements of the package (absolute or relative) inside a function.
- import cycles, twice: over the imports a module runs when it is imported (those at its top level, in
  top-level `if`/`try`/`with` blocks too; not those under `if TYPE_CHECKING:` nor in functions or classes),
  and over all its package imports, deferred ones too (still not `if TYPE_CHECKING:`): the cycles a
  deferred import hides, which stop it from moving to the top. `from a import b` is an edge to `a.b` when
  that is a module, else to `a`; the parent packages a dotted import also runs are not counted. Each
  strongly connected group of two or more modules (or one that imports itself) is one cycle.
- long modules: files over 600 lines (physical lines; `--long` sets the bound).
- lines per folder: physical lines of the `.py` files under each top-level folder of the package
  ("." for the modules directly in it).
- root modules: the modules directly in the package folder (`__init__` and `__main__` left out).
- string-key lookups per folder: `x["name"]` subscripts and `x.get("name")` calls with a string literal: records
  read as schema-less dicts rather than typed objects.
- package pairs importing each other: two top-level folders (subpackages) of the package each with a module that
  imports a module of the other, deferred imports included ("." is the modules directly in the package but the
  entry point `__main__`, a node of its own: it runs the command line and nothing imports it).
- parameters typed `Any`: function and method parameters (`*args` and `**kwargs` too) annotated `Any` exactly.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import textwrap
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONG_MODULE = 600
PLACEHOLDER = "_structure_field_"


@dataclass
class Figures:
    """Everything the script measures, in the order it prints them."""

    package: str
    code_in_strings: list[dict] = field(default_factory=list)
    code_in_strings_lines: int = 0
    deferred_imports: int = 0
    deferred_by_module: dict[str, int] = field(default_factory=dict)
    cycles: list[list[str]] = field(default_factory=list)
    cycles_with_deferred: list[list[str]] = field(default_factory=list)
    long_bound: int = LONG_MODULE
    long_modules: dict[str, int] = field(default_factory=dict)
    lines_per_folder: dict[str, int] = field(default_factory=dict)
    root_modules: list[str] = field(default_factory=list)
    string_key_lookups: dict[str, int] = field(default_factory=dict)
    mutual_packages: list[list[str]] = field(default_factory=list)
    any_parameters: int = 0
    any_by_folder: dict[str, int] = field(default_factory=dict)


def string_key_lookups(tree: ast.AST) -> int:
    """`x["name"]` and `x.get("name", ...)` with a string literal key."""
    found = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            found += 1
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found += 1
    return found


def module_files(folder: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every `.py` file under the package folder (sorted)."""
    modules = {}
    for path in sorted(folder.rglob("*.py")):
        parts = [folder.name, *path.relative_to(folder).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of the constant nodes that are docstrings of the module, its classes or functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def is_block(node: ast.AST, source: str) -> bool:
    """A literal written as one triple-quoted token spanning two or more source lines."""
    segment = ast.get_source_segment(source, node) or ""
    return (node.end_lineno or node.lineno) > node.lineno and segment.lstrip("rRbBuUfF").startswith(('"""', "'''"))


def literal_text(node: ast.AST) -> str | None:
    """The text of a string literal, an f-string's replacement fields read as a placeholder name."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else PLACEHOLDER for part in node.values)
    return None


def parse_code(text: str) -> ast.Module | None:
    """The text as a module, lines with an unparsable placeholder commented out; None when it is not code."""
    source = textwrap.dedent(text)
    for attempt in (source, _comment_placeholder_lines(source)):
        try:
            return ast.parse(attempt)
        except (SyntaxError, ValueError):
            continue
    return None


def _comment_placeholder_lines(source: str) -> str:
    return "\n".join("#" + line if PLACEHOLDER in line else line for line in source.splitlines())


def code_lines(text: str) -> int:
    """Lines that are neither blank nor comments."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def code_in_strings(module: str, tree: ast.AST, source: str) -> list[dict]:
    """Each string literal of the module that holds Python statements: its line and code lines."""
    docstrings = docstring_nodes(tree)
    inner = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    found = []
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in inner:
            continue
        text = literal_text(node)
        if text is None or not is_block(node, source) or sum(1 for line in text.splitlines() if line.strip()) < 2:
            continue
        parsed = parse_code(text)
        if parsed is None or all(isinstance(statement, ast.Expr) for statement in parsed.body):
            continue
        found.append((node.lineno, code_lines(text)))
    return [{"where": f"{module}:{line}", "lines": lines} for line, lines in sorted(found)]


def imported_names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The absolute dotted names a statement imports (`from a import b` gives `a.b`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        anchor = parts if is_package else parts[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    return [f"{base}.{alias.name}" for alias in node.names]


def function_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Import statements inside any function of the tree."""
    found: dict[int, ast.Import | ast.ImportFrom] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found.setdefault(id(inner), inner)
    return list(found.values())


def load_time_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Imports run when the module is imported: top level and top-level blocks, not `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                found += load_time_imports(node.body)
            found += load_time_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                found += load_time_imports(block)
        elif isinstance(node, ast.With):
            found += load_time_imports(node.body)
    return found


def all_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of the tree except those under `if TYPE_CHECKING:`."""
    hidden = {id(inner) for node in ast.walk(tree)
              if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
              for statement in node.body for inner in ast.walk(statement)}
    return [node for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in hidden]


def in_package(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def target_module(name: str, modules: dict[str, Path]) -> str | None:
    """The package module an imported dotted name runs: itself when a module, else its nearest parent."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def package_edges(nodes: list[ast.Import | ast.ImportFrom], module: str, is_package: bool,
                  modules: dict[str, Path]) -> set[str]:
    """The package modules the import statements run (the package's own `__init__` left out)."""
    package = module.split(".")[0]
    return {target
            for node in nodes
            for name in imported_names(node, module, is_package)
            if in_package(name, package) and (target := target_module(name, modules)) and target != package}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of two or more nodes (or a self-loop), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph.get(node, ()):
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def any_parameters(tree: ast.AST) -> int:
    """Parameters annotated exactly `Any` (or `typing.Any`)."""
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                     *filter(None, [arguments.vararg, arguments.kwarg])]
            count += sum(1 for a in every if a.annotation is not None and ast.unparse(a.annotation) in (
                "Any", "typing.Any"))
    return count


def folder_of(module: str, package: str, modules: dict[str, Path], folder: Path) -> str:
    """The top-level folder of `module`; "." for a module directly in the package, except the entry point
    (`__main__`, what `python -m` runs): it sits above everything, nothing imports it, so it is a node of its own."""
    relative = modules[module].relative_to(folder).parts
    if len(relative) == 1 and relative[0] == "__main__.py":
        return "__main__"
    return relative[0] if len(relative) > 1 else "."


def mutual_packages(full_graph: dict[str, set[str]], package: str, modules: dict[str, Path],
                    folder: Path) -> list[list[str]]:
    """Pairs of top-level folders each importing the other (see the module docstring)."""
    edges = {(folder_of(a, package, modules, folder), folder_of(b, package, modules, folder))
             for a, targets in full_graph.items() for b in targets}
    return sorted([a, b] for a, b in edges if a < b and (b, a) in edges)


def measure(folder: Path, long_bound: int = LONG_MODULE) -> Figures:
    """All figures of the package in `folder`."""
    package = folder.name
    modules = module_files(folder)
    figures = Figures(package=package, long_bound=long_bound)
    graph: dict[str, set[str]] = {}
    full_graph: dict[str, set[str]] = {}
    deferred: Counter[str] = Counter()
    folders: Counter[str] = Counter()
    lookups: Counter[str] = Counter()
    anys: Counter[str] = Counter()
    for module, path in modules.items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
        is_package = path.name == "__init__.py"
        figures.code_in_strings += code_in_strings(module, tree, text)
        for node in function_imports(tree):
            if any(in_package(name, package) for name in imported_names(node, module, is_package)):
                deferred[module] += 1
        graph[module] = package_edges(load_time_imports(tree.body), module, is_package, modules)
        full_graph[module] = package_edges(all_imports(tree), module, is_package, modules)
        lines = len(text.splitlines())
        if lines > long_bound:
            figures.long_modules[module] = lines
        relative = path.relative_to(folder).parts
        where = relative[0] if len(relative) > 1 else "."
        folders[where] += lines
        lookups[where] += string_key_lookups(tree)
        anys[where] += any_parameters(tree)
        if len(relative) == 1 and path.stem not in ("__init__", "__main__"):
            figures.root_modules.append(path.stem)
    figures.code_in_strings_lines = sum(item["lines"] for item in figures.code_in_strings)
    figures.deferred_imports = sum(deferred.values())
    figures.deferred_by_module = dict(sorted(deferred.items()))
    figures.cycles = strongly_connected(graph)
    figures.cycles_with_deferred = strongly_connected(full_graph)
    figures.long_modules = dict(sorted(figures.long_modules.items(), key=lambda item: -item[1]))
    figures.lines_per_folder = dict(sorted(folders.items()))
    figures.root_modules.sort()
    figures.string_key_lookups = {name: count for name, count in sorted(lookups.items()) if count}
    figures.mutual_packages = mutual_packages(full_graph, package, modules, folder)
    figures.any_parameters = sum(anys.values())
    figures.any_by_folder = {name: count for name, count in sorted(anys.items()) if count}
    return figures


def render(figures: Figures) -> str:
    """The figures as plain text, one section each."""
    out = [f"package: {figures.package}",
           f"code in string literals: {figures.code_in_strings_lines} lines in {len(figures.code_in_strings)} strings"]
    out += [f"  {item['where']}: {item['lines']} lines" for item in figures.code_in_strings]
    out.append(f"deferred package imports: {figures.deferred_imports} in {len(figures.deferred_by_module)} modules")
    out += [f"  {module}: {count}" for module, count in figures.deferred_by_module.items()]
    out.append(f"import cycles (load-time imports): {len(figures.cycles)}")
    out += ["  " + " <-> ".join(cycle) for cycle in figures.cycles]
    out.append(f"import cycles (all package imports, deferred ones too): {len(figures.cycles_with_deferred)}")
    out += ["  " + " <-> ".join(cycle) for cycle in figures.cycles_with_deferred]
    out.append(f"modules over {figures.long_bound} lines: {len(figures.long_modules)}")
    out += [f"  {module}: {lines}" for module, lines in figures.long_modules.items()]
    out.append("lines per top-level folder:")
    out += [f"  {name}: {lines}" for name, lines in figures.lines_per_folder.items()]
    out.append(f"root modules: {len(figures.root_modules)} ({', '.join(figures.root_modules)})")
    out.append(f"string-key lookups: {sum(figures.string_key_lookups.values())}")
    out += [f"  {name}: {count}" for name, count in figures.string_key_lookups.items()]
    out.append(f"package pairs importing each other: {len(figures.mutual_packages)}")
    out += [f"  {a} <-> {b}" for a, b in figures.mutual_packages]
    out.append(f"parameters typed Any: {figures.any_parameters}")
    out += [f"  {name}: {count}" for name, count in figures.any_by_folder.items()]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=ROOT / "tileiropt", help="the package folder")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--long", type=int, default=LONG_MODULE, help="a module over this many lines is long")
    args = parser.parse_args(argv)
    if not (args.folder / "__init__.py").is_file():
        print(f"error: {args.folder} is not a package folder (no __init__.py)", file=sys.stderr)
        return 2
    try:
        figures = measure(args.folder.resolve(), args.long)
    except (SyntaxError, UnicodeDecodeError) as exc:
        print(f"error: cannot read the package: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(asdict(figures), indent=2) if args.json else render(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
