"""Every lint rule's VALID / INVALID examples, rule selection and `# noqa` suppression."""

from __future__ import annotations

import textwrap

import pytest

from tileiropt.classify.classify import classify_source
from tileiropt.classify.rules import ALL_RULES, Rule, noqa_codes, select_rules
from tileiropt.errors import UserError
from tileiropt.releases import get_release

HEADER = "import triton\nimport triton.language as tl\n\n"
OLDEST = get_release("13.1")  # every feature a rule checks is unsupported or partial there: the examples' release


def _codes(source: str, rule: Rule) -> list[str]:
    result = classify_source(HEADER + source, "example.py", rules=[rule], release=OLDEST)
    assert result.status == "pass", result.message
    return [f.code for k in result.kernels for f in k.findings]


CASES = [(rule, kind, i, example) for rule in ALL_RULES
         for kind, examples in (("valid", rule.VALID), ("invalid", rule.INVALID))
         for i, example in enumerate(examples)]


@pytest.mark.parametrize("rule, kind, index, example", CASES,
                         ids=[f"{r.code}-{kind}-{i}" for r, kind, i, _ in CASES])
def test_rule_examples(rule: Rule, kind: str, index: int, example: str) -> None:
    codes = _codes(example, rule)
    if kind == "valid":
        assert rule.code not in codes
    else:
        assert rule.code in codes


def test_rules_are_well_formed() -> None:
    codes = [rule.code for rule in ALL_RULES]
    assert len(codes) == len(set(codes))
    for rule in ALL_RULES:
        assert rule.code.startswith("TIR") and len(rule.code) == 6
        assert rule.severity in ("error", "warning", "perf")
        expected = {"0": "error", "1": "warning", "2": "perf"}[rule.code[3]]
        assert rule.severity == expected, rule.code
        assert rule.VALID and rule.INVALID and rule.message and rule.hint and rule.name


def test_runtime_dtype_is_a_warning_not_a_guess() -> None:
    source = HEADER + "@triton.jit\ndef k(x_ptr, out_ptr):\n    tl.atomic_max(out_ptr, tl.load(x_ptr))\n"
    result = classify_source(source, "k.py", select=["TIR007"], release=OLDEST)
    (finding,) = result.kernels[0].findings
    assert finding.severity == "warning"
    assert "depends on runtime dtype" in finding.message and "CUDA Tile IR 13.1" in finding.message
    known = HEADER + ("@triton.jit\ndef k(x_ptr, out_ptr):\n"
                      "    tl.atomic_add(out_ptr, tl.load(x_ptr).to(tl.bfloat16))\n")
    (finding,) = classify_source(known, "k.py", select=["TIR007"], release=OLDEST).kernels[0].findings
    assert finding.severity == "error"


def test_int64_only_for_descriptor_coordinates() -> None:
    pointer = HEADER + ("@triton.jit\ndef k(x_ptr, s):\n    r = tl.program_id(0).to(tl.int64)\n"
                        "    tl.store(x_ptr + r * s, 1.0)\n")
    assert classify_source(pointer, "k.py", select=["TIR012"]).kernels[0].findings == []
    descriptor = HEADER + ("@triton.jit\ndef k(d):\n    r = tl.program_id(0).to(tl.int64)\n"
                           "    d.store([r, 0], d.load([r, 0]))\n")
    (finding,) = classify_source(descriptor, "k.py", select=["TIR012"]).kernels[0].findings
    assert (finding.severity, finding.line) == ("error", 6)  # reported at the cast


def test_select_and_ignore_by_code_and_prefix() -> None:
    everything = {rule.code for rule in ALL_RULES}
    assert {r.code for r in select_rules(ALL_RULES)} == everything
    assert {r.code for r in select_rules(ALL_RULES, select=["TIR0"])} == {c for c in everything if c < "TIR100"}
    assert {r.code for r in select_rules(ALL_RULES, select=["tir101", "TIR2"])} == {"TIR101", "TIR201", "TIR202",
                                                                                     "TIR203"}
    assert "TIR101" not in {r.code for r in select_rules(ALL_RULES, ignore=["TIR101"])}
    assert {r.code for r in select_rules(ALL_RULES, select=["TIR1"], ignore=["TIR10"])} == set()
    with pytest.raises(UserError, match="no lint rule matches 'XYZ'"):
        select_rules(ALL_RULES, select=["XYZ"])


INPLACE = textwrap.dedent(
    """\
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, x * 2, mask=offs < n){comment}
    """
)


@pytest.mark.parametrize(
    "comment, silenced",
    [("", False), ("  # noqa: TIR101", True), ("  # noqa", True), ("  # noqa: TIR001, TIR101", True),
     ("  # noqa: E501", False), ("  # a comment", False), ("  # noqa:tir101", True)],
)
def test_noqa(comment: str, silenced: bool) -> None:
    result = classify_source(INPLACE.format(comment=comment), "k.py", select=["TIR101"])
    codes = [f.code for f in result.kernels[0].findings]
    assert codes == ([] if silenced else ["TIR101"])


def test_noqa_parsing() -> None:
    assert noqa_codes("x = 1") is None
    assert noqa_codes("x = 'noqa'") is None
    assert noqa_codes("x = 1  # noqa") == {"*"}
    assert noqa_codes("    mask=m)  # noqa: TIR201,TIR202") == {"TIR201", "TIR202"}
    assert noqa_codes("x = f(  # noqa: TIR004") == {"TIR004"}


def test_findings_carry_line_message_and_hint() -> None:
    source = HEADER + "@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    tl.store(x_ptr, tl.erf(x))\n"
    findings = classify_source(source, "k.py", select=["TIR006"]).kernels[0].findings
    assert [(f.code, f.severity, f.line) for f in findings] == [("TIR006", "error", 7)]
    assert findings[0].hint


def test_a_wide_block_capped_by_arithmetic_says_how_wide_it_can_be() -> None:
    from tileiropt.classify.rules.performance import WideReductionBlock

    kernel = ("@triton.jit\ndef k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
              "    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"
              "    tl.store(y_ptr + offs, x / tl.sum(x, axis=0), mask=offs < n)\n\n")
    capped = kernel + ("def run(x, y):\n    BLOCK = min(triton.next_power_of_2(x.shape[1]), 64 * 1024)\n"
                       "    k[(x.shape[0],)](x, y, x.shape[1], BLOCK=BLOCK)\n")
    result = classify_source(HEADER + capped, "example.py", rules=[WideReductionBlock()], release=OLDEST)
    assert [f.message for k in result.kernels for f in k.findings] == [
        "BLOCK can be 65536 (> 8192) in a norm kernel"]
    assert _codes(kernel + ("def run(x, y):\n    BLOCK = min(triton.next_power_of_2(x.shape[1]), 4 << 10)\n"
                            "    k[(x.shape[0],)](x, y, x.shape[1], BLOCK=BLOCK)\n"), WideReductionBlock()) == []
    guarded = kernel + ("def run(x, y):\n    BLOCK = triton.next_power_of_2(x.shape[1])\n"
                        "    if BLOCK > 4 * 1024:\n        raise ValueError('row too wide')\n"
                        "    k[(x.shape[0],)](x, y, x.shape[1], BLOCK=BLOCK)\n")
    assert _codes(guarded, WideReductionBlock()) == []  # the guard's bound, written as arithmetic
