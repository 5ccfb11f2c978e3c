"""TileIR lint rules: `TIR0xx` error, `TIR1xx` memory-model warning, `TIR2xx` perf."""

from tileiropt.classify.rules import branches, memory_model, performance, unsupported
from tileiropt.classify.rules.base import Finding, KernelContext, Rule, noqa_codes, select_rules, suppressed

ALL_RULES: list[Rule] = [*unsupported.RULES, *memory_model.RULES, *performance.RULES, *branches.RULES]

__all__ = ["ALL_RULES", "Finding", "KernelContext", "Rule", "noqa_codes", "select_rules", "suppressed"]
