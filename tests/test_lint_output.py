"""classify's output formats: text lines, GitHub annotations and SARIF 2.1.0 (structure checked by hand
against the 2.1.0 schema's required properties), `--json` as an alias, and `# noqa` in every format."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.classify.lint_output import artifact_uri, output_format_of
from tileiropt.classify.rules import ALL_RULES
from tileiropt.cli import app
from tileiropt.errors import UserError

runner = CliRunner()

KERNELS = textwrap.dedent("""\
    import triton
    import triton.language as tl


    @triton.jit
    def gelu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(y_ptr + offs, 0.5 * x * (1 + tl.erf(x * 0.7071)), mask=offs < n)


    @triton.jit
    def scale_in_place(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, x * 2, mask=offs < n)


    @triton.jit
    def copy_tile(x_ptr, y_ptr, M, N):
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
        tl.store(y_ptr + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :], tl.load(p))
    """)
ERF = ("TIR006 erf (math.erf) is not supported by CUDA Tile IR 13.4 (math.erf; the libdevice __nv_erff symbol is "
       "mapped (a polynomial)) (fix: use the tanh form of GELU, 0.5*x*(1+tanh(0.7978845608*(x+0.044715*x*x*x))), or an "
       "erf polynomial)")
ALIASING = ("TIR101 `x_ptr` is both loaded (line 15) and stored (line 16): in-place update (fix: make sure every load "
            "that must see a store depends on it through data, or write to a separate output buffer)")
BLOCK_PTR = ("TIR013 tl.make_block_ptr: block pointers are emulated through plain pointers: correct but slow; tensor "
             "descriptors (TMA) are the fast path on CUDA Tile IR 13.4 (fix: rewrite to a tensor descriptor (TMA): "
             "tl.make_tensor_descriptor and desc.load([row, col]) in place of the block pointer, integer offsets in "
             "place of tl.advance (`tileiropt rule TIR013` shows the rewrite))")


@pytest.fixture(autouse=True)
def _default_verbosity():
    """-q silences the shared console until the next invocation resets it: leave it as found."""
    yield
    from tileiropt.verbosity import set_verbosity

    set_verbosity(reset=True)


@pytest.fixture
def kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    Path("k.py").write_text(KERNELS, encoding="utf-8")
    return "k.py"


def _classify(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["classify", *args, "--no-ir", "--tileir-version", "13.4"])
    return result.exit_code, result.stdout


def test_github_annotations_as_printed(kernels: str) -> None:
    code, out = _classify(kernels, "--output-format", "github")
    assert code == 0
    assert out.splitlines() == [
        f"::error file=k.py,line=9,col=5,title=TIR006::{ERF}",
        f"::warning file=k.py,line=16,col=5,title=TIR101::{ALIASING}",
        f"::notice file=k.py,line=21,col=5,title=TIR013::{BLOCK_PTR}",
    ]


def test_github_annotation_escapes_newlines_percent_commas_and_colons(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.classify.lint_output import Located, github_annotation
    from tileiropt.classify.rules import Finding

    item = Located("a,b:c.py", "k", 3, Finding("TIR006", "perf", 7, "50%\nslow", "x"))
    assert github_annotation(item) == ("::notice file=a%2Cb%3Ac.py,line=7,col=3,title=TIR006::"
                                       "TIR006 50%25%0Aslow (fix: x)")


def test_quiet_text_prints_only_the_finding_lines(kernels: str) -> None:
    code, out = _classify(kernels, "-q")
    assert code == 0
    as_lines = [line.replace(" error ", " ").replace(" warning ", " ").replace(" perf ", " ")
                for line in out.splitlines()]
    assert as_lines == [f"k.py:9:5: {ERF}", f"k.py:16:5: {ALIASING}", f"k.py:21:5: {BLOCK_PTR}"]
    assert [line.split()[2] for line in out.splitlines()] == ["error", "warning", "perf"]


def test_verbose_text_adds_evidence(kernels: str) -> None:
    code, out = _classify(kernels, "-v")
    assert code == 0
    assert "k.py:6: gelu: elementwise (confidence 0.90, strategy: occupancy + num_stages)" in out
    assert "    line 8: 2 loads/stores, no reduction and no dot" in out
    normal = _classify(kernels)[1]
    assert "confidence 0.90" not in normal and "k.py:9:5: TIR006 error" in normal.replace("\n", " ")


def test_json_alias_and_output_format_json_print_the_same_document(kernels: str) -> None:
    code_a, out_a = _classify(kernels, "--json")
    code_b, out_b = _classify(kernels, "--output-format", "json")
    assert code_a == code_b == 0 and json.loads(out_a) == json.loads(out_b)
    assert json.loads(out_a)["summary"]["findings"] == {"error": 1, "warning": 1, "perf": 1}


def test_sarif_structure(kernels: str) -> None:
    code, out = _classify(kernels, "--output-format", "sarif")
    assert code == 0
    log = json.loads(out)
    assert log["version"] == "2.1.0" and log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "tileiropt" and driver["version"] == "0.1.0"
    assert [r["id"] for r in driver["rules"]] == [rule.code for rule in ALL_RULES]
    for rule in driver["rules"]:
        assert set(rule) == {"id", "name", "shortDescription", "fullDescription", "help", "defaultConfiguration",
                             "properties"}
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"] and rule["help"]["text"]
        assert rule["help"]["markdown"].startswith(f"## {rule['id']} {rule['name']}\n")
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    levels = {rule["id"]: rule["defaultConfiguration"]["level"] for rule in driver["rules"]}
    assert (levels["TIR006"], levels["TIR101"], levels["TIR201"]) == ("error", "warning", "note")
    assert [(r["ruleId"], r["level"], r["ruleIndex"]) for r in run["results"]] == [
        ("TIR006", "error", 5), ("TIR101", "warning", 17), ("TIR013", "note", 12)]
    first = run["results"][0]
    assert first["message"]["text"] == ERF.removeprefix("TIR006 ")
    assert first["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": "k.py"},
                                                        "region": {"startLine": 9, "startColumn": 5}}}]
    assert first["properties"] == {"kernel": "gelu", "severity": "error", "via": "syntax"}
    assert run["properties"] == {"tileirRelease": "13.4", "releaseOrigin": "requested"}


def test_noqa_silences_in_every_format(kernels: str) -> None:
    text = KERNELS.replace("0.7071)), mask=offs < n)", "0.7071)), mask=offs < n)  # noqa: TIR006, TIR201")
    text = text.replace("(16, 16), (1, 0))", "(16, 16), (1, 0))  # noqa")
    Path(kernels).write_text(text, encoding="utf-8")
    assert [line.split(",title=")[1].split("::")[0]
            for line in _classify(kernels, "--output-format", "github")[1].splitlines()] == ["TIR101"]
    sarif = json.loads(_classify(kernels, "--output-format", "sarif")[1])
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["TIR101"]
    Path(kernels).write_text(text.replace("# noqa: TIR006, TIR201", "# noqa: E501"), encoding="utf-8")
    assert "TIR006" in _classify(kernels, "-q")[1]


def test_strict_exit_code_is_the_same_in_every_format(kernels: str) -> None:
    for fmt in ("text", "json", "sarif", "github"):
        assert _classify(kernels, "--output-format", fmt, "--strict")[0] == 1, fmt


def test_bad_format_choices_are_one_line_errors(kernels: str) -> None:
    result = runner.invoke(app, ["classify", kernels, "--output-format", "xml"])
    assert result.exit_code == 2
    assert result.output.strip() == ("error: unknown output format 'xml'; known: text, json, sarif, github "
                                     "(fix: --output-format text|json|sarif|github)")
    result = runner.invoke(app, ["classify", kernels, "--output-format", "sarif", "--json"])
    assert result.exit_code == 2 and "--json asks for json, --output-format for sarif" in result.output
    with pytest.raises(UserError):
        output_format_of("yaml")
    assert output_format_of(None, True) == "json" and output_format_of(None) == "text"
    assert output_format_of("SARIF") == "sarif"


def test_artifact_uris(tmp_path: Path) -> None:
    assert artifact_uri("kernels/a b.py") == "kernels/a%20b.py"
    assert artifact_uri(str(tmp_path / "x" / "k.py"), base=str(tmp_path)) == "x/k.py"
    assert artifact_uri("/elsewhere/k.py", base=str(tmp_path)) == "file:///elsewhere/k.py"


def test_sarif_validates_against_the_sarif_2_1_0_schema(kernels: str) -> None:
    """Run with TILEIROPT_SARIF_SCHEMA=<sarif-schema-2.1.0.json> (oasis-tcs/sarif-spec, sarif-2.1/schema/) and
    jsonschema installed; skipped otherwise (neither is a dependency of the project)."""
    import os

    jsonschema = pytest.importorskip("jsonschema")
    schema_file = os.environ.get("TILEIROPT_SARIF_SCHEMA")
    if not schema_file:
        pytest.skip("TILEIROPT_SARIF_SCHEMA names no schema file")
    schema = json.loads(Path(schema_file).read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)
    log = json.loads(_classify(kernels, "--output-format", "sarif")[1])
    errors = list(validator(schema, format_checker=validator.FORMAT_CHECKER).iter_errors(log))
    assert [e.message for e in errors] == []


def test_bad_flags_give_a_json_document_with_output_format_json() -> None:
    from tileiropt.cli import _wants_json

    assert _wants_json(["classify", "k.py", "--output-format", "json", "--bogus"])
    assert _wants_json(["classify", "k.py", "--output-format=json"]) and _wants_json(["classify", "--json"])
    assert not _wants_json(["classify", "k.py", "--output-format", "sarif"])
    assert not _wants_json(["run", "k.py", "--", "tool", "--output-format", "json"])


def test_one_rule_on_many_lines_of_a_kernel_with_one_fix_reads_as_one_finding() -> None:
    from tileiropt.classify.lint_output import Located, grouped, lines_text
    from tileiropt.classify.rules.base import Finding

    def at(kernel: str, line: int, code: str = "TIR101", hint: str = "fix it") -> Located:
        return Located("k.py", kernel, 5, Finding(code, "warning", line, f"on line {line}", hint))

    items = [at("a", 12), at("a", 30), at("b", 14), at("a", 44), at("a", 50, hint="another fix"),
             at("a", 60, code="TIR102")]
    assert [(first.kernel, first.line, lines) for first, lines, _ in grouped(items)] == [
        ("a", 12, [12, 30, 44]), ("b", 14, [14]), ("a", 50, [50]), ("a", 60, [60])]
    assert lines_text([12]) == "L12"
    assert lines_text([30, 12, 44]) == "L12, L30 and L44"
    assert lines_text(list(range(1, 14))) == "L1, L2, L3, L4, L5, L6, L7, L8, L9, L10 and 3 more lines"


def test_a_finding_in_a_helper_several_kernels_call_is_said_once_naming_them() -> None:
    from tileiropt.classify.lint_output import Located, grouped
    from tileiropt.classify.rules.base import Finding

    def at(kernel: str, line: int) -> Located:
        return Located("ops.py", kernel, 5, Finding(code="TIR004", severity="error", line=line,
                                                       message="libdevice __nv_fast_cosf", hint="use tl.cos"))

    groups = grouped([at("k1", 68), at("k1", 68), at("k2", 68), at("k3", 68), at("k3", 90)])
    assert [(item.kernel, lines, kernels) for item, lines, kernels in groups] == [
        ("k1", [68], ["k1", "k2"]),  # the same line twice in one kernel is one line, not "also L68"
        ("k3", [68, 90], ["k3"])]
