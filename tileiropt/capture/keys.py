"""A captured kernel's key: the kernel's name and the file that defines it, written `name@/real/path.py` in the
capture's records (capture.json's `expected` and `counts`, the recorder's per-process files)."""

from __future__ import annotations

from typing import NamedTuple


class KernelKey(NamedTuple):
    kernel: str
    file: str

    @classmethod
    def parse(cls, text: str) -> KernelKey:
        kernel, _, file = str(text).partition("@")
        return cls(kernel, file)

    @classmethod
    def of(cls, launch: dict) -> KernelKey:
        """The key of a captured launch record (its "kernel" and "file")."""
        return cls(str(launch["kernel"]), str(launch["file"]))

    def __str__(self) -> str:
        return f"{self.kernel}@{self.file}"
