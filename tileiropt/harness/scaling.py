"""Scale a kernel's shapes down for Triton's interpreter, which runs every program in Python.

The largest dimension is halved, everywhere it appears, until the inputs hold at most
`MAX_ELEMENTS` elements and the kernel's `flops` expression (when given) stays under
`MAX_FLOPS`. Named dims are halved by name (so every tensor that uses them stays consistent);
a literal size is halved at every place it occurs (equal literal sizes are taken to be the
same dimension). No dimension goes below `MIN_DIM` (the smallest `tl.dot` operand).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_ELEMENTS = 1 << 18
MAX_FLOPS = 1 << 28
MIN_DIM = 16


@dataclass
class Scaled:
    dims: dict[str, int]
    shapes: dict[str, list[int]]
    scaled_from: dict[str, list[int]] | None  # the original shapes, None when unchanged


def _resolve(inputs: dict[str, list[int | str]], dims: dict[str, int], literal: dict[int, int]) -> dict[str, list[int]]:
    return {name: [dims[d] if isinstance(d, str) else literal.get(d, d) for d in shape]
            for name, shape in inputs.items()}


def evaluate_flops(expression: str | None, dims: dict[str, int]) -> float | None:
    """The value of a kernel's `flops` expression over its dims, or None when absent or invalid."""
    if not expression:
        return None
    try:
        value = eval(expression, {"__builtins__": {}, "math": math}, dict(dims))  # noqa: S307
        return float(value)
    except Exception:
        return None


def scale_for_interpreter(inputs: dict[str, list[int | str]], dims: dict[str, int], flops: str | None = None,
                          *, max_elements: int = MAX_ELEMENTS, max_flops: float = MAX_FLOPS) -> Scaled:
    """Halve the largest dim until the inputs and the FLOP count are small enough."""
    dims = dict(dims)
    original = _resolve(inputs, dims, {})
    # Dims used in the shapes come first (in order); dims only the flops expression uses follow.
    named = [d for shape in inputs.values() for d in shape if isinstance(d, str)] + list(dims)
    literal: dict[int, int] = {d: d for shape in inputs.values() for d in shape if not isinstance(d, str)}

    def too_big() -> bool:
        shapes = _resolve(inputs, dims, literal)
        elements = sum(math.prod(shape) for shape in shapes.values())
        work = evaluate_flops(flops, dims)
        return elements > max_elements or (work is not None and work > max_flops)

    while too_big():
        # Candidates: (current size, is literal, key); the largest wins, named dims first on ties.
        candidates: list[tuple[int, int, str | int]] = [(dims[d], 0, d) for d in dict.fromkeys(named)
                                                        if dims[d] > MIN_DIM]
        candidates += [(size, 1, key) for key, size in literal.items() if size > MIN_DIM]
        if not candidates:
            break
        size, is_literal, key = max(candidates, key=lambda c: (c[0], -c[1]))
        smaller = max(MIN_DIM, (size + 1) // 2)
        if is_literal:
            literal[key] = smaller  # type: ignore[index]
        else:
            dims[key] = smaller  # type: ignore[index]
    shapes = _resolve(inputs, dims, literal)
    return Scaled(dims=dims, shapes=shapes, scaled_from=original if shapes != original else None)


def describe_scaling(scaled_from: dict[str, list[int]], shapes: dict[str, list[int]]) -> str:
    """"scaled for the interpreter from x=1024x1024 to x=256x1024"."""
    def fmt(value: dict[str, list[int]]) -> str:
        return ", ".join(f"{name}={'x'.join(map(str, shape)) or 'scalar'}" for name, shape in value.items())

    return f"scaled for the interpreter from {fmt(scaled_from)} to {fmt(shapes)}"
