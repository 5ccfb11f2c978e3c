"""Classification per class (examples and small inline kernels), detections, and the CLI."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.classify.classify import classify_file, classify_paths, classify_source
from tileiropt.cli import app
from tileiropt.releases import get_release
from tileiropt.schema import SCHEMA_VERSION

from shared import EXAMPLES, package

HEADER = "import triton\nimport triton.language as tl\n\n"


def _one(source: str):
    result = classify_source(HEADER + textwrap.dedent(source), "k.py")
    assert result.status == "pass", result.message
    return {k.kernel: k for k in result.kernels}


EXPECTED_EXAMPLES = {
    "vector_add.py": "elementwise",
    "swiglu.py": "elementwise",
    "softmax.py": "norm",
    "layer_norm.py": "norm",
    "rms_norm.py": "norm",
    "row_sum.py": "reduction",
    "matmul.py": "dot",
    "attention.py": "dot",
}


@pytest.mark.parametrize("name, expected", sorted(EXPECTED_EXAMPLES.items()))
def test_examples(name: str, expected: str) -> None:
    path = EXAMPLES / name
    if not path.is_file():
        pytest.skip(f"examples/{name} is not in this checkout")
    result = classify_file(path)
    entries = [k for k in result.kernels if k.is_entry]
    assert entries, result.message
    assert {k.kernel_class for k in entries} == {expected}
    for kernel in entries:
        assert 0 < kernel.confidence <= 1
        assert kernel.evidence and all(e.line > 0 and e.text for e in kernel.evidence)


def test_dot_kernel_and_strategy() -> None:
    kernel = _one(
        """
        @triton.jit
        def mm(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
            for k in range(0, K, BLOCK):
                a = tl.load(a_ptr + offs[:, None] * K + (k + offs)[None, :])
                b = tl.load(b_ptr + (k + offs)[:, None] * BLOCK + offs[None, :])
                acc += tl.dot(a, b)
            tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc)
        """
    )["mm"]
    assert kernel.kernel_class == "dot"
    assert kernel.strategy == "TMA + 2CTA + occupancy + larger tiles"
    assert kernel.confidence == 0.95
    assert kernel.tensor_of_pointer_lines == [10, 11, 13]
    assert any("tl.dot" in e.text and e.line == 12 for e in kernel.evidence)
    assert [f.code for f in kernel.findings] == ["TIR201", "TIR201", "TIR201"]


def test_dot_through_helper_is_transitive() -> None:
    kernels = _one(
        """
        @triton.jit
        def _inner(a, b):
            return tl.dot(a, b)

        @triton.jit
        def _middle(a, b):
            return _inner(a, b) * 2

        @triton.jit
        def entry(a_ptr, b_ptr, c_ptr):
            tl.store(c_ptr, _middle(tl.load(a_ptr), tl.load(b_ptr)))
        """
    )
    assert kernels["entry"].kernel_class == "dot"
    assert kernels["entry"].confidence == 0.85
    assert any("in helper _inner" in e.text for e in kernels["entry"].evidence)
    assert not kernels["_inner"].is_entry and kernels["entry"].is_entry


def test_norm_rms_style() -> None:
    kernel = _one(
        """
        @triton.jit
        def rms(x_ptr, w_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0).to(tl.float32)
            rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n + eps)
            w = tl.load(w_ptr + offs, mask=offs < n)
            tl.store(y_ptr + row * n + offs, x * rstd * w, mask=offs < n)
        """
    )["rms"]
    assert kernel.kernel_class == "norm"
    assert kernel.strategy == "high occupancy"
    assert any(e.line == 12 and "scales loaded elements" in e.text for e in kernel.evidence)


def test_norm_online_softmax_with_method_reductions() -> None:
    kernel = _one(
        """
        @triton.jit
        def lse(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            m = float("-inf")
            d = 0.0
            for start in range(0, n, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs, mask=offs < n, other=float("-inf"))
                m_new = tl.maximum(m, x.max(axis=0))
                d = d * tl.exp(m - m_new) + tl.exp(x - m_new).sum(axis=0)
                m = m_new
            for start in range(0, n, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs, mask=offs < n)
                tl.store(out_ptr + offs, tl.exp(x - m) / d, mask=offs < n)
        """
    )["lse"]
    assert kernel.kernel_class == "norm"


def test_reduction_sum_and_atomics() -> None:
    kernels = _one(
        """
        @triton.jit
        def total(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
            tl.atomic_add(out_ptr, tl.sum(x, axis=0) / n)

        @triton.jit
        def histogram(idx_ptr, counts_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            idx = tl.load(idx_ptr + offs, mask=offs < n)
            tl.atomic_add(counts_ptr + idx, 1, mask=offs < n)

        @triton.jit
        def prefix(x_ptr, y_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0))
        """
    )
    assert kernels["total"].kernel_class == "reduction"
    assert kernels["total"].confidence == 0.85
    assert kernels["histogram"].kernel_class == "reduction"
    assert kernels["histogram"].confidence == 0.65
    assert kernels["prefix"].kernel_class == "reduction"
    assert kernels["total"].strategy == "high occupancy"


def test_reduction_by_a_zeroed_accumulator_over_a_loop() -> None:
    """Summing loaded tiles into a `tl.zeros` block across a loop reduces over the loop's axis even
    without tl.sum; a block that starts from data and only mixes inputs, or a loop that rescales
    nothing into an accumulator, stays elementwise."""
    kernels = _one(
        """
        @triton.jit
        def mix_sum(x_ptr, w_ptr, out_ptr, C, S: tl.constexpr, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros((BLOCK,), tl.float32)
            for s in tl.static_range(0, S):
                w = tl.load(w_ptr + row * S + s)
                acc += tl.load(x_ptr + (row * S + s) * C + offs, mask=offs < C) * w
            tl.store(out_ptr + row * C + offs, acc, mask=offs < C)

        @triton.jit
        def mix_map(x_ptr, f_ptr, out_ptr, C, S: tl.constexpr, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            acc = tl.load(f_ptr + row * C + offs, mask=offs < C)
            for s in tl.static_range(0, S):
                acc += tl.load(x_ptr + (row * S + s) * C + offs, mask=offs < C)
            tl.store(out_ptr + row * C + offs, acc, mask=offs < C)

        @triton.jit
        def scale_rows(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            for start in range(0, n_cols, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols)
                tl.store(y_ptr + row * n_cols + offs, x * 2.0, mask=offs < n_cols)
        """
    )
    assert kernels["mix_sum"].kernel_class == "reduction"
    assert any("sums loaded data across the loop" in e.text for e in kernels["mix_sum"].evidence)
    assert kernels["mix_map"].kernel_class == "elementwise"
    assert kernels["scale_rows"].kernel_class == "elementwise"


def test_reduction_by_a_running_maximum_over_a_loop() -> None:
    """A loop that keeps a running maximum (or sum) of loaded values in an assignment reduces as `+=` does; a
    clamp of loaded data, or a loop that only advances an offset, stays elementwise."""
    kernels = _one(
        """
        @triton.jit
        def reduce_partials(partial_ptr, scale_ptr, n_chunks):
            row = tl.program_id(0)
            x_max = 0.0
            for c in range(n_chunks):
                x_max = tl.maximum(x_max, tl.load(partial_ptr + row * n_chunks + c))
            tl.store(scale_ptr + row, 448.0 / x_max)

        @triton.jit
        def sum_blocks(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            total = tl.zeros((BLOCK,), tl.float32)
            for start in range(0, n, BLOCK):
                offs = start + tl.arange(0, BLOCK)
                total = total + tl.load(x_ptr + offs, mask=offs < n)
            tl.store(out_ptr + tl.arange(0, BLOCK), total)

        @triton.jit
        def clamp_rows(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            for start in range(0, n_cols, BLOCK):
                x = tl.load(x_ptr + row * n_cols + start + offs, mask=start + offs < n_cols)
                x = tl.maximum(x, 0.0)
                tl.store(y_ptr + row * n_cols + start + offs, x, mask=start + offs < n_cols)
                offs = offs + 0
        """
    )
    assert kernels["reduce_partials"].kernel_class == "reduction"
    assert "keeps a running maximum of loaded data across the loop" in kernels["reduce_partials"].evidence[0].text
    assert kernels["sum_blocks"].kernel_class == "reduction"
    assert kernels["clamp_rows"].kernel_class == "elementwise"


def test_a_sum_that_only_places_data_leaves_a_data_movement_kernel_elementwise() -> None:
    """A prefix sum of group offsets that decides where a block goes (torchao's scale swizzles) reduces no data:
    every store writes loaded data as is, where the sum says. A sum that is stored, values a helper stores, a
    reduction that picks what is loaded (argmax routing) or which elements are stored keep the reduction."""
    kernels = _one(
        """
        @triton.jit
        def _group_start(offsets_ptr, group, N_GROUPS: tl.constexpr):
            sizes = tl.load(offsets_ptr + tl.arange(0, N_GROUPS))
            return tl.sum(tl.where(tl.arange(0, N_GROUPS) < group, sizes, 0))

        @triton.jit
        def place_groups(x_ptr, offsets_ptr, out_ptr, N_GROUPS: tl.constexpr, BLOCK: tl.constexpr):
            group = tl.program_id(0)
            start = _group_start(offsets_ptr, group, N_GROUPS)
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + start + offs, tl.load(x_ptr + group * BLOCK + offs))

        @triton.jit
        def store_group_starts(offsets_ptr, out_ptr, N_GROUPS: tl.constexpr):
            group = tl.program_id(0)
            tl.store(out_ptr + group, _group_start(offsets_ptr, group, N_GROUPS))

        @triton.jit
        def _write(ptr, value):
            tl.store(ptr, value)

        @triton.jit
        def row_sums_through_a_helper(x_ptr, out_ptr, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            _write(out_ptr + row, tl.sum(tl.load(x_ptr + row * BLOCK + tl.arange(0, BLOCK))))

        @triton.jit
        def route(logits_ptr, table_ptr, out_ptr, E: tl.constexpr, D: tl.constexpr):
            best = tl.argmax(tl.load(logits_ptr + tl.arange(0, E)), 0)
            tl.store(out_ptr + tl.arange(0, D), tl.load(table_ptr + best * D + tl.arange(0, D)))

        @triton.jit
        def keep_row_maxima(x_ptr, out_ptr, BLOCK: tl.constexpr):
            x = tl.load(x_ptr + tl.arange(0, BLOCK))
            tl.store(out_ptr + tl.arange(0, BLOCK), x, mask=x == tl.max(x, 0))
        """
    )
    assert kernels["place_groups"].kernel_class == "elementwise"
    assert "its result only places data" in kernels["place_groups"].evidence[0].text
    assert kernels["store_group_starts"].kernel_class == "reduction"
    assert kernels["row_sums_through_a_helper"].kernel_class == "reduction"
    assert kernels["route"].kernel_class == "reduction"  # the reduction picks what is loaded
    assert kernels["keep_row_maxima"].kernel_class == "reduction"  # ... or which elements are stored


def test_elementwise_and_math_helper() -> None:
    kernels = _one(
        """
        @triton.jit
        def _gelu(x):
            return 0.5 * x * (1 + tl.sigmoid(1.702 * x))

        @triton.jit
        def act(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, _gelu(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
        """
    )
    assert kernels["act"].kernel_class == "elementwise"
    assert kernels["act"].strategy == "occupancy + num_stages"
    assert kernels["act"].calls == ["_gelu"]
    assert kernels["_gelu"].kernel_class == "elementwise" and kernels["_gelu"].confidence == 0.6


def test_persistent_tma_and_block_pointer_detection() -> None:
    kernels = _one(
        """
        @triton.jit
        def persistent(a_ptr, M, N, NUM_SMS: tl.constexpr, BLOCK: tl.constexpr):
            desc = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [BLOCK, BLOCK])
            for tile in tl.range(tl.program_id(0), tl.cdiv(M, BLOCK), NUM_SMS):
                desc.store([tile * BLOCK, 0], desc.load([tile * BLOCK, 0]) * 2)

        @triton.jit
        def grid_stride(x_ptr, n):
            for i in range(tl.program_id(0), n, tl.num_programs(0)):
                tl.store(x_ptr + i, 0.0)

        @triton.jit
        def blocks(x_ptr, M, N):
            p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
            tl.store(p, tl.load(p) + 1)
        """
    )
    assert kernels["persistent"].persistent and kernels["persistent"].uses_tma
    assert not kernels["persistent"].uses_block_ptr
    assert kernels["grid_stride"].persistent and not kernels["grid_stride"].uses_tma
    assert kernels["blocks"].uses_block_ptr and not kernels["blocks"].persistent
    # 13.4 and 13.5 (the newest) lower block pointers through plain pointers: a performance finding, not an error
    assert [(f.code, f.severity) for f in kernels["blocks"].findings if f.code == "TIR013"] == [("TIR013", "perf")]
    old = classify_source(HEADER + "@triton.jit\ndef blocks(x_ptr, M, N):\n"
                          "    p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))\n"
                          "    tl.store(p, tl.load(p) + 1)\n", "k.py", release=get_release("13.1"))
    assert "TIR013" in [f.code for f in old.kernels[0].findings]


def test_host_tensor_descriptor_counts_as_tma() -> None:
    kernels = _one(
        """
        from triton.tools.tensor_descriptor import TensorDescriptor

        @triton.jit
        def copy(src_desc, dst_desc):
            dst_desc.store([0, 0], src_desc.load([0, 0]))

        def run(x, y):
            copy[(1,)](TensorDescriptor.from_tensor(x, [16, 16]), TensorDescriptor.from_tensor(y, [16, 16]))
        """
    )
    assert kernels["copy"].uses_tma


def test_file_messages(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("print('hello')\n")
    (tmp_path / "helpers.py").write_text("import triton\n\ndef jit_helper():\n    pass\n")
    (tmp_path / "broken.py").write_text("import triton\n@triton.jit\ndef k(:\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ok.py").write_text(HEADER + "@triton.jit\ndef k(x):\n    tl.store(x, 1.0)\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "skip.py").write_text(HEADER + "@triton.jit\ndef k(x):\n    pass\n")
    results = {Path(r.file).name: r for r in classify_paths([tmp_path])}
    assert set(results) == {"plain.py", "helpers.py", "broken.py", "ok.py"}
    assert results["plain.py"].status == "not-run"
    assert results["helpers.py"].status == "not-run"
    assert results["helpers.py"].message == "no @triton.jit function"
    assert results["broken.py"].status == "error"
    assert "broken.py:3: cannot parse" in results["broken.py"].message
    assert results["ok.py"].status == "pass" and len(results["ok.py"].kernels) == 1


# ------------------------------------------------------------------------------------ CLI

runner = CliRunner()
KERNEL = HEADER + textwrap.dedent(
    """\
    @triton.jit
    def k(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, tl.erf(x), mask=offs < n)
    """
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_cli_json_schema(tmp_path: Path) -> None:
    path = _write(tmp_path, "k.py", KERNEL)
    _write(tmp_path, "broken.py", "import triton\n@triton.jit\ndef (:\n")
    result = runner.invoke(app, ["classify", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schema_version"] == SCHEMA_VERSION
    (record,) = data["kernels"]
    assert list(record) == ["file", "kernel", "line", "class", "confidence", "evidence", "strategy", "is_entry",
                            "persistent", "uses_tma", "uses_block_ptr", "findings", "tensor_of_pointer_lines",
                            "calls", "pointer_params", "size_params", "in_place_params", "atomic_lines", "ir"]
    assert record["ir"]["status"] == "pass" and record["ir"]["specializations"] == ["fp32"]
    assert record["file"] == str(path) and record["kernel"] == "k" and record["class"] == "elementwise"
    assert {f["code"] for f in record["findings"]} == {"TIR006", "TIR101"}
    assert set(record["findings"][0]) == {"code", "severity", "line", "message", "hint", "via"}
    assert {f["code"]: f["via"] for f in record["findings"]} == {"TIR006": "ir", "TIR101": "syntax"}
    from tileiropt.check.environment import detect_release
    from tileiropt.releases import newest

    detected = detect_release()[0]  # none on a machine without nvtriton or tileiras: the newest release known
    assert data["release"]["version"] == (detected or newest().version)
    assert set(record["evidence"][0]) == {"line", "text"}
    statuses = {Path(f["file"]).name: f["status"] for f in data["files"]}
    assert statuses == {"k.py": "pass", "broken.py": "error"}
    assert data["summary"]["kernels"] == 1 and data["summary"]["files_not_parsed"] == 1
    assert data["summary"]["findings"] == {"error": 1, "warning": 1, "perf": 0}


def test_a_lowering_that_fails_in_a_helper_says_the_helper_and_why(tmp_path: Path) -> None:
    """Triton prints only the kernel's calling line, the helper's error chained as its cause: the reason names both."""
    path = _write(tmp_path, "nested.py", "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                  "def helper(x):\n    return tl.no_such_function(x)\n\n\n@triton.jit\n"
                  "def kern(x_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
                  "    tl.store(x_ptr + offs, helper(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)\n")
    result = runner.invoke(app, ["classify", str(path), "--json"])
    kern = next(k for k in json.loads(result.stdout)["kernels"] if k["kernel"] == "kern")
    assert kern["ir"]["status"] == "not-run"
    assert "(in helper, at 2:11): AttributeError" in kern["ir"]["reason"] and "no_such_function" in kern["ir"]["reason"]


def test_cli_strict_select_ignore(tmp_path: Path) -> None:
    path = _write(tmp_path, "k.py", KERNEL)
    assert runner.invoke(app, ["classify", str(path)]).exit_code == 0
    assert runner.invoke(app, ["classify", str(path), "--strict"]).exit_code == 1
    assert runner.invoke(app, ["classify", str(path), "--strict", "--ignore", "TIR006"]).exit_code == 0
    result = runner.invoke(app, ["classify", str(path), "--json", "--select", "TIR1"])
    codes = [f["code"] for f in json.loads(result.stdout)["kernels"][0]["findings"]]
    assert codes == ["TIR101"]
    bad = runner.invoke(app, ["classify", str(path), "--select", "NOPE"])
    assert bad.exit_code == 2 and "no lint rule matches" in bad.output


def test_cli_human_output(tmp_path: Path) -> None:
    path = _write(tmp_path, "k.py", KERNEL)
    result = runner.invoke(app, ["classify", str(path)])
    assert result.exit_code == 0
    assert "elementwise" in result.output
    assert f"{path}:8:5: TIR006" in result.output.replace("\n", "")  # path:line:col


def test_cli_bad_paths(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["classify", str(tmp_path / "missing.py")])
    assert missing.exit_code == 2 and "no such file or folder" in missing.output
    broken = _write(tmp_path, "broken.py", "import triton\n@triton.jit\ndef k(:\n")
    result = runner.invoke(app, ["classify", str(broken)])
    assert result.exit_code == 2 and "cannot parse" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    assert runner.invoke(app, ["classify", str(empty)]).exit_code == 2
    plain = _write(tmp_path, "plain.py", "x = 1\n")
    result = runner.invoke(app, ["classify", str(plain)])
    assert result.exit_code == 0 and "no Triton kernel" in result.output
    for name, text in (("notes.txt", "this is not python (\n"), ("typo.py", "def f(:\n    pass\n")):
        named = _write(tmp_path, name, text)  # no `triton` in it: a folder's scan skips such files unread
        result = runner.invoke(app, ["classify", str(named)])
        assert result.exit_code == 2 and "cannot parse" in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output  # one line: no summary of nothing
    folder = tmp_path / "mixed"
    folder.mkdir()
    _write(folder, "typo.py", "def f(:\n    pass\n")
    _write(folder, "plain.py", "x = 1\n")
    assert runner.invoke(app, ["classify", str(folder)]).exit_code == 0  # in a folder: not read, not an error


@pytest.mark.parametrize("width", [80, 200])
def test_the_table_never_cuts_a_name_on_a_narrow_terminal(tmp_path: Path, width: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the table is wider than the terminal, a line per kernel under its file replaces it: no file or
    kernel name is folded into fragments."""
    from tileiropt.output import console

    folder = tmp_path / "backends" / "a_vendor_with_a_long_name" / "ops"
    folder.mkdir(parents=True)
    name = "fused_add_rms_norm_backward_kernel_without_tiling"
    (folder / "fused_add_rms_norm.py").write_text(HEADER + "@triton.jit\n" + f"def {name}(x_ptr, n):\n"
                                                  "    tl.store(x_ptr, tl.load(x_ptr) * 2)\n")
    (tmp_path / "other.py").write_text(HEADER + "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1.0)\n")
    monkeypatch.setattr(console, "width", width)
    output = CliRunner().invoke(app, ["classify", str(tmp_path)]).output
    assert name in output and "backends/a_vendor_with_a_long_name/ops/fused_add_rms_norm.py" in output
    if width == 80:
        assert "file / kernel" not in output
        assert f"  {name} L5: elementwise, entry" in output
    else:
        assert "file / kernel" in output  # wide enough: the table


def test_the_ir_summary_counts_the_entry_kernels_and_gives_a_reason_as_its_message() -> None:
    """The summary's counts add up to the entry kernels it names, and the most common reason is the exception's
    own message, without its class, location or specialization."""
    from types import SimpleNamespace

    from tileiropt.classify.command import ir_summary

    def kernel(status: str, reason: str | None = None, needed: bool = True) -> SimpleNamespace:
        return SimpleNamespace(ir={"status": status, "reason": reason, "needed": needed})

    failed = "fp32: CompilationError at 63:31 (in _helper, at 5:33): IncompatibleTypeErrorImpl('invalid operands')"
    results = [SimpleNamespace(kernels=[kernel("pass"), kernel("not-run", needed=False), kernel("not-run", failed),
                                        kernel("not-run", failed), SimpleNamespace(ir=None)])]
    text = ir_summary(results)  # type: ignore[arg-type]
    assert text.startswith("IR check of the 4 entry kernels")
    assert ("1 lowered to TTIR; 1 not lowered, as they use only operations every release supports; 2 tileiropt "
            "could not lower") in text
    assert text.endswith("most often: invalid operands")


def test_a_dot_in_a_helper_imported_from_another_module_makes_a_dot_kernel(tmp_path: Path) -> None:
    """`from .utils import safe_dot` (a package's shared helpers): the kernel's class follows what the helper does,
    as for a helper of its own file; a name imported from outside the package (torch, Triton) is not followed."""
    folder = package(tmp_path, utils='''\
        import triton
        import triton.language as tl


        @triton.jit
        def safe_dot(a, b):
            return tl.dot(a, b)
        ''', ops='''\
        import triton
        import triton.language as tl
        from math import floor
        from .utils import safe_dot


        @triton.jit
        def state_kernel(k_ptr, v_ptr, h_ptr, BK: tl.constexpr, BV: tl.constexpr):
            o_k = tl.arange(0, BK)
            o_v = tl.arange(0, BV)
            b_k = tl.load(k_ptr + o_k[:, None] * BK + o_k[None, :])
            b_v = tl.load(v_ptr + o_k[:, None] * BV + o_v[None, :])
            tl.store(h_ptr + o_k[:, None] * BV + o_v[None, :], safe_dot(b_k, b_v))
        ''')
    [result] = classify_paths([folder / "ops.py"])
    [kernel] = result.kernels
    assert kernel.kernel_class == "dot"
    assert any("in helper safe_dot" in e.text for e in kernel.evidence)


PICK = '''
import triton
import triton.language as tl


@triton.jit
def conv_kernel(x_ptr, w_ptr, y_ptr, T, W: tl.constexpr, BT: tl.constexpr, BW: tl.constexpr):
    o_t = tl.program_id(0) * BT + tl.arange(0, BT)
    o_w = tl.arange(0, BW)
    b_w = tl.load(w_ptr + o_w, mask=o_w < W, other=0.0)
    i_w = tl.program_id(1)  # one tap of the filter a program
    b_x = tl.load(x_ptr + o_t - i_w, mask=(o_t >= i_w) & (o_t < T), other=0.0)
    tl.store(y_ptr + o_t, b_x * {pick}, mask=o_t < T)
'''


@pytest.mark.parametrize(("pick", "expected"), [
    ("tl.sum(b_w * (o_w == i_w), 0)", "elementwise"),  # one weight picked (Triton has no indexing into a block)
    ("tl.sum(tl.where(o_w == i_w, b_w, 0.0), 0)", "elementwise"),
    ("tl.sum(b_w * b_w, 0)", "norm"),  # a statistic of the weights scales the data
    ("tl.sum(b_w * (o_w == i_w) + b_w, 0)", "norm"),  # a sum that is more than the picked element
])
def test_a_sum_that_picks_one_element_is_not_a_statistic(pick: str, expected: str) -> None:
    [kernel] = classify_source(PICK.replace("{pick}", pick), "conv.py").kernels
    assert kernel.kernel_class == expected


def test_an_error_in_a_helper_imported_from_another_module_is_the_kernels(tmp_path: Path) -> None:
    """What the TileIR compiler rejects in an imported helper (here through the helper's own helper, inline
    assembly) it rejects in the kernel: said at the call's line, and apply leaves the kernel alone."""
    from tileiropt.apply.apply import apply_file

    folder = package(tmp_path, softplus='''\
        import triton
        import triton.language as tl


        @triton.jit
        def softplus_nv(x):
            return tl.inline_asm_elementwise("ex2.approx.f32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                             is_pure=True, pack=1)


        @triton.jit
        def softplus(x):
            return softplus_nv(x)
        ''', gate='''\
        import triton
        import triton.language as tl
        from .softplus import softplus


        @triton.jit
        def gate_kernel(g_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            g = tl.load(g_ptr + offs, mask=offs < n)
            tl.store(out_ptr + offs, -softplus(g), mask=offs < n)


        def gate(g, out):
            gate_kernel[(1,)](g, out, g.numel(), BLOCK=1024)
            return out
        ''')
    [result] = classify_paths([folder / "gate.py"])
    [kernel] = result.kernels
    [error] = [f for f in kernel.findings if f.severity == "error"]
    assert error.code == "TIR001" and error.line == 10
    assert "(in softplus.py:7" in error.message  # the IR check's own where it lowers the kernel
    [syntax] = classify_paths([folder / "gate.py"], ir=False)[0].kernels[0].findings
    assert "(in softplus.py:7, in helper softplus, through softplus_nv)" in syntax.message  # where it cannot
    applied = apply_file(folder / "gate.py", dry_run=True)
    assert not applied.changed and "would reject" in " ".join(applied.kernels[0].skipped)
