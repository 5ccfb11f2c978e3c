"""Each lint rule's page -- what it finds, why, how each release rates it, the fix, an example before and
after -- from one source: the rule classes (their checks, examples and prose) and the release files.

`tileiropt rule TIR006` prints `rule_page`, `tileiropt rule --all` prints `rules_document`, which is
also docs/rules.md word for word (`make rules-docs` writes it; a test keeps them equal), and the SARIF
output carries the same texts as rule metadata.
"""

from __future__ import annotations

from typing import Any

from tileiropt.classify.rules import ALL_RULES, Rule
from tileiropt.errors import UserError
from tileiropt.releases import known_releases

EXAMPLE_HEADER = "import triton\nimport triton.language as tl\n\n"
SEVERITY_MEANING = {
    "error": "will not compile on TileIR (or, with runtime fallback on, silently runs on PTX)",
    "warning": "may give wrong results under TileIR's unordered memory model, or depends on something known only "
               "at run time",
    "perf": "legal, but slow on TileIR",
}
# Rules that check more than one release feature (the others name theirs in `Rule.feature`).
_FEATURES = {"TIR010": ("tma_gather_scatter", "tma_reduce")}


def find_rule(code: str) -> Rule:
    """The rule with this code (case-insensitive); a one-line error naming the known codes otherwise."""
    wanted = code.strip().upper()
    for rule in ALL_RULES:
        if rule.code == wanted or rule.name == code.strip().lower():
            return rule
    raise UserError(f"no lint rule {code!r}; known: {', '.join(rule.code for rule in ALL_RULES)}",
                    hint="`tileiropt rule` lists them")


def features_of(rule: Rule) -> tuple[str, ...]:
    return _FEATURES.get(rule.code, (rule.feature,) if rule.feature else ())


def release_ratings(rule: Rule) -> list[str]:
    """One line per known release: how it rates the rule's feature(s) and what the finding's severity is."""
    if not features_of(rule):
        return []  # a memory-model or performance rule: the same on every release
    lines = []
    for release in known_releases().values():
        parts = []
        for name in features_of(rule):
            feature = release.feature(name)
            text = feature.status + (f" ({feature.note})" if feature.note else "")
            if feature.status == "partial" and feature.severity:
                text += f": a {feature.severity} finding"
            parts.append(text if len(features_of(rule)) == 1 else f"{name}: {text}")
        lines.append(f"{release.label()}: {'; '.join(parts)}")
    return lines


def before_after(rule: Rule) -> tuple[str, str]:
    """The example that breaks the rule and its rewrite, each a whole file."""
    return EXAMPLE_HEADER + rule.INVALID[0], EXAMPLE_HEADER + (rule.AFTER or rule.VALID[0])


def rule_page(rule: Rule) -> str:
    """The rule's page in Markdown."""
    before, after = before_after(rule)
    lines = [f"## {rule.code} {rule.name}", "",
             f"Severity: **{rule.severity}**: {SEVERITY_MEANING[rule.severity]}.", "",
             f"**What it finds.** {rule.detects}.", "",
             f"**Message.** {rule.message}.", "",
             f"**Why.** {rule.why}", ""]
    ratings = release_ratings(rule)
    if ratings:
        lines += ["**By release.**", "", *[f"- {line}" for line in ratings], ""]
    lines += [f"**Fix.** {rule.hint[0].upper()}{rule.hint[1:]}.", "",
              "**Example.** Before:", "", "```python", before.rstrip("\n"), "```", "",
              "After:", "", "```python", after.rstrip("\n"), "```", "",
              f"Silence one line with `# noqa: {rule.code}`; turn the rule off with `--ignore {rule.code}` or "
              f"`ignore = [\"{rule.code}\"]` under `[tool.tileiropt]` in pyproject.toml.", ""]
    return "\n".join(lines)


def rules_index() -> str:
    """A Markdown table of every rule: code, name, severity, message."""
    rows = ["| code | name | severity | message |", "|---|---|---|---|"]
    rows += [f"| [`{r.code}`](#{r.code.lower()}-{r.name}) | {r.name} | {r.severity} | {r.message} |"
             for r in ALL_RULES]
    return "\n".join(rows) + "\n"


def rules_document() -> str:
    """docs/rules.md: the index, then every rule's page."""
    head = ["# TileIR lint rules", "",
            "Generated from the rule classes (`tileiropt/classify/rules/`: each rule's check, examples and texts) "
            "and the release files (`tileiropt/releases/`) by "
            "`make rules-docs`; `tileiropt rule CODE` prints one page, `tileiropt rule --all` all of them.", "",
            "Codes group by severity: `TIR0xx` error, `TIR1xx` warning, `TIR2xx` perf. A rule for a release "
            "feature reports nothing on a release that supports the feature; where a release supports it in part, "
            "the finding may carry a lower severity than the rule's (block pointers on 13.4: `perf`).", "",
            rules_index()]
    return "\n".join(head) + "\n" + "\n".join(rule_page(rule) for rule in ALL_RULES)


def rule_json(rule: Rule) -> dict[str, Any]:
    before, after = before_after(rule)
    return {"code": rule.code, "name": rule.name, "severity": rule.severity, "message": rule.message,
            "detects": rule.detects, "why": rule.why, "fix": rule.hint,
            "releases": release_ratings(rule), "example": {"before": before, "after": after}}
