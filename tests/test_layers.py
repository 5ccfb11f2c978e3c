"""The packages of tileiropt import one another in one direction: the shared vocabulary at the root, the types
every phase shares (`contract`), then releases and harness, check, engine, classify, project, capture, bench,
records, apply, validate, report, run and the command line (`cli/`), which only the entry point (`__main__`)
imports. A new import against that order fails here, naming the modules that make the cycle."""

from __future__ import annotations

import ast
from collections import defaultdict

from shared import ROOT

PACKAGE = ROOT / "tileiropt"
ORDER = ["contract", "releases", "harness", "check", "engine", "classify", "project", "capture", "bench", "records",
         "apply", "validate", "report", "run", "cli"]  # each imports those before it (and the root's), never after


def package_imports() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> the modules that import it, deferred imports included (not those
    under `if TYPE_CHECKING:`); the root's modules are left out, as the vocabulary every package reads."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if len(parts) == 1:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in
                   ast.unparse(node.test) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                dotted = name.split(".")
                if dotted[0] == "tileiropt" and len(dotted) > 1 and (PACKAGE / dotted[1]).is_dir() \
                        and dotted[1] != parts[0]:
                    edges[(parts[0], dotted[1])].append("/".join(parts))
    return edges


def test_every_package_is_in_the_order() -> None:
    found = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert found == set(ORDER)


def test_packages_import_only_those_below_them() -> None:
    upward = {f"{a} -> {b}": modules for (a, b), modules in package_imports().items()
              if ORDER.index(b) > ORDER.index(a)}
    assert upward == {}
