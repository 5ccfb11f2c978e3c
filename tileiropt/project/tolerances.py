"""The tolerances a validation record is held to: the project's own `atol` / `rtol` when it gives them (0
included), else the default of the loosest float dtype among the inputs."""

from __future__ import annotations

DEFAULT_TOLERANCES = {  # dtype -> (atol, rtol)
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
    "float32": (1e-4, 1e-4),
    "float64": (1e-7, 1e-7),
    "float8_e4m3fn": (1e-1, 1e-1),
    "float8_e5m2": (2e-1, 2e-1),
}


def tolerances(dtypes: dict[str, str], atol: float | None = None, rtol: float | None = None) -> tuple[float, float]:
    """(atol, rtol): each the one given, else the default of the loosest float dtype of `dtypes` (float32's when
    none is a float)."""
    floats = [d for d in dtypes.values() if d in DEFAULT_TOLERANCES]
    loosest = max(floats, key=lambda d: DEFAULT_TOLERANCES[d][0], default="float32")
    default_atol, default_rtol = DEFAULT_TOLERANCES[loosest]
    return (default_atol if atol is None else atol, default_rtol if rtol is None else rtol)
