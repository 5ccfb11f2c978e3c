"""Symbolic values of a kernel's tile addresses: integer polynomials over named atoms, index tiles, masks.

A kernel's pointer arithmetic is evaluated into these values (`tile_flow`) for the TMA rewrite:

- `Poly`: an integer polynomial whose atoms are *versions* of names (`k` after its 2nd
  assignment is a different atom from `k` before it) or opaque sub-expressions
  (`tl.program_id(0)`, `pid // n`). Equality is structural, so `K - k*BK + k*BK == K`.
- `Affine`: a tile of integers `scalar + sum_d stride_d * (start_d + i_d)`, `i_d` in
  `[0, block_d)` along dimension `d` of a rank-`rank` tile. `start + tl.arange(0, B)` is a
  rank-1 `Affine`; a pointer tile is a rank-2 one whose scalar holds the base pointer.
- `Mask`: a conjunction of `start_d + i_d < bound` conditions.
- `Unknown`: anything else, with the reason it is not understood.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

# Atom kinds, in printing order inside a monomial: `pid_m * BLOCK_M`, not `BLOCK_M * pid_m`.
LOCAL, OPAQUE, PARAM, CONSTEXPR, GLOBAL = range(5)


@dataclass(frozen=True, order=True)
class Atom:
    kind: int
    text: str  # how it prints
    key: str  # identity: "name#version", or the opaque expression with the versions it read
    deps: frozenset[tuple[str, int]] = field(default=frozenset(), compare=False)  # (name, version) it reads
    loop: bool = field(default=False, compare=False)  # a loop variable or a value carried by a loop

    @property
    def name(self) -> str | None:
        """The variable name of a named atom (None for opaque expressions)."""
        return self.key.split("#", 1)[0] if self.kind != OPAQUE else None


Monomial = tuple[Atom, ...]  # sorted; repeated atoms are powers


class Poly:
    """An integer polynomial over atoms, in canonical form (no zero coefficients)."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict[Monomial, int] | None = None):
        self.terms: dict[Monomial, int] = {m: c for m, c in (terms or {}).items() if c}

    @staticmethod
    def const(value: int) -> Poly:
        return Poly({(): value})

    @staticmethod
    def of(atom: Atom) -> Poly:
        return Poly({(atom,): 1})

    def __add__(self, other: Poly) -> Poly:
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Poly(terms)

    def __neg__(self) -> Poly:
        return Poly({m: -c for m, c in self.terms.items()})

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def __mul__(self, other: Poly) -> Poly:
        terms: dict[Monomial, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Poly(terms)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Poly) and self.terms == other.terms

    def __hash__(self) -> int:
        return hash(frozenset(self.terms.items()))

    def __repr__(self) -> str:
        return f"Poly({format_poly(self)})"

    @property
    def is_zero(self) -> bool:
        return not self.terms

    def constant(self) -> int | None:
        """The value when the polynomial is a constant."""
        if not self.terms:
            return 0
        if list(self.terms) == [()]:
            return self.terms[()]
        return None

    def atoms(self) -> set[Atom]:
        return {a for m in self.terms for a in m}

    def monomial(self) -> tuple[int, Monomial] | None:
        """(coefficient, atoms) when the polynomial is a single term."""
        if len(self.terms) != 1:
            return None
        ((m, c),) = self.terms.items()
        return c, m

    def split(self) -> list[Poly]:
        """One polynomial per term."""
        return [Poly({m: c}) for m, c in self.terms.items()]

    def divide(self, divisor: Poly) -> Poly | None:
        """self / divisor when divisor is one term that divides every term exactly, else None."""
        single = divisor.monomial()
        if single is None:
            return None
        dc, dm = single
        need = Counter(dm)
        terms: dict[Monomial, int] = {}
        for m, c in self.terms.items():
            have = Counter(m)
            if any(have[a] < n for a, n in need.items()) or c % dc:
                return None
            terms[tuple(sorted((have - need).elements()))] = c // dc
        return Poly(terms)

    def substitute(self, atom: Atom, value: Poly) -> Poly:
        """The polynomial with every occurrence of `atom` replaced by `value`."""
        result = Poly()
        for m, c in self.terms.items():
            term = Poly.const(c)
            for a in m:
                term = term * (value if a == atom else Poly.of(a))
            result = result + term
        return result


