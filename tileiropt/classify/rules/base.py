"""The lint rule model: one small class per rule, with examples that double as its tests.

A rule has a code a user can look up and silence (`TIR001`), a severity, a message and a fix
hint, and `VALID` / `INVALID` source examples. Codes group by severity:
`TIR0xx` error (will not compile on TileIR, or falls back to PTX), `TIR1xx` warning (may give
wrong results under TileIR's unordered memory model), `TIR2xx` perf.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from tileiropt.errors import UserError

if TYPE_CHECKING:
    from tileiropt.classify.discovery import KernelInfo, Scan
    from tileiropt.classify.facts import CallFact, FunctionFacts
    from tileiropt.releases import Release

SEVERITIES = ("error", "warning", "perf")

_COMPILE = ("The TileIR compiler has no lowering for it on the releases that rate it unsupported: the kernel fails to"
            " compile (\"Some ttir ops cannot be converted to tileir\"), or, on a release with runtime fallback "
            "switched on (TRITON_TILEIR_RUNTIME_FALLBACK=1), silently runs on PTX instead.")
_MEMORY = ("TileIR orders global-memory accesses only through data dependencies (an unordered memory model): two "
           "accesses that Triton's PTX path keeps in program order may be reordered.")


def compile_fails(more: str) -> str:
    """The `why` of an error rule: what an unsupported construct does on TileIR, then `more`."""
    return f"{_COMPILE} {more}".rstrip()


def unordered_memory(more: str) -> str:
    """The `why` of a memory-model rule: TileIR's unordered memory model, then `more`."""
    return f"{_MEMORY} {more}".rstrip()


@dataclass
class Finding:
    code: str
    severity: str  # "error" | "warning" | "perf"
    line: int
    message: str
    hint: str
    via: str = "syntax"  # "syntax": found in the source; "ir": found in the kernel's TTIR


@dataclass
class KernelFinding(Finding):
    """A finding with the kernel it is in, as the report carries it (read back from classify.json)."""

    kernel: str = ""

    @classmethod
    def from_json(cls, kernel: object, data: object) -> KernelFinding:
        """From one of a kernel's findings in classify.json; a missing or odd field reads as unknown."""
        data = data if isinstance(data, dict) else {}
        line = data.get("line")
        return cls(kernel=str(kernel or ""), code=str(data.get("code") or "?"),
                   severity=str(data.get("severity") or "?"), line=line if isinstance(line, int) else 0,
                   message=str(data.get("message") or ""), hint=str(data.get("hint") or ""),
                   via=str(data.get("via") or "syntax"))

    def text(self) -> str:
        """`TIR006 at `k` L12: message (fix: hint)`; no kernel or hint known: none said."""
        where = f" at `{self.kernel}` L{self.line}" if self.kernel else ""
        hint = f" (fix: {self.hint})" if self.hint else ""
        return f"{self.code}{where}: {self.message}{hint}"


@dataclass
class KernelContext:
    """What a rule sees: one JIT function, its facts, its class, and the file it lives in."""

    kernel: KernelInfo
    node: ast.FunctionDef
    facts: FunctionFacts  # this function's own body (helpers are checked on their own)
    kernel_class: str  # "dot" | "norm" | "elementwise" | "reduction" (helpers included)
    scan: Scan
    release: Release  # the CUDA Tile IR release the findings are for

    @property
    def aliases(self) -> dict[str, str]:
        return self.scan.module.aliases

    def calls_named(self, *names: str) -> Iterator[CallFact]:
        wanted = set(names)
        return (c for c in self.facts.calls if c.name in wanted)

    def source(self, node: ast.AST) -> str:
        return self.scan.text.segment(node)


class Rule:
    """One lint rule. `feature` names what a release file rates (see tileiropt/releases): a rule for a
    feature the release supports reports nothing; `partial` leaves the rule to look closer."""

    feature: ClassVar[str | None] = None
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[str]
    message: ClassVar[str]
    hint: ClassVar[str]
    detects: ClassVar[str]  # what it matches, in detail (its page's "What it finds")
    why: ClassVar[str]  # what goes wrong on TileIR (its page's "Why"; SARIF's fullDescription)
    VALID: ClassVar[list[str]]
    INVALID: ClassVar[list[str]]
    AFTER: ClassVar[str | None] = None  # the page's fixed example, where it is not VALID[0]

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        raise NotImplementedError

    def applies(self, ctx: KernelContext) -> bool:
        return self.feature is None or ctx.release.status(self.feature) != "supported"

    def findings(self, ctx: KernelContext) -> Iterable[Finding]:
        """What the rule reports for this kernel under its release."""
        return self.check(ctx) if self.applies(ctx) else ()

    def finding(self, line: int, message: str | None = None, hint: str | None = None,
                severity: str | None = None) -> Finding:
        return Finding(code=self.code, severity=severity or self.severity, line=line,
                       message=message or self.message, hint=hint or self.hint)


def select_rules(rules: list[Rule], select: list[str] | None = None,
                 ignore: list[str] | None = None) -> list[Rule]:
    """Rules whose code starts with one of `select` (all when empty) and with none of `ignore`."""
    select = [s.strip().upper() for s in (select or []) if s.strip()]
    ignore = [s.strip().upper() for s in (ignore or []) if s.strip()]
    for prefix in (*select, *ignore):
        if not any(rule.code.startswith(prefix) for rule in rules):
            raise UserError(f"no lint rule matches {prefix!r}",
                            hint="use a code like TIR001 or a prefix like TIR0 (errors), TIR1, TIR2; "
                                 "see docs/classify.md")
    return [rule for rule in rules
            if (not select or any(rule.code.startswith(p) for p in select))
            and not any(rule.code.startswith(p) for p in ignore)]


def noqa_codes(line_text: str) -> set[str] | None:
    """Codes silenced by a `# noqa` comment on the line: None = no noqa, {"*"} = bare `# noqa`."""
    if "noqa" not in line_text.lower():
        return None
    comment = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(line_text + "\n").readline):
            if token.type == tokenize.COMMENT:
                comment = token.string
                break
    except (tokenize.TokenError, SyntaxError):  # an unclosed bracket: tokens before it still count
        pass
    if comment is None:
        return None
    body = comment.lstrip("#").strip()
    if not body.lower().startswith("noqa"):
        return None
    rest = body[4:].strip()
    if not rest.startswith(":"):
        return {"*"}
    return {code.strip().upper() for code in rest[1:].replace(",", " ").split() if code.strip()}


def suppressed(finding: Finding, line_text: str) -> bool:
    codes = noqa_codes(line_text)
    return codes is not None and ("*" in codes or finding.code in codes)


def on(ctx: KernelContext) -> str:
    """`not supported by CUDA Tile IR 13.4` and the like: every message names its release."""
    return f"not supported by {ctx.release.label()}"


class CallRule(Rule):
    """A rule that fires on every call to one of `names` (qualified Triton names)."""

    names: frozenset[str] = frozenset()
    what: str = ""  # e.g. "tl.gather (tt.gather)"

    def check(self, ctx: KernelContext) -> Iterable[Finding]:
        note = ctx.release.feature(self.feature).note if self.feature else ""
        for call in ctx.calls_named(*self.names):
            yield self.finding(call.line, f"{self.what} is {on(ctx)}" + (f" ({note})" if note else ""))
