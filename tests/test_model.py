"""The kernel model's queries, each on small examples of what it must and must not find: what a call calls through
the file's imports (in both syntax trees), how statements share a line, the persistent tile loop, atomics, the
tile accesses and why a load is left alone, finding the model's nodes in libcst's tree, and a file read, parsed
and classified once however many phases ask."""

from __future__ import annotations

import ast
import builtins
import io
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from tileiropt.apply.command import apply_paths
from tileiropt.apply.locate import Locator
from tileiropt.classify import classify as classify_module
from tileiropt.classify.classify import classify_paths, kernel_records
from tileiropt.classify.model import FileModel, FileModels
from tileiropt.classify.names import callee
from tileiropt.classify.rules import ALL_RULES
from tileiropt.classify.source import SourceText
from tileiropt.classify.syntax import names_assigned, on_header_line, statement_lines
from tileiropt.releases import get_release

from shared import TEST_FIXTURES

HEADER = "import triton\nimport triton.language as tl\n\n"
FIXTURES = TEST_FIXTURES


def _model(body: str, header: str = HEADER) -> FileModel:
    return FileModel(header + textwrap.dedent(body), "k.py")


# ----------------------------------------------------------------------------- what a call calls

CALLEES = [
    ("import triton.language as tl", "tl.load(x)", "triton.language.load"),
    ("from triton import language as lang", "lang.store(x, y)", "triton.language.store"),
    ("import triton", "triton.language.dot(a, b)", "triton.language.dot"),
    ("from triton.language import load", "load(x)", "triton.language.load"),
    ("import triton as tr", "tr.cdiv(a, b)", "triton.cdiv"),
    ("import triton.language as tl", "tl.math.exp(x)", "triton.language.math.exp"),
    ("from triton.language.core import sum as total", "total(x)", "triton.language.sum"),
    ("import triton.language as tl", "min(a, b)", "min"),  # a builtin: as written
    ("import triton.language as tl", "offs.to(tl.int64)", "offs.to"),  # a method: as written
    ("import torch", "torch.exp(x)", "torch.exp"),  # not Triton
    ("import triton.language as tl", "(a + b).to(tl.int64)", None),  # not a dotted name
]


@pytest.mark.parametrize(("imports", "call", "expected"), CALLEES)
def test_a_call_resolves_alike_in_both_trees(imports: str, call: str, expected: str | None) -> None:
    aliases = FileModel(imports + "\n", "k.py").module.aliases
    tree_call = ast.parse(call, mode="eval").body
    libcst_call = cst.parse_expression(call)
    assert isinstance(tree_call, ast.Call) and isinstance(libcst_call, cst.Call)
    assert callee(tree_call, aliases) == expected
    assert callee(libcst_call, aliases) == expected


# ----------------------------------------------------------------------------- statements as written


@pytest.mark.parametrize(("source", "lines"), [
    ("a = 1; b = 2\nc = 3\n", [["a", "b"], ["c"]]),
    ("a = 1;\nb = 2\n", [["a"], ["b"]]),  # a trailing `;` joins nothing
    ("a = 1; \\\n    b = 2\n", [["a", "b"]]),  # a line continuation keeps one logical line
    ("a = 1  # x; y\nb = 2\n", [["a"], ["b"]]),  # a `;` in a comment
    ("a = (1,\n     2); b = 3\n", [["a", "b"]]),
    ("for i in r:\n    a = 1\nb = 2\n", [["i"], ["b"]]),  # a compound statement stands alone
])
def test_statements_share_a_line_as_libcst_groups_them(source: str, lines: list[list[str]]) -> None:
    tree = ast.parse(source)

    def name(statement: ast.stmt) -> str:
        target = statement.target if isinstance(statement, ast.For) else statement.targets[0]  # type: ignore[attr-defined]
        return target.id

    assert [[name(s) for s in line] for line in statement_lines(tree.body, SourceText(source))] == lines


@pytest.mark.parametrize(("source", "one_line"), [
    ("for i in r: x += i\n", True),
    ("for i in r:\n    x += i\n", False),
    ("if c:  # note: here\n    x = 1\n", False),
])
def test_a_body_on_its_header_line(source: str, one_line: bool) -> None:
    loop = ast.parse(source).body[0]
    assert on_header_line(loop.body, SourceText(source)) is one_line  # type: ignore[attr-defined]


def test_names_a_block_assigns() -> None:
    body = ast.parse("a = b = f()\nc, (d, *e) = g()\nh += 1\ni: int = 2\nfor j in r:\n    k = 1\nx.y = 3\n").body
    assert names_assigned(body) == {"a": 1, "b": 1, "c": 1, "d": 1, "h": 1, "i": 1, "j": 1, "k": 1}


