"""Before/after and unit tests of the apply building blocks (spaces, config values, math rewrites)."""

from __future__ import annotations

import ast
import math
import textwrap

import libcst as cst
import pytest

from tileiropt.apply.config_values import ConfigValue, Unresolvable, resolve_configs
from tileiropt.apply.locate import Locator
from tileiropt.apply.math_rewrites import rewrite_math
from tileiropt.apply.spaces import Space, build_space, load_spaces, parse_spaces, role_of
from tileiropt.classify.classify import classify_source
from tileiropt.errors import UserError

ALIASES = {"tl": "triton.language", "triton": "triton"}


def _function(source: str) -> cst.FunctionDef:
    node = cst.parse_module(textwrap.dedent(source)).body[0]
    assert isinstance(node, cst.FunctionDef)
    return node


def _render(node: cst.FunctionDef) -> str:
    return cst.Module(body=[node]).code


def _rewrite_math(source: str) -> tuple[cst.FunctionDef, list[int]]:
    """The math rewrite of the function in `source`, and the line of each call rewritten (found in the model)."""
    node = _function(source)
    new, rewrites = rewrite_math(node, ALIASES)
    tree = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(tree, ast.FunctionDef)
    locator = Locator(tree, node, ALIASES)
    return new, [locator.tree_call(rewrite.call).lineno for rewrite in rewrites]  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- math rewrites

MATH_CASES = [
    ("y = tl.exp(x)", "y = tl.exp2(x * 1.4426950408889634)"),
    ("y = tl.exp(x - m)", "y = tl.exp2((x - m) * 1.4426950408889634)"),
    ("y = tl.math.exp(x[:, None])", "y = tl.math.exp2(x[:, None] * 1.4426950408889634)"),
    ("y = a * tl.sigmoid(a)", "y = a * (1.0 / (1.0 + tl.exp2(-a * 1.4426950408889634)))"),
    ("y = tl.sigmoid(a + b)", "y = (1.0 / (1.0 + tl.exp2(-(a + b) * 1.4426950408889634)))"),
    ("y = tl.exp2(x)", "y = tl.exp2(x)"),  # already exp2: unchanged
    ("y = torch.exp(x)", "y = torch.exp(x)"),  # not triton.language: unchanged
]


@pytest.mark.parametrize(("before", "after"), MATH_CASES)
def test_math_rewrite_before_after(before: str, after: str) -> None:
    new, lines = _rewrite_math(f"@triton.jit\ndef k(x):\n    {before}\n")
    assert _render(new) == f"@triton.jit\ndef k(x):\n    {after}\n"
    assert lines == ([] if before == after else [3])  # the statement's line


def test_math_rewrite_keeps_comments_and_other_lines() -> None:
    source = "@triton.jit\ndef k(x_ptr):\n    # load\n    x = tl.load(x_ptr)  # keep me\n    return tl.exp(x)\n"
    new, lines = _rewrite_math(source)
    text = _render(new)
    assert "# load\n    x = tl.load(x_ptr)  # keep me\n" in text
    assert lines == [5]


def test_math_rewrite_follows_the_imports() -> None:
    """`from triton import language as tlang` and `triton.language.exp`: the names the file binds, not `tl`."""
    node = _function("@triton.jit\ndef k(x):\n    return tlang.exp(x) + triton.language.sigmoid(x) + tl.exp(x)\n")
    new, rewrites = rewrite_math(node, {"tlang": "triton.language", "triton": "triton"})
    assert _render(new) == ("@triton.jit\ndef k(x):\n    return tlang.exp2(x * 1.4426950408889634) + (1.0 / (1.0 + "
                            "triton.language.exp2(-x * 1.4426950408889634))) + tl.exp(x)\n")  # `tl` is unbound here
    assert len(rewrites) == 2