def _format_monomial(m: Monomial, c: int) -> str:
    factors = [a.text for a in m]
    if not factors:
        return str(abs(c))
    if abs(c) != 1:
        factors.insert(0, str(abs(c)))
    return " * ".join(factors)


def format_poly(poly: Poly) -> str:
    """Python source for the polynomial, e.g. `pid_m * BLOCK_M + 1`."""
    if not poly.terms:
        return "0"
    # single names first (a base pointer reads `q_ptr + off_z * stride_qz`), then products, then the constant
    ordered = sorted(poly.terms.items(), key=lambda t: (not t[0], len(t[0]) != 1, -len(t[0]), t[0]))
    text = ""
    for i, (m, c) in enumerate(ordered):
        part = _format_monomial(m, c)
        if i == 0:
            text = f"-{part}" if c < 0 else part
        else:
            text += f" - {part}" if c < 0 else f" + {part}"
    return text


ONE = Poly.const(1)
ZERO = Poly()


@dataclass(frozen=True)
class Dim:
    """One dimension of a tile: `stride * (start + i)` for i in [0, block).

    `wrap`: the index was kept inside `[0, wrap)` -- `(start + i) % M`, or clamped with
    `tl.where(start + i < M, start + i, 0)` -- so lanes past `wrap` read valid rows of the tensor
    instead of being masked."""

    start: Poly
    block: Poly
    stride: Poly
    wrap: Poly | None = None


@dataclass(frozen=True)
class Affine:
    rank: int
    scalar: Poly
    dims: tuple[tuple[int, Dim], ...]  # (dimension, Dim), sorted by dimension

    def dim_map(self) -> dict[int, Dim]:
        return dict(self.dims)

    def is_index(self) -> bool:
        """A bare `start + tl.arange(...)` (possibly broadcast): one dimension, stride 1, no scalar."""
        return len(self.dims) == 1 and self.dims[0][1].stride == ONE and self.scalar.is_zero


@dataclass(frozen=True)
class Cond:
    """`start + i_dim < bound` for i_dim in [0, block), along `dim` of a rank-`rank` tile."""

    rank: int
    dim: int
    start: Poly
    block: Poly
    bound: Poly


@dataclass(frozen=True)
class Mask:
    rank: int
    conds: tuple[Cond, ...]


@dataclass(frozen=True)
class Unknown:
    reason: str


Value = Poly | Affine | Mask | Unknown


def index(start: Poly, block: Poly) -> Affine:
    """`start + tl.arange(0, block)`."""
    return Affine(1, ZERO, ((0, Dim(start, block, ONE)),))


def broadcast(value: Value, layout: list[bool]) -> Value:
    """`value[layout]` where each entry is True for `:` and False for `None`."""
    kept = [i for i, keep in enumerate(layout) if keep]
    rank = len(layout)
    if isinstance(value, Poly):
        return value
    if isinstance(value, Affine):
        if len(kept) != value.rank:
            return Unknown("subscript does not match the tile's rank")
        return Affine(rank, value.scalar, tuple((kept[d], dim) for d, dim in value.dims))
    if isinstance(value, Mask):
        if len(kept) != value.rank:
            return Unknown("subscript does not match the mask's rank")
        return Mask(rank, tuple(Cond(rank, kept[c.dim], c.start, c.block, c.bound) for c in value.conds))
    return value


def _align(value: Affine | Mask, rank: int) -> Affine | Mask:
    """Broadcast to a higher rank the NumPy way: trailing dimensions line up."""
    shift = rank - value.rank
    if shift == 0:
        return value
    if isinstance(value, Affine):
        return Affine(rank, value.scalar, tuple((d + shift, dim) for d, dim in value.dims))
    return Mask(rank, tuple(Cond(rank, c.dim + shift, c.start, c.block, c.bound) for c in value.conds))


def _scalar_or_tile_first(left: Value, right: Value, scalars: Callable[[Poly, Poly], Poly]
                          ) -> Value | tuple[Value, Value]:
    """The result of arithmetic on an unknown operand (unknown) or on two scalars (`scalars` of them); else the
    operands, a tile first."""
    for side in (left, right):
        if isinstance(side, Unknown):
            return side
    if isinstance(left, Poly) and isinstance(right, Poly):
        return scalars(left, right)
    return (right, left) if isinstance(left, Poly) else (left, right)


