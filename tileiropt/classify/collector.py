"""The single pass of discovery over a file's syntax tree (`Collector`): imports, defs, module-level values,
subscript calls (`name[grid](...)`) and the calls made inside each def. `tileiropt.classify.discovery` builds the
kernel records from what it collects."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from tileiropt.classify.names import collect_import
from tileiropt.classify.reexports import collect_reexports


class Collector(ast.NodeVisitor):
    """One walk: imports, defs, module-level values, subscript calls, calls made inside defs."""

    def __init__(self, path: str = "<string>") -> None:
        self.path = path
        self.aliases: dict[str, str] = {}
        self.defs: list[ast.FunctionDef] = []  # every def, in source order
        self.module_functions: dict[str, ast.FunctionDef] = {}
        self.module_values: dict[str, list[ast.expr]] = {}  # module-level name -> assigned values
        self.subscript_calls: list[tuple[ast.Call, ast.FunctionDef | None]] = []  # name[...](...), enclosing def
        self.called: dict[int, list[str]] = {}  # id(def) -> names it calls, in order
        self.returns_value: set[int] = set()  # id(def) with a `return <expr>`
        self._stack: list[ast.FunctionDef] = []
        self._class_depth = 0
        self._handlers: dict[type[ast.AST], Callable[[Any], None]] = {
            ast.Import: self.visit_Import, ast.ImportFrom: self.visit_ImportFrom,
            ast.FunctionDef: self.visit_FunctionDef, ast.AsyncFunctionDef: self.visit_FunctionDef,
            ast.ClassDef: self.visit_ClassDef, ast.Lambda: self.visit_Lambda,
            ast.Assign: self.visit_Assign, ast.AnnAssign: self.visit_AnnAssign,
            ast.AugAssign: self.visit_AugAssign, ast.Call: self.visit_Call,
            ast.Return: self.visit_Return}

    # dispatch by type (faster than NodeVisitor's name lookup on big files) -------
    def visit(self, node: ast.AST) -> None:
        handler = self._handlers.get(type(node))
        if handler is not None:
            handler(node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        visit = self.visit
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)):
                visit(child)

    # imports -----------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        collect_import(node, self.aliases)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        collect_import(node, self.aliases)
        collect_reexports(node, self.path, self.aliases)  # `from pkg._triton import triton, tl`

    # scopes ------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.defs.append(node)
        if not self._stack and not self._class_depth:
            self.module_functions[node.name] = node
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._visit_arguments(node.args)
        self._stack.append(node)
        for statement in node.body:
            self.visit(statement)
        self._stack.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def _visit_arguments(self, args: ast.arguments) -> None:
        for default in (*args.defaults, *[d for d in args.kw_defaults if d is not None]):
            self.visit(default)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._class_depth += 1
        self.generic_visit(node)
        self._class_depth -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.body)

    # module-level values -----------------------------------------------------
    def _module_level(self) -> bool:
        return not self._stack and not self._class_depth

    def visit_Assign(self, node: ast.Assign) -> None:
        if self._module_level():
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.module_values.setdefault(target.id, []).append(node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if self._module_level() and isinstance(node.target, ast.Name) and node.value is not None:
            self.module_values.setdefault(node.target.id, []).append(node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if self._module_level() and isinstance(node.target, ast.Name):
            self.module_values.setdefault(node.target.id, []).append(node.value)
        self.generic_visit(node)

    # calls -------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
            self.subscript_calls.append((node, self._stack[-1] if self._stack else None))
        elif isinstance(func, ast.Name) and self._stack:
            self.called.setdefault(id(self._stack[-1]), []).append(func.id)
        elif (self._module_level() and isinstance(func, ast.Attribute) and func.attr in ("append", "extend")
              and isinstance(func.value, ast.Name) and node.args):
            # `configs.append(triton.Config(...))` / `configs.extend([...])` at module level
            self.module_values.setdefault(func.value.id, []).append(node.args[0])
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and self._stack and not _is_none(node.value):
            self.returns_value.add(id(self._stack[-1]))
        self.generic_visit(node)


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