@pytest.mark.parametrize(("expression", "expected"), [
    ("tl.exp(x - m)", lambda x, m: math.exp(x - m)),
    ("a * tl.sigmoid(x + m)", lambda x, m: 1.5 / (1.0 + math.exp(-(x + m)))),
    ("tl.math.exp(x) * tl.sigmoid(-x)", lambda x, m: math.exp(x) / (1.0 + math.exp(x))),
])
def test_math_rewrite_computes_what_the_original_did(expression: str, expected) -> None:
    """The rewritten function, run with exp2 as 2**x, gives exp / sigmoid as before (not only the same text)."""
    import types

    node = _function(f"@triton.jit\ndef k(x, m, a):\n    return {expression}\n")
    new, rewrites = rewrite_math(node, ALIASES)
    assert rewrites and "exp2" in _render(new) and "tl.exp(" not in _render(new) and "sigmoid" not in _render(new)
    exp2 = types.SimpleNamespace(exp2=lambda v: 2.0 ** v)
    namespace = {"triton": types.SimpleNamespace(jit=lambda f: f), "tl": types.SimpleNamespace(math=exp2, **vars(exp2))}
    exec(compile(_render(new), "<rewritten>", "exec"), namespace)  # noqa: S102 - our own rewrite of a fixed text
    for x in (-30.0, -2.5, 0.0, 0.37, 4.0, 30.0):
        assert math.isclose(namespace["k"](x, 0.25, 1.5), expected(x, 0.25), rel_tol=1e-13, abs_tol=1e-300)


# ----------------------------------------------------------------------------- config values

CONFIG_MODULE = textwrap.dedent('''
    import triton
    import triton.language as tl

    SIZES = [32, 64]

    def get_configs(pre_hook=None):
        """Configs."""
        return [triton.Config({"BLOCK_M": m, "BLOCK_N": 64}, num_warps=w, pre_hook=pre_hook)
                for m in SIZES for w in (4, 8)]

    LITERAL = [triton.Config({"BLOCK": 1024}, num_warps=4), triton.Config({"BLOCK": 2048}, num_stages=2)]

    def dynamic():
        return [triton.Config({"BLOCK": torch.cuda.device_count()})]

    def branchy():
        if is_cuda():
            return []
        return []
''')


def _resolve(configs: str, module: str = CONFIG_MODULE) -> list[ConfigValue]:
    """The configs of an autotuner in `module` given `configs=<configs>`."""
    return resolve_configs(ast.parse(module), ast.parse(configs, mode="eval").body, {"triton"})


def test_resolve_call_with_comprehension_and_constants() -> None:
    configs = _resolve("get_configs()")
    assert [(c.kwargs, c.num_warps) for c in configs] == [
        ({"BLOCK_M": 32, "BLOCK_N": 64}, 4), ({"BLOCK_M": 32, "BLOCK_N": 64}, 8),
        ({"BLOCK_M": 64, "BLOCK_N": 64}, 4), ({"BLOCK_M": 64, "BLOCK_N": 64}, 8)]


def test_resolve_module_level_name_and_literal() -> None:
    configs = _resolve("LITERAL")
    assert [(c.kwargs, c.num_stages) for c in configs] == [({"BLOCK": 1024}, 3), ({"BLOCK": 2048}, 2)]
    inline = _resolve('[triton.Config({"X": 1})]')
    assert inline[0].kwargs == {"X": 1}


@pytest.mark.parametrize(("expr", "reason"), [
    ("dynamic()", "depend on 'torch'"),
    ("branchy()", "more than return"),
    ("missing()", "not defined"),
    ("UNKNOWN", "not assigned"),
])
def test_unresolvable_configs_say_why(expr: str, reason: str) -> None:
    with pytest.raises(Unresolvable, match=reason):
        _resolve(expr)


@pytest.mark.parametrize(("expr", "reason"), [
    # the evaluator reads the syntax tree: no attribute walk reaches Python's object graph
    ("[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == 'Popen']", "not evaluated statically"),
    ("[triton.Config({'BLOCK': 9 ** 9 ** 9})]", "power too large"),
    ("[triton.Config({'BLOCK': b}) for b in range(10 ** 9)]", "more than 10000"),
    ("[triton.Config({'BLOCK': 1e999})]", "no literal writes back"),
    ("[triton.Config({'BLOCK': 1}, num_warps=hook)]", "no literal integer"),
    ("[triton.Config({'BLOCK': (lambda: 1)()})]", "Lambda"),
    ("[triton.Config({'BLOCK': " + " + ".join(["1"] * 900) + "})]", "nested too deeply"),
    ("[triton.Config({'B': 1})] * 100000", "more than 10000"),
])
def test_hostile_configs_are_never_run(expr: str, reason: str) -> None:
    with pytest.raises(Unresolvable, match=reason):
        _resolve(expr)


