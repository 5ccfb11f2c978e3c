"""TileIR lint rules: `TIR0xx` error, `TIR1xx` memory-model warning, `TIR2xx` perf."""

from tileiropt.classify.rules import (
    branches,
    memory_model,
    performance,
    unsupported_control,
    unsupported_dtypes,
    unsupported_ops,
    unsupported_tma,
)
from tileiropt.classify.rules.base import Finding, KernelContext, Rule, noqa_codes, select_rules, suppressed

# every rule, by code: a module's rules are its `RULES`
ALL_RULES: list[Rule] = sorted([*unsupported_ops.RULES, *unsupported_dtypes.RULES, *unsupported_tma.RULES,
                               *unsupported_control.RULES, *memory_model.RULES, *performance.RULES,
                               *branches.RULES], key=lambda rule: rule.code)

__all__ = ["ALL_RULES", "Finding", "KernelContext", "Rule", "noqa_codes", "select_rules", "suppressed"]
