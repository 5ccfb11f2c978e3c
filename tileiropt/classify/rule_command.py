"""`tileiropt rule`: a lint rule's page, every page, or the list of rules."""

from __future__ import annotations

import sys

from tileiropt.classify.rule_pages import find_rule, rule_json, rule_page, rules_document
from tileiropt.classify.rules import ALL_RULES
from tileiropt.errors import ExitCode, UserError
from tileiropt.output import print_json


def rule_command(code: str | None, all_rules: bool = False, output_format: str | None = None,
             json_output: bool = False) -> ExitCode:
    """Print one rule's page (`code`), every page (`all_rules`) or one line per rule; text is Markdown."""
    fmt = (output_format or ("json" if json_output else "text")).strip().lower()
    if fmt not in ("text", "json") or (json_output and fmt != "json"):
        raise UserError(f"unknown output format {output_format!r} for rule; known: text, json",
                        hint="--output-format text|json")
    if code is not None and all_rules:
        raise UserError("give a rule code or --all, not both", hint="tileiropt rule TIR006, or tileiropt rule --all")
    rules = [find_rule(code)] if code is not None else list(ALL_RULES)
    if fmt == "json":
        pages = [rule_json(rule) for rule in rules]
        print_json(pages[0] if code is not None else pages)
    elif code is not None:
        sys.stdout.write(rule_page(rules[0]))
    elif all_rules:
        sys.stdout.write(rules_document())
    else:
        width = max(len(rule.name) for rule in rules)
        for rule in rules:
            sys.stdout.write(f"{rule.code}  {rule.name:<{width}}  {rule.severity:<7}  {rule.message}\n")
    sys.stdout.flush()
    return ExitCode.OK
