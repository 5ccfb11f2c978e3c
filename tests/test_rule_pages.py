"""Rule pages: one source for `tileiropt rule`, docs/rules.md and the SARIF rule metadata; examples that hold."""

from __future__ import annotations

import pytest

from tileiropt.classify.classify import classify_source
from tileiropt.classify.rule_pages import before_after, find_rule, release_ratings, rule_json, rule_page, rules_document
from tileiropt.classify.rules import ALL_RULES, Rule
from tileiropt.errors import UserError
from tileiropt.releases import get_release

from shared import ROOT

DOCS = ROOT / "docs" / "rules.md"


def test_docs_rules_md_is_generated_from_the_rules() -> None:
    assert DOCS.read_text(encoding="utf-8") == rules_document(), "run `make rules-docs`"


def test_every_rule_has_its_texts() -> None:
    for rule in ALL_RULES:  # its page's prose beside its check
        assert rule.detects.strip() and rule.why.strip(), rule.code
        assert vars(type(rule)).get("detects") and vars(type(rule)).get("why"), f"{rule.code}: its own texts"


def _codes(source: str, rule: Rule, version: str) -> list[str]:
    result = classify_source(source, "example.py", rules=[rule], release=get_release(version))
    return [f.code for k in result.kernels for f in k.findings]


@pytest.mark.parametrize("rule", ALL_RULES, ids=[r.code for r in ALL_RULES])
def test_page_examples_before_breaks_the_rule_and_after_does_not(rule: Rule) -> None:
    before, after = before_after(rule)
    assert rule.code in _codes(before, rule, "13.1")  # every feature a rule checks is unsupported or partial there
    assert rule.code not in _codes(after, rule, "13.1")


def test_page_of_block_pointers() -> None:
    page = rule_page(find_rule("tir013"))
    assert page.startswith("## TIR013 block-pointer\n\nSeverity: **error**: will not compile on TileIR")
    assert ("- CUDA Tile IR 13.1: unsupported\n"
            "- CUDA Tile IR 13.4: partial (emulated through plain pointers: correct but slow; tensor descriptors (TMA) "
            "are the fast path): a perf finding\n"
            "- CUDA Tile IR 13.5: partial (emulated through plain pointers: correct but slow; tensor descriptors (TMA) "
            "are the fast path): a perf finding\n") in page
    assert "**Example.** Before:\n\n```python\nimport triton\n" in page and "tl.make_tensor_descriptor" in page
    assert "Triton itself deprecated tl.make_block_ptr (3.7, 3.8) and removed it in 3.9" in page


def test_rules_without_a_release_feature_have_no_release_lines() -> None:
    assert release_ratings(find_rule("TIR101")) == []
    assert "**By release.**" not in rule_page(find_rule("TIR101"))
    assert release_ratings(find_rule("TIR010"))[0] == (
        "CUDA Tile IR 13.1: tma_gather_scatter: unsupported (TMA scatter is not supported); tma_reduce: unsupported "
        "(TMA read-modify-write is not supported)")


def test_rule_json() -> None:
    data = rule_json(find_rule("TIR006"))
    assert list(data) == ["code", "name", "severity", "message", "detects", "why", "fix", "releases", "example"]
    assert (data["code"], data["name"], data["severity"]) == ("TIR006", "erf", "error")
    assert data["example"]["after"].endswith("# tanh form of GELU\n")


def test_unknown_rule() -> None:
    with pytest.raises(UserError, match=r"^no lint rule 'TIR999'; known: TIR001, TIR002"):
        find_rule("TIR999")