def add(left: Value, right: Value) -> Value:
    operands = _scalar_or_tile_first(left, right, Poly.__add__)
    if not isinstance(operands, tuple):
        return operands
    left, right = operands
    if isinstance(left, Affine) and isinstance(right, Poly):
        if left.is_index():
            ((d, dim),) = left.dims
            if dim.wrap is not None:
                return Unknown("an offset added to a wrapped index")
            return Affine(left.rank, ZERO, ((d, Dim(dim.start + right, dim.block, dim.stride)),))
        return Affine(left.rank, left.scalar + right, left.dims)
    if isinstance(left, Affine) and isinstance(right, Affine):
        rank = max(left.rank, right.rank)
        a, b = _align(left, rank), _align(right, rank)
        assert isinstance(a, Affine) and isinstance(b, Affine)
        if set(a.dim_map()) & set(b.dim_map()):
            return Unknown("two index terms along one dimension")
        return Affine(rank, a.scalar + b.scalar, tuple(sorted(a.dims + b.dims, key=lambda t: t[0])))
    return Unknown("arithmetic on a mask")


def negate(value: Value) -> Value:
    if isinstance(value, Poly):
        return -value
    if isinstance(value, Unknown):
        return value
    return Unknown("negated tile")


def multiply(left: Value, right: Value) -> Value:
    operands = _scalar_or_tile_first(left, right, Poly.__mul__)
    if isinstance(operands, tuple):
        tile, factor = operands
        if not (isinstance(tile, Affine) and isinstance(factor, Poly)):
            return Unknown("product of two tiles")
        return Affine(tile.rank, tile.scalar * factor,
                      tuple((d, Dim(dim.start, dim.block, dim.stride * factor, dim.wrap)) for d, dim in tile.dims))
    return operands


def conjoin(left: Value, right: Value) -> Value:
    """`left & right` of two masks."""
    if isinstance(left, Mask) and isinstance(right, Mask):
        rank = max(left.rank, right.rank)
        a, b = _align(left, rank), _align(right, rank)
        assert isinstance(a, Mask) and isinstance(b, Mask)
        return Mask(rank, a.conds + b.conds)
    for side in (left, right):
        if isinstance(side, Unknown):
            return side
    return Unknown("`&` of something other than two masks")


def less_than(left: Value, bound: Value, inclusive: bool = False) -> Value:
    """The mask `left < bound` (or `<=`), where left is a bare index and bound a scalar."""
    found = _unwrapped_index(left, bound, "a comparison that is not `index < bound`", "a comparison of a wrapped index")
    if isinstance(found, Unknown):
        return found
    d, dim = found
    assert isinstance(left, Affine) and isinstance(bound, Poly)  # as `_unwrapped_index` found them
    limit = bound + ONE if inclusive else bound
    return Mask(left.rank, (Cond(left.rank, d, dim.start, dim.block, limit),))


def _unwrapped_index(value: Value, bound: Value, not_index: str, wrapped_already: str) -> tuple[int, Dim] | Unknown:
    """(dimension, Dim) of a bare index `start + tl.arange(...)` with a scalar bound, else why not."""
    for side in (value, bound):
        if isinstance(side, Unknown):
            return side
    if not (isinstance(value, Affine) and value.is_index() and isinstance(bound, Poly)):
        return Unknown(not_index)
    ((d, dim),) = value.dims
    return Unknown(wrapped_already) if dim.wrap is not None else (d, dim)


def wrapped(value: Value, bound: Value) -> Value:
    """`index % bound` (or the index clamped below `bound`) of a bare, unwrapped index."""
    found = _unwrapped_index(value, bound, "a wrap-around (`%`) of something other than `index % bound`",
                             "an index wrapped twice")
    if isinstance(found, Unknown):
        return found
    d, dim = found
    assert isinstance(value, Affine) and isinstance(bound, Poly)
    return Affine(value.rank, ZERO, ((d, Dim(dim.start, dim.block, dim.stride, bound)),))
