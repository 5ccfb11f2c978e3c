"""The kernel model of one file: read once, parsed once, and asked by every phase.

`FileModel` holds a file's text and encoding (one read), its scan (one parse: the kernels, their parameters,
autotune configs and launch sites, `discovery`), each JIT function's facts (`facts`: every call with its
qualified Triton name, the memory accesses, the loops over a range, the dataflow flags), the parameters' roles
(`params`) and each kernel's tile accesses (`tile_accesses`, for the TMA rewrite). Classification, the lint
rules, apply's config rewrite and its TMA rewrite read this one model, and classification is kept on it
(`records`, filled by `analysis.classify`) so no phase classifies a file a second time. `FileModels` keeps one
model per file for the length of a command: under `run`, classify and apply share them.

The model is built on Python's `ast`, which parses a file an order of magnitude faster than libcst and
needs no metadata pass for line numbers (99-line `examples/attention.py`: 0.8 ms against 10 ms, plus 31 ms
for libcst's positions), and classify reads whole repositories. A rewrite parses the file with libcst once
and finds there the nodes the model names (`tileiropt.apply.locate`).
"""

from __future__ import annotations

import ast
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from tileiropt.classify.discovery import KernelInfo, ModuleInfo, Scan, scan
from tileiropt.classify.facts import TL, FactsBuilder, FunctionFacts
from tileiropt.classify.names import callee
from tileiropt.classify.params import ParamAnalysis
from tileiropt.classify.source import read_source_file
from tileiropt.classify.syntax import is_int
from tileiropt.classify.tile_accesses import TileAnalysis

if TYPE_CHECKING:
    from tileiropt.classify.classify import KernelRecord

_PERSISTENT_RANGES = frozenset({"range", TL + "range"})


class FileModel:
    """One file's kernel model; everything but the text is computed on first use."""

    def __init__(self, source: str, path: str = "<string>", encoding: str = "utf-8"):
        self.source = source
        self.path = path
        self.encoding = encoding  # the file's own (PEP 263), for writing a rewrite of it
        self.records: dict[str, list[KernelRecord]] = {}  # release -> syntax-level records (analysis.classify)
        self._tiles: dict[int, TileAnalysis] = {}  # id(kernel) -> its tile accesses

    @classmethod
    def read(cls, path: Path | str) -> FileModel:
        """The model of a file; UserError when it cannot be read (a parse error comes with `scan`)."""
        source, encoding = read_source_file(Path(path))
        return cls(source, str(path), encoding)

    @cached_property
    def scan(self) -> Scan:
        """The file's kernels and the syntax-tree nodes behind them; UserError when the file does not parse."""
        return scan(self.source, self.path)

    @property
    def module(self) -> ModuleInfo:
        return self.scan.module

    @cached_property
    def facts(self) -> FactsBuilder:
        """Facts of each JIT function of the file, memoised (helpers are followed through it)."""
        return FactsBuilder({node.name: node for node in self.scan.kernel_nodes}, self.module.aliases,
                            self.scan.text)

    @cached_property
    def params(self) -> ParamAnalysis:
        return ParamAnalysis(self.facts)

    # ------------------------------------------------------------------ one kernel

    @cached_property
    def _nodes(self) -> dict[int, ast.FunctionDef]:
        return {id(kernel): node for kernel, node in zip(self.module.kernels, self.scan.kernel_nodes, strict=True)}

    def node(self, kernel: KernelInfo) -> ast.FunctionDef:
        """The kernel's `def`."""
        return self._nodes[id(kernel)]

    def kernel_facts(self, kernel: KernelInfo) -> FunctionFacts:
        return self.facts.facts(self.node(kernel))

    def callee(self, call: ast.Call) -> str | None:
        """What a call calls, through this file's imports (`tileiropt.classify.names.callee`)."""
        return callee(call, self.module.aliases)

    def tiles(self, kernel: KernelInfo) -> TileAnalysis:
        """The kernel's tile loads and stores, each proven a tile access or left alone with why."""
        if id(kernel) not in self._tiles:
            facts = self.kernel_facts(kernel)
            self._tiles[id(kernel)] = TileAnalysis(
                self.node(kernel), self.scan.text, self.callee, kernel.launch_arguments, kernel.constexprs,
                set(self.module.module_functions), reduces=bool(facts.reductions or facts.scans)).run()
        return self._tiles[id(kernel)]

    def persistent_step(self, kernel: KernelInfo) -> str | None:
        """The argument a persistent kernel strides its tile loop by (`NUM_SMS`): the last loop
        `for tile in tl.range(<program id 0>, tiles, STEP)` (or `range`) whose step is a launch argument; its start
        is `tl.program_id(0)`, or a name that is assigned `tl.program_id(0)` before the loop."""
        program_ids = self._program_id_names(kernel)
        step = None
        for loop in self.kernel_facts(kernel).range_loops:
            call = loop.iter
            assert isinstance(call, ast.Call)
            if self.callee(call) not in _PERSISTENT_RANGES or len(call.args) < 3:
                continue
            start, stride = call.args[0], call.args[2]
            from_program_id = self._is_program_id_0(start) or (
                isinstance(start, ast.Name) and any(name == start.id and place < _place(loop)
                                                    for place, name in program_ids))
            if from_program_id and isinstance(stride, ast.Name) and stride.id in kernel.launch_arguments:
                step = stride.id
        return step

    def _program_id_names(self, kernel: KernelInfo) -> list[tuple[tuple[int, int], str]]:
        """(where, name) of each `name = tl.program_id(0)` in the kernel."""
        return [(_place(node), node.targets[0].id) for node in ast.walk(self.node(kernel))
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and self._is_program_id_0(node.value)]

    def _is_program_id_0(self, node: ast.expr) -> bool:
        if not (isinstance(node, ast.Call) and self.callee(node) == TL + "program_id"):
            return False
        arguments = [*node.args, *(k.value for k in node.keywords)]
        return len(arguments) == 1 and is_int(arguments[0]) and arguments[0].value == 0

    # ------------------------------------------------------------------ the file

    def uses_atomics(self) -> bool:
        """Whether a JIT function of the file updates memory atomically (helpers included)."""
        return any(access.kind == "atomic" for node in self.scan.kernel_nodes
                   for access in self.facts.facts(node).accesses)


def _place(node: ast.stmt) -> tuple[int, int]:
    return node.lineno, node.col_offset


class FileModels:
    """One model per file for the length of a command: a file is read, parsed and classified once however
    many phases ask for it."""

    def __init__(self) -> None:
        self._models: dict[Path, FileModel] = {}

    def get(self, path: Path | str) -> FileModel:
        """The file's model, read now when no phase has asked for it yet; UserError when it cannot be read."""
        key = Path(path).resolve()
        if key not in self._models:
            self._models[key] = FileModel.read(path)
        return self._models[key]
