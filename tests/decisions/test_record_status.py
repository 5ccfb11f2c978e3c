"""A record's status: compared ok / not, interpreter / GPU, bf16 / other dtypes.

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
GPU-only outcomes are built from records and stubs, so the CPU suite holds them.
"""

from __future__ import annotations

import pytest

from tileiropt.schema import FAIL, NOT_RUN, PASS
from tileiropt.validate.judge import compared_status

# --------------------------------------------------------------------------- a record's status


@pytest.mark.parametrize(("ok", "interpreted", "dtype", "status"), [
    (True, True, "bfloat16", PASS), (True, False, "bfloat16", PASS), (True, True, "float16", PASS),
    (False, True, "bfloat16", NOT_RUN),  # the interpreter's bf16 arithmetic: a GPU decides
    (False, False, "bfloat16", FAIL),  # on a GPU a bf16 mismatch is a failure, never "not run"
    (False, True, "float16", FAIL), (False, True, "float32", FAIL), (False, False, "float16", FAIL),
])
def test_compared_status_per_backend(ok: bool, interpreted: bool, dtype: str, status: str) -> None:
    found, reason = compared_status(ok, "3 of 64 elements differ" if not ok else "", interpreted=interpreted,
                                    dtypes={"x": dtype, "y": "float32"})
    assert found == status
    if status == NOT_RUN:
        assert reason.startswith("not run on the interpreter: bf16") and reason.endswith("3 of 64 elements differ")


