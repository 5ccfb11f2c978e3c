"""Kernel discovery: every import/decorator spelling, autotune config kinds, launch sites."""

from __future__ import annotations

import textwrap

import pytest

from tileiropt.classify.discovery import discover, discover_file
from tileiropt.errors import UserError


def _discover(source: str):
    return discover(textwrap.dedent(source), "k.py")


def _names(module) -> list[str]:
    return [k.name for k in module.kernels]


@pytest.mark.parametrize(
    "header, decorator",
    [
        ("import triton\nimport triton.language as tl", "@triton.jit"),
        ("import triton\nimport triton.language as tl", "@triton.jit()"),
        ("import triton\nimport triton.language as tl", '@triton.jit(do_not_specialize=["n"])'),
        ("import triton as tr\nimport triton.language as tl", "@tr.jit"),
        ("from triton import jit\nfrom triton import language as tl", "@jit"),
        ("from triton import jit as J\nimport triton.language as tl", "@J"),
        ("import triton.language as tl\nimport triton.language", "@triton.jit"),
        ("from triton.runtime.jit import jit\nimport triton.language as tl", "@jit"),
    ],
)
def test_jit_spellings(header: str, decorator: str) -> None:
    source = f"{header}\n\n{decorator}\ndef kern(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n"
    module = discover(source, "k.py")
    assert _names(module) == ["kern"]
    kernel = module.kernels[0]
    assert kernel.jit_decorator == decorator[1:]
    assert [p.name for p in kernel.params] == ["x_ptr", "n", "BLOCK"]
    assert [p.is_constexpr for p in kernel.params] == [False, False, True]


def test_not_a_triton_jit() -> None:
    module = _discover(
        """
        import cutlass.cute as cute
        from numba import jit

        @cute.jit
        def a(x):
            pass

        @jit
        def b(x):
            pass

        def triton_jit(x):
            pass
        """
    )
    assert module.kernels == []
    assert module.module_functions == {"a": 6, "b": 10, "triton_jit": 13}


def test_aliases_recorded() -> None:
    module = _discover(
        """
        import triton as tr
        from triton import language as language, jit
        import triton.language as tl
        from triton.language.extra import libdevice
        import os
        """
    )
    assert module.triton_names == {"tr"}
    assert module.tl_names == {"language", "tl"}
    assert module.jit_names == {"jit"}
    assert module.aliases["libdevice"] == "triton.language.extra.libdevice"
    assert "os" not in module.aliases


def test_params_annotations_and_defaults() -> None:
    module = _discover(
        """
        import triton
        from triton.language import constexpr
        import triton.language as tl

        @triton.jit
        def k(x_ptr, n: tl.int32, A: constexpr, B: "tl.constexpr" = 4, C: triton.language.constexpr = 8,
              *, D: tl.constexpr = None):
            pass
        """
    )
    params = {p.name: p for p in module.kernels[0].params}
    assert params["n"].annotation == "tl.int32" and not params["n"].is_constexpr
    assert params["A"].is_constexpr and params["A"].default is None
    assert params["B"].is_constexpr and params["B"].default == "4"
    assert params["C"].is_constexpr and params["C"].default == "8"
    assert params["D"].is_constexpr and params["D"].default == "None"


def test_lines_and_decorator_stack() -> None:
    module = _discover(
        """
        import triton
        import triton.language as tl


        @triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4)], key=["n"])
        @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            x = tl.load(x_ptr)
            tl.store(x_ptr, x)
        """
    )
    kernel = module.kernels[0]
    assert (kernel.first_line, kernel.line, kernel.end_line) == (6, 9, 11)
    assert kernel.heuristics == {"EVEN": 'lambda args: args["n"] % args["BLOCK"] == 0'}
    assert kernel.autotune is not None and kernel.autotune.line == 6
    assert kernel.is_entry


