"""Backend tests for "cuda" in host code, widened to take in nvtriton's "tileir" backend (apply/backend_checks.py):
the tutorials' `is_cuda()` is False under nvtriton, so the upstream matmul tutorial autotunes over AMD's configs
there. The widened test agrees with the author's on every other backend."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pytest

from tileiropt.apply.apply import transform_source

KERNEL = textwrap.dedent("""\
    import triton
    import triton.language as tl


    @triton.jit
    def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
    """)

CHECKS = textwrap.dedent("""\


    def is_cuda():
        return triton.runtime.driver.active.get_current_target().backend == "cuda"


    def not_cuda():
        target = triton.runtime.driver.active.get_current_target()
        return 'cuda' != target.backend


    def is_hip():
        return triton.runtime.driver.active.get_current_target().backend == "hip"
    """)


def _functions(source: str, backend: str) -> dict:
    """The module's namespace with `triton.runtime.driver.active` answering `backend`."""
    target = SimpleNamespace(backend=backend)
    driver = SimpleNamespace(active=SimpleNamespace(get_current_target=lambda: target))
    host = source.split("@triton.jit")[0] + source.split("@triton.jit")[1].split("\n\n\n", 1)[-1]
    namespace: dict = {}
    exec(compile(host.replace("import triton\n", "").replace("import triton.language as tl\n", ""), "<host>",
                 "exec"), {"triton": SimpleNamespace(runtime=SimpleNamespace(driver=driver))}, namespace)
    return namespace


def test_a_cuda_test_is_widened_where_it_is_written_and_said_once_per_test():
    result = transform_source(KERNEL + CHECKS, "k.py")
    assert 'backend in ("cuda", "tileir")' in result.new_source
    assert "target.backend not in ('cuda', 'tileir')" in result.new_source  # the author's quotes
    assert 'backend == "hip"' in result.new_source
    assert [change.line for change in result.host] == [12, 17]
    assert result.host[0].what == '`triton.runtime.driver.active.get_current_target().backend in ("cuda", "tileir")`'


@pytest.mark.parametrize("backend", ["cuda", "hip", "xpu", "tileir"])
def test_the_widened_tests_agree_with_the_authors_on_every_backend_but_tileir(backend):
    before = _functions(KERNEL + CHECKS, backend)
    after = _functions(transform_source(KERNEL + CHECKS, "k.py").new_source, backend)
    for name in ("is_cuda", "not_cuda", "is_hip"):
        expected = before[name]() if backend != "tileir" else {"is_cuda": True, "not_cuda": False,
                                                                "is_hip": False}[name]
        assert after[name]() == expected, name
    if backend == "tileir":
        assert before["is_cuda"]() is False  # what the author's file does under nvtriton


def test_a_file_that_names_the_tileir_backend_itself_is_left_as_its_author_wrote_it():
    ported = KERNEL + CHECKS + textwrap.dedent("""\


        def is_tileir():
            return triton.runtime.driver.active.get_current_target().backend == "tileir"
        """)
    result = transform_source(ported, "k.py")
    assert result.host == []
    assert 'backend == "cuda"' in result.new_source


def test_a_file_that_never_asks_for_the_target_is_left_alone():
    other = KERNEL + '\n\ndef pick(options):\n    return options.backend == "cuda"\n'
    assert transform_source(other, "k.py").host == []


def test_a_second_apply_of_a_file_with_only_host_changes_changes_nothing():
    once = transform_source(KERNEL + CHECKS, "k.py").new_source
    twice = transform_source(once, "k.py")
    assert twice.new_source == once and twice.host == []



def test_a_kernels_own_comparison_and_a_concatenated_literal_are_handled_as_they_are_reported() -> None:
    """Triton's front end has no `in`: a comparison inside a JIT function is never widened (nor reported); a test
    against `"cu" "da"` is reported and rewritten alike."""
    source = KERNEL + textwrap.dedent('''\


        @triton.jit
        def odd(x_ptr, TARGET: tl.constexpr):
            if TARGET.backend == "cuda":
                tl.store(x_ptr, 1.0)


        def is_cuda():
            return triton.runtime.driver.active.get_current_target().backend == ("cu" "da")
        ''')
    result = transform_source(source, "k.py")
    assert [c.line for c in result.host] == [18]
    assert 'TARGET.backend == "cuda"' in result.new_source
    assert 'get_current_target().backend in ("cuda", "tileir")' in result.new_source