# ----------------------------------------------------------------------------- parameters and loops


PERSISTENT = """
    @triton.autotune(configs=[triton.Config({"BLOCK": 32})], key=["n"])
    @triton.jit
    def k(x_ptr, n, NUM_SMS: tl.constexpr, BLOCK: tl.constexpr):
        {start}
        for tile in {range}:
            tl.store(x_ptr + tile, 1)
"""


@pytest.mark.parametrize(("start", "loop", "step"), [
    ("pid = tl.program_id(0)", "tl.range(pid, n, NUM_SMS)", "NUM_SMS"),
    ("pass", "tl.range(tl.program_id(axis=0), n, NUM_SMS)", "NUM_SMS"),
    ("pid = tl.program_id(0)", "range(pid, n, NUM_SMS)", "NUM_SMS"),
    ("pid = tl.program_id(1)", "tl.range(pid, n, NUM_SMS)", None),  # not axis 0
    ("pid = tl.program_id(0) * 2", "tl.range(pid, n, NUM_SMS)", None),  # not the program id itself
    ("pid = tl.program_id(0)", "tl.range(pid, n, BLOCK)", None),  # the autotuner's configs set BLOCK
    ("pid = tl.program_id(0)", "tl.static_range(pid, n, NUM_SMS)", None),
    ("pid = tl.program_id(0)", "tl.range(pid, n)", None),
])
def test_the_persistent_tile_loop_and_its_step(start: str, loop: str, step: str | None) -> None:
    model = _model(PERSISTENT.replace("{start}", start).replace("{range}", loop))
    (kernel,) = model.module.kernels
    assert kernel.launch_arguments == {"x_ptr", "n", "NUM_SMS"}
    assert kernel.constexprs == {"NUM_SMS", "BLOCK"}
    assert model.persistent_step(kernel) == step


@pytest.mark.parametrize(("body", "atomics"), [
    ("tl.atomic_add(out_ptr, tl.load(x_ptr))", True),
    ("_add(out_ptr, tl.load(x_ptr))", True),  # through a JIT helper
    ("tl.store(out_ptr, tl.load(x_ptr))  # not atomic_add: a plain store", False),
    ("tl.store(out_ptr, tl.load(x_ptr)); note = 'atomic_add'", False),
])
def test_atomics_are_calls_not_words(body: str, atomics: bool) -> None:
    helper = "@triton.jit\ndef _add(p, v):\n    tl.atomic_add(p, v)\n\n" if "_add(" in body else ""
    model = _model(f"{helper}@triton.jit\ndef k(x_ptr, out_ptr):\n    {body}\n")
    assert model.uses_atomics() is atomics


# ----------------------------------------------------------------------------- tile accesses


TILE = """
    @triton.jit
    def k(a_ptr, M, K, stride_am, stride_ak, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
        offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        {statement}
"""


@pytest.mark.parametrize(("statement", "found"), [
    ("a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)", "nt"),
    ("a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :], mask=offs_m[:, None] < M)", "n"),
    ("a = tl.load(a_ptrs, mask=offs_m[:, None] < M, other=1.0)", "masked lanes read `other=1.0`"),
    ("a = tl.load(a_ptr)", "a scalar access, not a tile"),
    ("a = tl.load(a_ptr + offs_k)", "a 1-D access with 1 index terms, not a 2-D tile"),
    ("if tl.load(a_ptr) > 0:\n            pass", "in a loop or `if` header"),
    ("a = tl.load(a_ptrs, mask=offs_m[:, None] == 0)", "mask not understood: comparison `offs_m[:, None] == 0`"),
    ("a = tl.load(a_ptrs, volatile=True)", "`volatile=` (a block pointer or a volatile access)"),
])
def test_a_tile_access_or_why_not(statement: str, found: str) -> None:
    model = _model(TILE.replace("{statement}", statement))
    analysis = model.tiles(model.module.kernels[0])
    if found in ("n", "t", "nt"):
        (access,) = analysis.accesses
        assert (access.kind, access.pointer, access.orient, access.call.lineno) == ("load", "a_ptr", found, 10)
    else:
        assert not analysis.accesses
        (skip,) = analysis.skips
        assert found in skip.reason and skip.call.lineno == 10


def test_loads_through_a_from_import_are_accesses_too() -> None:
    model = _model(TILE.replace("{statement}", "a = load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K))"),
                   header="import triton\nimport triton.language as tl\nfrom triton.language import load\n")
    (access,) = model.tiles(model.module.kernels[0]).accesses
    assert access.pointer == "a_ptr"