def test_configs_list_literal() -> None:
    module = _discover(
        """
        import triton

        @triton.autotune(
            configs=[
                triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=3),
                triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, 8, 2, num_ctas=2, maxnreg=128),
            ],
            key=["M", "N"],
            prune_configs_by={"early_config_prune": prune},
            warmup=5,
        )
        @triton.jit
        def k(a, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
            pass
        """
    )
    autotune = module.kernels[0].autotune
    assert autotune.configs_kind == "list"
    assert autotune.key == ["M", "N"]
    assert autotune.other_args == {"prune_configs_by": '{"early_config_prune": prune}', "warmup": "5"}
    assert [c.line for c in autotune.configs] == [6, 7]
    assert autotune.configs[0].kwargs == {"BLOCK_M": "64", "BLOCK_N": "32"}
    assert autotune.configs[0].options == {"num_warps": "4", "num_stages": "3"}
    assert autotune.configs[1].options == {"num_warps": "8", "num_stages": "2", "num_ctas": "2",
                                           "maxnreg": "128"}
    assert autotune.configs[1].source.startswith("triton.Config({")
    assert autotune.config_names == ["BLOCK_M", "BLOCK_N"]
    assert autotune.config_function is None


def test_configs_comprehension_positional_and_non_literal_key() -> None:
    module = _discover(
        """
        import triton
        KEYS = ["n"]

        @triton.autotune([triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 512) for w in (4, 8)], KEYS)
        @triton.jit
        def k(x, n, BLOCK: tl.constexpr):
            pass
        """
    )
    autotune = module.kernels[0].autotune
    assert autotune.configs_kind == "comprehension"
    assert autotune.key is None
    assert len(autotune.configs) == 1
    assert autotune.configs[0].kwargs == {"BLOCK": "b"}
    assert autotune.configs[0].options == {"num_warps": "w"}


def test_configs_module_level_name_with_extend() -> None:
    module = _discover(
        """
        import triton
        from triton import Config

        CONFIGS = [Config({"BLOCK": 128})]
        CONFIGS += [Config(dict(BLOCK=256), num_stages=4)]
        CONFIGS.append(triton.Config({"BLOCK": 1024, "EXTRA": 1}))

        @triton.autotune(configs=CONFIGS, key=[])
        @triton.jit
        def k(x, BLOCK: tl.constexpr):
            pass
        """
    )
    autotune = module.kernels[0].autotune
    assert autotune.configs_kind == "name"
    assert autotune.configs_source == "CONFIGS"
    assert [c.kwargs for c in autotune.configs] == [{"BLOCK": "128"}, {"BLOCK": "256"},
                                                   {"BLOCK": "1024", "EXTRA": "1"}]
    assert autotune.config_names == ["BLOCK", "EXTRA"]
    assert autotune.key == []


def test_configs_from_function_call() -> None:
    module = _discover(
        """
        import triton

        def get_autotune_configs(pre_hook=None):
            configs = []
            for bm in (64, 128):
                configs.append(triton.Config({"BM": bm, "BN": 128}, num_stages=3, pre_hook=pre_hook))
            return configs

        @triton.autotune(configs=get_autotune_configs(), key=["M"])
        @triton.jit
        def k(a, M, BM: tl.constexpr, BN: tl.constexpr):
            pass
        """
    )
    autotune = module.kernels[0].autotune
    assert autotune.configs_kind == "call"
    assert autotune.config_function == "get_autotune_configs"
    assert autotune.config_function_params == ["pre_hook"]
    assert len(autotune.configs) == 1 and autotune.configs[0].line == 7
    assert autotune.configs[0].options == {"num_stages": "3", "pre_hook": "pre_hook"}
    assert autotune.config_names == ["BM", "BN"]


def test_configs_unresolvable() -> None:
    module = _discover(
        """
        import triton
        from .configs import make_configs

        @triton.autotune(configs=make_configs(), key=["M"])
        @triton.jit
        def k(a, M):
            pass

        @triton.autotune(configs=make_configs() + [], key=["M"])
        @triton.jit
        def k2(a, M):
            pass
        """
    )
    first, second = module.kernels
    assert first.autotune.configs_kind == "call"
    assert first.autotune.config_function == "make_configs"
    assert first.autotune.config_function_params == []
    assert first.autotune.configs == []
    assert second.autotune.configs_kind == "other"


def test_launch_sites_calls_and_entry() -> None:
    module = _discover(
        """
        import triton
        import triton.language as tl

        @triton.jit
        def _square(x):
            return x * x

        @triton.jit
        def _store(ptr, x):
            tl.store(ptr, x)

        @triton.jit
        def kern(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            x = tl.load(x_ptr)
            _store(y_ptr, _square(x))

        @triton.jit
        def launched_elsewhere(x_ptr):
            tl.store(x_ptr, 1.0)

        def wrapper(x, y):
            n = x.numel()
            grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
            kern[grid](x, y, n, BLOCK=1024, num_warps=4, **extra)
            return y

        class Fn:
            @staticmethod
            def forward(ctx, x):
                kern[(1, 2)](
                    x,
                    x,
                    1,
                    BLOCK=128,
                )

        kern[(1,)](a, b, 1, BLOCK=16)
        """
    )
    kernels = {k.name: k for k in module.kernels}
    assert kernels["kern"].calls == ["_store", "_square"]
    assert kernels["_square"].called_by == ["kern"]
    assert kernels["_square"].returns_value
    assert not kernels["_square"].is_entry and not kernels["_store"].is_entry
    assert kernels["kern"].is_entry
    assert kernels["launched_elsewhere"].is_entry
    launches = kernels["kern"].launches
    assert [(s.line, s.function, s.grid) for s in launches] == [
        (25, "wrapper", "grid"), (31, "forward", "(1, 2)"), (38, None, "(1,)")]
    assert launches[0].args == ["x", "y", "n"]
    assert launches[0].kwargs == {"BLOCK": "1024", "num_warps": "4", "**": "extra"}
    assert launches[1].kwargs == {"BLOCK": "128"}


def test_nested_kernel_factory() -> None:
    module = _discover(
        """
        import triton

        def make(op):
            @triton.jit
            def inner(x):
                pass
            return inner
        """
    )
    assert _names(module) == ["inner"]
    assert module.module_functions == {"make": 4}


def test_syntax_error_names_file_and_line() -> None:
    with pytest.raises(UserError) as info:
        discover("import triton\n\ndef broken(:\n    pass\n", "bad.py")
    assert info.value.file == "bad.py" and info.value.line == 3
    assert str(info.value).startswith("bad.py:3: cannot parse")


def test_discover_file_errors(tmp_path) -> None:
    with pytest.raises(UserError, match="cannot read"):
        discover_file(tmp_path / "missing.py")
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\nimport triton\n@triton.jit\ndef k(x):\n    s = '\xe9'\n")
    assert _names(discover_file(latin)) == ["k"]
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\xff\xfe\x00\x00garbage")
    with pytest.raises(UserError):
        discover_file(binary)


def test_non_ascii_source_segments() -> None:
    module = _discover(
        """
        import triton
        # commentaire: é
        @triton.autotune(configs=[triton.Config({"BLOCK": 64}, pre_hook=lambda a: "é")], key=["n"])
        @triton.jit
        def k(x):
            pass
        """
    )
    assert module.kernels[0].autotune.configs[0].options["pre_hook"] == 'lambda a: "é"'


def test_triton_names_come_from_the_file_s_own_package_only(tmp_path) -> None:
    site = tmp_path / "site"
    for package, shim in (("mypkg", "import triton\nimport triton.language as tl\n"),
                          ("otherpkg", "import triton\nimport triton.language as tl\n")):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
        (site / package / "_triton.py").write_text(shim)
    kernel = "\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1)\n"
    own = site / "mypkg" / "ops.py"
    own.write_text("from mypkg._triton import triton, tl\n" + kernel)  # its own package's shim: read
    assert _names(discover_file(own)) == ["k"]
    other = site / "mypkg" / "other.py"
    other.write_text("from otherpkg._triton import triton, tl\n" + kernel)  # a package beside it: never read
    assert _names(discover_file(other)) == []
