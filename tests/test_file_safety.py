"""Never lose a user's file: every way a write could replace one is refused (or backed up) in one line."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.cli import app
from tileiropt.errors import UserError
from tileiropt.harness.gate import GATE_MARKER
from tileiropt.output import save_record_file, write_atomic

from shared import Settling

runner = CliRunner()

KERNEL = textwrap.dedent("""
    import triton
    import triton.language as tl

    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=mask)), mask=mask)

    def scale(x, y):
        scale_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
    """)
MINE = "# my own notes, written by hand\n"


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    return path


def _one_line_refusal(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output, result.output


def test_hand_written_tileir_file_is_not_replaced(kernel: Path) -> None:
    mine = kernel.with_name("k_tileir.py")
    mine.write_text(MINE)
    _one_line_refusal(runner.invoke(app, ["apply", str(kernel)]), "not a file tileiropt wrote")
    _one_line_refusal(runner.invoke(app, ["apply", str(kernel.parent)]), "not a file tileiropt wrote")
    assert mine.read_text() == MINE
    mine.unlink()
    assert runner.invoke(app, ["apply", str(kernel)]).exit_code == 0
    assert runner.invoke(app, ["apply", str(kernel)]).exit_code == 0  # its own output is replaced


def test_output_over_a_users_file_is_refused(kernel: Path) -> None:
    notes = kernel.with_name("notes.py")
    notes.write_text(MINE)
    _one_line_refusal(runner.invoke(app, ["apply", str(kernel), "-o", str(notes)]), "notes.py")
    assert notes.read_text() == MINE


def test_links_and_devices_are_never_replaced(kernel: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.py"
    target.write_text(MINE)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    _one_line_refusal(runner.invoke(app, ["apply", str(kernel), "-o", str(link)]), "symbolic link")
    assert link.is_symlink() and target.read_text() == MINE
    _one_line_refusal(runner.invoke(app, ["apply", str(kernel), "-o", os.devnull]), "not a regular file")
    assert Path(os.devnull).is_char_device()
    linked_kernel = tmp_path / "linked.py"
    linked_kernel.symlink_to(kernel)
    _one_line_refusal(runner.invoke(app, ["apply", str(linked_kernel), "--in-place"]), "symbolic link")
    assert kernel.read_text() == KERNEL


def test_in_place_never_loses_an_unrelated_orig(kernel: Path) -> None:
    unrelated = kernel.with_name("k.py.orig")
    unrelated.write_text(MINE)
    result = runner.invoke(app, ["apply", str(kernel), "--in-place"])
    assert result.exit_code == 0, result.output
    assert unrelated.read_text() == MINE  # someone else's backup, untouched
    assert kernel.with_name("k.py.orig.1").read_text() == KERNEL  # the original, kept under a free name
    assert GATE_MARKER in kernel.read_text()
    # apply never runs the file, so it says the rewrite is not validated, and how to undo it
    assert "not validated" in result.stderr and f"undo: mv {kernel}.orig.1 {kernel}" in result.stderr


def test_reports_and_records_replace_only_their_own(tmp_path: Path) -> None:
    from tileiropt.report.markdown import REPORT_MARKER, is_report

    mine = tmp_path / "report.md"
    mine.write_text("# My report\n")
    with pytest.raises(UserError, match="not a report tileiropt wrote"):
        write_atomic(mine, "x", replaces=is_report, what="report")
    assert mine.read_text() == "# My report\n"
    mine.write_text(f"# TileIR optimization report\n\n{REPORT_MARKER}\n")
    write_atomic(mine, "new", replaces=is_report, what="report")  # a report it wrote: replaced

    users_json = tmp_path / "run.json"
    users_json.write_text(json.dumps({"my": "settings"}))
    with pytest.raises(UserError, match="not a record tileiropt wrote"):
        save_record_file({"phases": []}, tmp_path, "run.json")
    assert json.loads(users_json.read_text()) == {"my": "settings"}


def test_report_output_never_destroys_the_records(tmp_path: Path) -> None:
    artifacts = tmp_path / ".tileiropt"
    artifacts.mkdir()
    one = {"kernel": "k", "variant": "original", "backend": "interpret", "config": "(launch)", "status": "pass",
           "reason": "", "path": "k.py", "shapes": {"x": [8]}, "dtypes": {"x": "float32"}}
    record = {"schema_version": 1, "records": [one], "backends": ["interpret"]}
    (artifacts / "validate.json").write_text(json.dumps(record))
    before = (artifacts / "validate.json").read_text()
    rendered = runner.invoke(app, ["report", str(artifacts), "-o", str(tmp_path / "report.md")])
    assert rendered.exit_code == 0 and "## TileIR Optimization: k" in (tmp_path / "report.md").read_text()
    result = runner.invoke(app, ["report", str(artifacts), "-o", str(artifacts / "validate.json")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "validate.json: exists and is not a report tileiropt wrote" in " ".join(result.output.split())
    assert (artifacts / "validate.json").read_text() == before


# ----------------------------------------------------------------------------- the safe-modification rule


def _pipeline(tmp_path: Path, in_place: bool = False) -> Settling:
    from tileiropt.project.spec import parse_project

    (tmp_path / "k.py").write_text(KERNEL)
    data = {"kernel": [{"name": "scale", "path": "k.py", "entry": "scale", "reference": "original",
                        "inputs": {"x": ["N"], "y": ["N"]}, "dims": {"N": 64}}]}
    project = parse_project(data, tmp_path / "tileiropt.toml", tmp_path)
    assert runner.invoke(app, ["apply", str(tmp_path / "k.py")]).exit_code == 0
    return Settling(project.select(None), in_place=in_place)


def _record(status: str, variant: str = "optimized"):
    from tileiropt.validate.records import ValidationRecord

    return ValidationRecord(kernel="scale", variant=variant, backend="interpret", config="LAUNCH", status=status,
                            reason="3 of 64 elements differ" if status == "fail" else "")


def test_a_failing_optimized_file_is_set_aside(tmp_path: Path) -> None:
    from tileiropt.validate.records import ValidateRun

    pipeline = _pipeline(tmp_path)
    pipeline.validation = ValidateRun(records=[_record("pass", "original"), _record("fail")], backends=["interpret"])
    pipeline.settle()
    assert not (tmp_path / "k_tileir.py").exists()
    assert (tmp_path / "k_tileir.rejected.py").is_file()
    (entry,) = pipeline.result.rejected.values()
    assert "validation fail on interpret" in entry["reason"] and "3 of 64 elements differ" in entry["reason"]
    assert (tmp_path / "k.py").read_text() == KERNEL


def test_a_slower_optimized_file_is_set_aside(tmp_path: Path) -> None:
    from tileiropt.bench.records import BenchRow, BenchRun, PairedTiming
    from tileiropt.harness.provenance import Provenance
    from tileiropt.validate.records import ValidateRun

    pipeline = _pipeline(tmp_path, in_place=True)
    pipeline.validation = ValidateRun(records=[_record("pass")], backends=["ptx"])
    slow = PairedTiming(rounds=10, a_ms=[1.0] * 10, b_ms=[1.1] * 10, ratio=1.1, ci_low=1.09, ci_high=1.11,
                        threshold=0.05, verdict="slower")
    ran = {"scale_kernel": {"config": "BLOCK=64, num_warps=4", "code": "original"}}
    other = {"scale_kernel": {"config": "BLOCK=64, num_warps=4", "code": "optimized"}}
    original = BenchRow(kernel="scale", variant="original", backend="ptx", size=64, status="pass",
                        provenance=Provenance(launched=ran))
    # no evidence that it ran other code (which code ran is not known): kept, but never written in place
    pipeline.bench_run = BenchRun(rows=[original, BenchRow(kernel="scale", variant="optimized", backend="ptx",
                                                           size=64, status="pass", paired=slow)])
    pipeline.settle()
    assert pipeline.result.rejected == {} and pipeline.result.in_place == {}
    assert (tmp_path / "k.py").read_text() == KERNEL
    assert "cp " in pipeline.result.in_place_refused[str(tmp_path / "k.py")]
    # other compiled code at the same config, and slower: set aside
    pipeline.bench_run = BenchRun(rows=[original, BenchRow(kernel="scale", variant="optimized", backend="ptx",
                                                           size=64, status="pass", paired=slow,
                                                           provenance=Provenance(launched=other))])
    pipeline.settle()
    (entry,) = pipeline.result.rejected.values()
    assert "1.100x the original's time on PTX" in entry["reason"] and "the compiled code differs" in entry["reason"]
    assert (tmp_path / "k.py").read_text() == KERNEL  # --in-place: a regression never reaches the user's file
    assert pipeline.result.in_place == {}


def _paired_bench(low: float, high: float):
    """A bench run whose one paired PTX timing of `scale` has the 95% interval [low, high]."""
    from tileiropt.bench.records import BenchRow, BenchRun, PairedTiming

    paired = PairedTiming(rounds=10, a_ms=[1.0] * 10, b_ms=[1.0] * 10, ratio=(low + high) / 2, ci_low=low,
                          ci_high=high, threshold=0.05, verdict="same")
    return BenchRun(rows=[BenchRow(kernel="scale", variant="optimized", backend="ptx", size=64, status="pass",
                                   paired=paired)])


def test_in_place_writes_only_a_validated_not_slower_file(tmp_path: Path) -> None:
    from tileiropt.validate.records import ValidateRun

    pipeline = _pipeline(tmp_path, in_place=True)
    optimized = (tmp_path / "k_tileir.py").read_text()
    pipeline.validation = ValidateRun(records=[_record("pass")], backends=["interpret"])
    settled = pipeline.settle()  # validated, but "not slower" was never measured (no bench): refused, untouched
    assert (tmp_path / "k.py").read_text() == KERNEL and not (tmp_path / "k.py.orig").exists()
    assert pipeline.result.in_place == {} and "cp " in pipeline.result.in_place_refused[str(tmp_path / "k.py")]
    assert settled.not_run_here and not settled.fails_run  # exit 3: the proof needs a GPU
    pipeline.result.in_place_refused.clear()
    pipeline.bench_run = _paired_bench(0.97, 1.03)
    pipeline.settle()
    assert (tmp_path / "k.py").read_text() == optimized
    assert (tmp_path / "k.py.orig").read_text() == KERNEL
    assert pipeline.result.in_place == {str(tmp_path / "k.py"): str(tmp_path / "k.py.orig")}
    pipeline.result.in_place.clear()  # a second run over our own output keeps the one backup of the original
    pipeline.settle()
    assert (tmp_path / "k.py.orig").read_text() == KERNEL and not (tmp_path / "k.py.orig.1").exists()
    assert pipeline.result.in_place == {str(tmp_path / "k.py"): str(tmp_path / "k.py.orig")}


UNTUNED = textwrap.dedent("""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)

    def copy(x, **options):
        y = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128, **options)
        return y
    """)


def test_an_unchanged_copy_the_tool_wrote_is_written_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # apply leaves this kernel alone (its launch passes options of its own): its optimized file is an exact copy,
    # with no marker; a second apply, and a --fresh run over the first run's artifacts, write it again
    (tmp_path / "k.py").write_text(UNTUNED)
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        done = runner.invoke(app, ["apply", "k.py", "-o", "out.py"])
        assert done.exit_code == 0, done.output
    (tmp_path / "use.py").write_text("import torch\nimport k\nassert torch.equal(k.copy(torch.arange(300.0)), "
                                     "torch.arange(300.0))\n")
    for extra in ([], ["--fresh"]):
        done = runner.invoke(app, ["run", "k.py", "--json", *extra, "--", "python", "use.py"])
        phases = {p["phase"]: p["status"] for p in json.loads(done.stdout)["phases"]}
        assert phases["apply"] == "pass" and done.exit_code == 0, done.output
    (tmp_path / "k.py").write_text(UNTUNED.replace("BLOCK=128", "BLOCK=256"))  # an edit: the old copy is ours still
    done = runner.invoke(app, ["run", "k.py", "--json", "--", "python", "use.py"])
    assert {p["phase"]: p["status"] for p in json.loads(done.stdout)["phases"]}["apply"] == "pass", done.output


def test_apply_never_writes_into_an_installed_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of an installed package (under site-packages or dist-packages) gets its optimized file under the
    current folder's `.tileiropt/optimized/`, in the package's layout, as `run` puts it; the package is untouched."""
    package = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "pkg" / "ops"
    package.mkdir(parents=True)
    (package / "k.py").write_text(KERNEL)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    before = sorted(p.name for p in package.iterdir())
    result = runner.invoke(app, ["apply", str(package / "k.py")], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    written = work / ".tileiropt" / "optimized" / "pkg" / "ops" / "k_tileir.py"
    assert written.is_file() and GATE_MARKER in written.read_text()
    assert sorted(p.name for p in package.iterdir()) == before
    assert f"wrote {written}\n" in result.output  # the whole path on one line, to paste
    dry = runner.invoke(app, ["apply", "--dry-run", str(package.parent)])
    assert f"would write {written}" in dry.output and str(package / "k_tileir.py") not in dry.output


def test_the_installed_liger_kernel_is_never_written_into(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    liger = pytest.importorskip("liger_kernel")
    ops = Path(liger.__file__).parent / "ops"
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["apply", "--dry-run", str(ops / "rms_norm.py"), str(ops / "geglu.py")])
    assert result.exit_code == 0, result.output
    assert f"would write {tmp_path / '.tileiropt' / 'optimized' / 'liger_kernel' / 'ops' / 'geglu_tileir.py'}" \
        in result.output
    assert str(ops / "geglu_tileir.py") not in result.output


def test_apply_never_writes_into_an_installed_package_of_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package whose files are links into a store (uv's symlink mode, Nix): the link's own path is in
    site-packages, so the optimized file still goes under `.tileiropt/optimized/`."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "k.py").write_text(KERNEL)
    package = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "pkg"
    package.mkdir(parents=True)
    (package / "k.py").symlink_to(store / "k.py")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["apply", str(package / "k.py")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / ".tileiropt" / "optimized" / "pkg" / "k_tileir.py").is_file()
    assert sorted(p.name for p in package.iterdir()) == ["k.py"] and sorted(p.name for p in store.iterdir()) == ["k.py"]