def test_evaluator_covers_the_forms_configs_are_written_in() -> None:
    expr = ("[triton.Config({'BM': bm, 'BN': bn, **({'SPLIT': 2} if bm > 32 else {})}, num_warps=4 if bm < 128 else 8,"
            " num_stages=s) for bm, bn in zip((32, 64, 128), [64] * 3) for s in [2, 3] if not (bm == 128 and s == 3)]")
    configs = _resolve(expr)
    assert [(c.kwargs, c.num_warps, c.num_stages) for c in configs] == [
        ({"BM": 32, "BN": 64}, 4, 2), ({"BM": 32, "BN": 64}, 4, 3),
        ({"BM": 64, "BN": 64, "SPLIT": 2}, 4, 2), ({"BM": 64, "BN": 64, "SPLIT": 2}, 4, 3),
        ({"BM": 128, "BN": 64, "SPLIT": 2}, 8, 2)]


# ----------------------------------------------------------------------------- spaces


def test_roles_from_names() -> None:
    assert [role_of(n) for n in ("BLOCK_SIZE_M", "BLOCK_N", "BK", "TILE_M", "BLOCK_SIZE", "XBLOCK", "GROUP_SIZE_M")] \
        == ["M", "N", "K", "M", "BLOCK", "BLOCK", None]


def test_shipped_spaces_match_the_documented_ranges() -> None:
    spaces = load_spaces()
    assert spaces["dot"].occupancy == [1, 2, 4] and spaces["dot"].num_ctas == [1, 2]
    assert spaces["dot"].num_stages == [2, 3, 4, 5, 6]
    assert spaces["norm"].occupancy == [1, 2, 4, 8] and spaces["reduction"].occupancy == [1, 2, 4, 8]
    assert max(spaces["elementwise"].occupancy) == 16


def test_bad_spaces_file_names_the_key() -> None:
    with pytest.raises(UserError, match=r"\[dot.occupancy\]"):
        parse_spaces({c: {"occupancy": "x" if c == "dot" else [1]} for c in
                      ("dot", "norm", "elementwise", "reduction")}, "spaces.toml")
    with pytest.raises(UserError, match="no space for class"):
        parse_spaces({"dot": {}}, "spaces.toml")


