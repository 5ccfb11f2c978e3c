"""A kernel entry as a project names it: ``"name.attr"`` in the kernel's own module, or ``"pkg.mod:name.attr"``
in another; the harness resolves it in the loaded module, the project file checks it before anything runs."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EntryRef:
    """``"name.attr"`` (in the kernel module) or ``"pkg.mod:name.attr"`` (in another module)."""

    module: str | None
    attributes: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> EntryRef | None:
        module, colon, attrs = text.strip().rpartition(":")
        if not colon:
            module, attrs = "", text.strip()
        parts = tuple(attrs.split("."))
        if not all(p.isidentifier() for p in parts) or (module and not all(
                p.isidentifier() for p in module.split("."))):
            return None
        return cls(module or None, parts)

    @property
    def name(self) -> str:
        """The name the entry is bound to in a call expression's scope (its first attribute)."""
        return self.attributes[0]
