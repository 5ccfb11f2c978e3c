"""The one-line errors: a user error's text, with its file, line and fix.

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
GPU-only outcomes are built from records and stubs, so the CPU suite holds them.
"""

from __future__ import annotations

from typing import Any

import pytest

from tileiropt.errors import ExitCode

# --------------------------------------------------------------------------- the one-line errors


@pytest.mark.parametrize(("error", "text"), [
    (dict(message="bad"), "bad"),
    (dict(message="bad", file="k.py"), "k.py: bad"),
    (dict(message="bad", file="k.py", line=12), "k.py:12: bad"),
    (dict(message="bad", file="k.py", line=12, hint="fix it"), "k.py:12: bad (fix: fix it)"),
    (dict(message="bad", line=12, hint="fix it"), "bad (fix: fix it)"),  # a line without a file names nothing
])
def test_user_error_is_one_line_naming_file_line_and_fix(error: dict[str, Any], text: str) -> None:
    from tileiropt.errors import UserError

    assert str(UserError(**error)) == text
    assert UserError("x").code == ExitCode.BAD_INPUT


@pytest.mark.parametrize(("value", "ok"), [(1, True), (0.5, True), (7 * 24 * 3600.0, True), (0, False),
                                           (-1, False), (float("nan"), False), (float("inf"), False),
                                           (7 * 24 * 3600.0 + 1, False), (True, False), ("5", False)])
def test_durations_are_checked(value: Any, ok: bool) -> None:
    from tileiropt.errors import UserError, check_seconds

    if ok:
        assert check_seconds("--timeout", value) == float(value)
    else:
        with pytest.raises(UserError, match=r"--timeout must be a number of seconds in \(0, 604800\]"):
            check_seconds("--timeout", value)


