"""Whether a kernel gets TileIR code: not when an error finding says the TileIR compiler rejects it. In a run the
verdict is classify's (its IR check confirms or clears a syntax finding), and apply follows it; alone, apply lints
at syntax level itself."""

from __future__ import annotations

import textwrap

import pytest

from tileiropt.apply.apply import ERROR_RULES, transform_model
from tileiropt.classify.model import FileModel
from tileiropt.classify.rules.base import Finding
from tileiropt.releases import get_release

HEADER = "import triton\nimport triton.language as tl\n\n"
OLDEST = get_release("13.1")
REJECTED = "no TileIR code added"
CLEAN = HEADER + textwrap.dedent("""
    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
""")
FLAGGED = HEADER + textwrap.dedent(ERROR_RULES[0].INVALID[0])
ERROR = Finding(ERROR_RULES[0].code, "error", 5, "rejected", "fix it", via="ir")
WARNING = Finding("TIR101", "warning", 5, "a warning", "look")


def _blocked(source: str, decided: dict[str, list[Finding]] | None) -> bool:
    result = transform_model(FileModel(source, "k.py"), release=OLDEST, decided=decided)
    return any(REJECTED in skipped for kernel in result.kernels for skipped in kernel.skipped)


@pytest.mark.parametrize(("source", "decided", "blocked"), [
    (FLAGGED, None, True),  # alone: apply's own syntax lint finds the error
    (FLAGGED, {}, False),  # classify's IR check cleared it: TileIR code goes in
    (FLAGGED, {"k": [WARNING]}, False),  # only an error blocks
    (CLEAN, None, False),
    (CLEAN, {"k": [ERROR]}, True),  # classify's IR check found one the syntax does not see
    (CLEAN, {"other": [ERROR]}, False),  # another kernel's finding never blocks this one
])
def test_one_verdict_of_whether_a_kernel_gets_tileir_code(source: str, decided: dict | None, blocked: bool) -> None:
    assert _blocked(source, decided) is blocked
