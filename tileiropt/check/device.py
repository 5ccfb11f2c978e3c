"""The device a run's kernels run on: a GPU (its name, compute capability, SM count and memory), or the CPU where
the Triton interpreter runs them. Its JSON form is the one `check` reports and every record's provenance holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Device:
    name: str = "cpu"
    capability: str | None = None  # "9.0", "10.0"; None on the CPU
    sm_count: int | None = None
    memory_gib: float | None = None

    @property
    def is_gpu(self) -> bool:
        return self.name != "cpu"

    def key(self) -> list[str | None]:
        """What an input key holds of the device: a record made on another GPU model is another's."""
        return [self.name, self.capability]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "capability": self.capability, "sm_count": self.sm_count,
                "memory_gib": self.memory_gib}

    @classmethod
    def from_json(cls, data: object) -> Device:
        """From `device_description()` or a record's provenance; a missing or unreadable one is the CPU."""
        if not isinstance(data, dict) or not data.get("name"):
            return cls()
        sm_count, memory = data.get("sm_count"), data.get("memory_gib")
        return cls(name=str(data["name"]), capability=None if data.get("capability") is None else
                   str(data["capability"]), sm_count=int(sm_count) if isinstance(sm_count, int) else None,
                   memory_gib=float(memory) if isinstance(memory, (int, float)) else None)


CPU = Device()