def test_dot_space_uses_kernel_names_caps_and_covers_every_value() -> None:
    space = load_spaces()["dot"]
    existing = [{"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}]
    configs = build_space(space, existing, list(existing[0]), cap=16)
    assert len(configs) == 16
    assert all(set(c.kwargs_dict()) == set(existing[0]) for c in configs)
    assert all(c.kwargs_dict()["GROUP_SIZE_M"] == 8 for c in configs)
    for attr, values in (("occupancy", [1, 2, 4]), ("num_ctas", [1, 2]), ("num_stages", [2, 3, 4, 5, 6])):
        assert sorted({getattr(c, attr) for c in configs}) == values
    assert {c.kwargs_dict()["BLOCK_SIZE_M"] for c in configs} == {128, 256}
    assert {c.kwargs_dict()["BLOCK_SIZE_K"] for c in configs} == {64, 128}
    assert configs == build_space(space, existing, list(existing[0]), cap=16)  # deterministic


def test_space_never_invents_names() -> None:
    space = Space([1, 2], [1], [2], tiles={"M": [128]})
    configs = build_space(space, [{"num_rows": 4}], ["num_rows"], cap=16)
    assert {c.kwargs for c in configs} == {(("num_rows", 4),)}


# ----------------------------------------------------------------------------- kernel facts


def _record(source: str, kernel: str):
    result = classify_source(textwrap.dedent(source), "k.py", rules=[])
    return next(r for r in result.kernels if r.kernel == kernel)


def test_params_in_place_and_atomics() -> None:
    record = _record('''
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr, y_ptr, lock_ptr, n_cols, stride_x, BLOCK: tl.constexpr):
            ptrs = x_ptr + tl.arange(0, BLOCK)
            x = tl.load(ptrs)
            tl.store(ptrs, x * 2)
            tl.store(y_ptr + 1, x)
            tl.atomic_add(lock_ptr, 1)
    ''', "k")
    assert record.in_place_params == ["x_ptr"]
    assert record.pointer_params == ["x_ptr", "y_ptr", "lock_ptr"]
    assert record.atomic_lines == [11]
    assert record.size_params == ["n_cols"]


def test_single_letter_pointers_are_never_sizes_helpers_followed() -> None:
    """`B` (the layer-norm tutorial's bias), `b` (liger's geglu), `K`/`V` matrices, offsets tensors:
    named like sizes, used as addresses, directly or through a JIT helper."""
    record = _record('''
        import triton
        import triton.language as tl

        @triton.jit
        def _load_row(P, row, n, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            return tl.load(P + row * n + cols, mask=cols < n)

        @triton.jit
        def k(X, B, b, K, cu_seqlens, M, N, seq_len, eps, stride, n_rows: tl.constexpr, scale: float,
              T: tl.float32, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            X += row * stride
            start = tl.load(cu_seqlens + row)
            x = tl.load(X + tl.arange(0, BLOCK)) + tl.load(B + tl.arange(0, BLOCK)) + start
            y = _load_row(b, row, N, BLOCK)
            y += _load_row(P=K, row=row, n=N, BLOCK=BLOCK)
            tl.store(X + tl.arange(0, BLOCK), x + y)
    ''', "k")
    assert record.pointer_params == ["X", "B", "b", "K", "cu_seqlens"]
    assert record.size_params == ["M", "N", "seq_len", "n_rows"]
    assert record.in_place_params == ["X"]


def test_norm_whose_row_statistic_comes_from_a_jit_helper() -> None:
    record = _record('''
        import triton
        import triton.language as tl

        @triton.jit
        def _row_stats(x, n, eps):
            mean = tl.sum(x, axis=0) / n
            var = tl.sum((x - mean) * (x - mean), axis=0) / n
            return mean, 1.0 / tl.sqrt(var + eps)

        @triton.jit
        def ln_kernel(X, Y, n, eps, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            cols = tl.arange(0, BLOCK)
            x = tl.load(X + row * n + cols, mask=cols < n, other=0.0)
            mean, rstd = _row_stats(x, n, eps)
            tl.store(Y + row * n + cols, (x - mean) * rstd, mask=cols < n)
    ''', "ln_kernel")
    assert record.kernel_class == "norm"


def test_the_flags_follow_the_authors_last_parameter_and_its_comment_stays_at_the_end() -> None:
    """Triton's matmul tutorial ends its signature `ACTIVATION: tl.constexpr  #` with `):` on a line of its own:
    the twin's flags go on lines of their own, in the author's style, and the comment ends the new last one."""
    from tileiropt.apply.tma_code import add_flags

    function = _function('''
        def matmul_kernel(
                a_ptr, b_ptr,  #
                GROUP_SIZE_M: tl.constexpr,  #
                ACTIVATION: tl.constexpr  #
        ):
            pass
        ''')
    assert _render(add_flags(function, ["TMA_T_A_PTR", "TMA_T_B_PTR"], "tl")) == textwrap.dedent('''\
        def matmul_kernel(
                a_ptr, b_ptr,  #
                GROUP_SIZE_M: tl.constexpr,  #
                ACTIVATION: tl.constexpr,  #
                TMA_T_A_PTR: tl.constexpr = False,  #
                TMA_T_B_PTR: tl.constexpr = False  #
        ):
            pass
        ''')
    one_line = _function("def k(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n")
    assert _render(add_flags(one_line, ["F"], "tl")).splitlines()[0] == (
        "def k(x_ptr, n, BLOCK: tl.constexpr, F: tl.constexpr = False):")
