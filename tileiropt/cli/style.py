"""How `--help` shows options: a flag is shown as a flag.

Typer 0.2x prints a type column for every option, so a flag reads `--json <bool>` as if it took a value
(`--json true`), which it does not. `show_flags_as_flags` drops that column for flags (boolean on/off
options, `--help`, `--version`); options that take a value keep theirs. Nothing changes on a Typer that
has no such column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from typer.core import TyperOption


def show_flags_as_flags() -> None:
    option = getattr(getattr(typer, "core", None), "TyperOption", None)
    shown = getattr(option, "display_type_rich", None)
    if option is None or shown is None or getattr(shown, "_flags_as_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: object) -> str | None:
        if getattr(self, "is_flag", False) and not getattr(self, "count", False):
            return None
        return shown(self, ctx)

    display_type_rich._flags_as_flags = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich
