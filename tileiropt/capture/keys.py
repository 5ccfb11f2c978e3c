"""A captured kernel's key: the kernel's name and the file that defines it, written `name@/real/path.py` in the
capture's records (capture.json's `expected` and `counts`, the recorder's per-process files)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from tileiropt.project.launch import CapturedLaunch


class KernelKey(NamedTuple):
    kernel: str
    file: str

    @classmethod
    def parse(cls, text: str) -> KernelKey:
        kernel, _, file = str(text).partition("@")
        return cls(kernel, file)

    @classmethod
    def of(cls, launch: CapturedLaunch) -> KernelKey:
        """The key of a captured launch."""
        return cls(launch.kernel, launch.file)

    def __str__(self) -> str:
        return f"{self.kernel}@{self.file}"