# ----------------------------------------------------------------------------- the model's nodes in libcst's tree


LOCATED = """\
def k(x, c):
    y = tl.load(x); z = f(g(y))
    if c:
        w = tl.load(x + 1)
    elif c > 1:
        w = h(x)
    else:
        w = 0
    for i in r: w += i
    return w
"""


def test_calls_and_blocks_are_found_in_libcst() -> None:
    aliases = {"tl": "triton.language"}
    tree = ast.parse(LOCATED).body[0]
    function = cst.parse_module(LOCATED).body[0]
    assert isinstance(tree, ast.FunctionDef) and isinstance(function, cst.FunctionDef)
    locator = Locator(tree, function, aliases)
    module = cst.Module(body=[])
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        found = locator.call(call)
        assert found is not None and module.code_for_node(found) == ast.get_source_segment(LOCATED, call)
        assert locator.tree_call(found) is call
    for path, first in [(((1, ("body",)),), "w = tl.load(x + 1)"), (((1, ("orelse", "body")),), "w = h(x)"),
                        (((1, ("orelse", "orelse", "body")),), "w = 0")]:
        block = locator.block(path)
        assert block is not None and module.code_for_node(block.body[0]).strip() == first
    assert locator.block(((2, ("body",)),)) is None  # `for i in r: w += i` has no indented block
    assert locator.block(((7, ("body",)),)) is None  # no such statement


def test_a_call_that_does_not_match_is_not_found() -> None:
    tree = ast.parse("def k(x):\n    y = tl.load(x)\n").body[0]
    other = cst.parse_module("def k(x):\n    y = tl.store(x)\n").body[0]
    assert isinstance(tree, ast.FunctionDef) and isinstance(other, cst.FunctionDef)
    locator = Locator(tree, other, {"tl": "triton.language"})
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call))
    assert locator.call(call) is None


# ----------------------------------------------------------------------------- one read, one parse, one classification


class _Counts:
    """Reads of one file and parses of its text, wherever they happen."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, path: Path):
        self.path, self.text = path.resolve(), path.read_text()
        self.reads = self.ast_parses = self.libcst_parses = self.classified = 0
        real_open, real_read, real_parse, real_module = builtins.open, Path.read_text, ast.parse, cst.parse_module
        real_records = classify_module._records

        def counted_open(file, *args, **kwargs):
            if isinstance(file, (str, Path)) and Path(file).resolve() == self.path:
                self.reads += 1
            return real_open(file, *args, **kwargs)

        def counted_read(file, *args, **kwargs):
            if file.resolve() == self.path:
                self.reads += 1
            return real_read(file, *args, **kwargs)

        def counted_parse(source, *args, **kwargs):
            self.ast_parses += source == self.text
            return real_parse(source, *args, **kwargs)

        def counted_module(source, *args, **kwargs):
            self.libcst_parses += source == self.text
            return real_module(source, *args, **kwargs)

        def counted_records(model, release):
            self.classified += 1
            return real_records(model, release)

        for target in (builtins, io):
            monkeypatch.setattr(target, "open", counted_open)
        monkeypatch.setattr(Path, "read_text", counted_read)
        monkeypatch.setattr(ast, "parse", counted_parse)
        monkeypatch.setattr(cst, "parse_module", counted_module)
        monkeypatch.setattr(classify_module, "_records", counted_records)


def test_classify_then_apply_read_parse_and_classify_a_file_once(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = tmp_path / "gemm.py"
    kernel.write_text((FIXTURES / "tma" / "gemm.py").read_text())
    counts = _Counts(monkeypatch, kernel)
    models = FileModels()
    release = get_release("13.4")
    (classified,) = classify_paths([kernel], release=release, ir=False, models=models)
    results, errors = apply_paths([kernel], dry_run=True, release=release, models=models)
    assert classified.status == "pass" and results[0].changed and not errors
    assert (counts.reads, counts.ast_parses, counts.libcst_parses, counts.classified) == (1, 1, 1, 1)


def test_records_are_kept_per_release_and_filtered_per_rule() -> None:
    model = FileModel.read(FIXTURES / "tma" / "gemm.py")
    release = get_release("13.1")
    everything = kernel_records(model, ALL_RULES, release)
    errors_only = kernel_records(model, [rule for rule in ALL_RULES if rule.code.startswith("TIR0")], release)
    assert len(model.records) == 1  # one classification, two views
    assert {f.code for r in errors_only for f in r.findings} <= {f.code for r in everything for f in r.findings}
    assert all(f.code.startswith("TIR0") for r in errors_only for f in r.findings)
    assert [r.kernel_class for r in everything] == [r.kernel_class for r in errors_only] == ["dot"]
