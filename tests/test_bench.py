"""bench without a GPU: statistics, derived metrics, speedups, provenance and the fallback flag on
recorded fixture rows (made-up timings), the not-run record set, the worker plumbing with a
stand-in worker, the Triton version guards, the peaks cache and the command line."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.bench import peaks as peaks_module
from tileiropt.bench import run as bench_module
from tileiropt.bench.items import BenchItem
from tileiropt.bench.records import (
    CUDAGRAPH,
    DO_BENCH,
    BenchRow,
    BenchRun,
    Timing,
    compare_rows,
    derive_metrics,
    evaluate_expression,
    load_bench_run,
    mark_fallback,
    quantile,
    row_from_dict,
    save_bench_run,
    summarize,
    summarize_quantiles,
    within_noise,
)
from tileiropt.bench.run import (
    BenchJob,
    BenchJobs,
    BenchSettings,
    bench_project,
    finish_rows,
    obtain_peaks,
    plan_items,
)
from tileiropt.bench.worker import _call_bench, choose_method, input_set_count
from tileiropt.cache import CACHE_ENV
from tileiropt.check.machine import Machine
from tileiropt.cli import app
from tileiropt.engine import engine
from tileiropt.engine.engine import JobPool, RunWorkers, run_jobs
from tileiropt.engine.workers import LOCAL
from tileiropt.errors import ExitCode
from tileiropt.harness.backends import BACKENDS
from tileiropt.harness.provenance import Provenance
from tileiropt.project.spec import parse_project
from tileiropt.schema import ERROR, NOT_RUN, PASS

from shared import EXAMPLES, TEST_FIXTURES, cpu_machine, gpu_machine

FIXTURES = TEST_FIXTURES / "bench"
NO_GPU = cpu_machine(["nvtriton is not installed (triton.backends.tileir not found)", "no GPU"])
HOPPER = gpu_machine()


def recorded() -> dict:
    return json.loads((FIXTURES / "worker_rows.json").read_text())


def recorded_rows() -> list[BenchRow]:
    return [row_from_dict(r) for r in recorded()["rows"]]


def finished_rows() -> tuple[list[BenchRow], list[str]]:
    """The fixture rows after the parent's last step: metrics, fallback flags, speedups."""
    data = recorded()
    project = parse_project({"kernel": [
        {"name": "matmul", "path": "matmul.py", "entry": "matmul", "inputs": {"a": ["M", "K"], "b": ["K", "N"]},
         "dims": {"M": 64, "N": 64, "K": 64}, "flops": "2 * M * N * K"},
        {"name": "softmax", "path": "softmax.py", "entry": "softmax", "inputs": {"x": ["M", "N"]},
         "dims": {"M": 64, "N": 64}},
    ]}, None, EXAMPLES)
    rows = recorded_rows()
    notes = finish_rows(rows, project.kernels, data["peaks"])
    return rows, notes


def find(rows: list[BenchRow], kernel: str, variant: str, backend: str, size: int) -> BenchRow:
    return next(r for r in rows if (r.kernel, r.variant, r.backend, r.size) == (kernel, variant, backend, size))


# --------------------------------------------------------------------------- statistics


def test_summarize_matches_linear_interpolation_quantiles() -> None:
    samples = [0.50, 0.41, 0.47, 0.44, 0.62, 0.45, 0.43, 0.48, 0.46, 0.42]
    timing = summarize(samples, DO_BENCH, warmup_ms=25, rep_ms=100)
    assert timing.median_ms == pytest.approx(statistics.median(samples))
    ordered = sorted(samples)
    # numpy/torch "linear": position q * (n - 1) between the two neighbours
    assert timing.p20_ms == pytest.approx(ordered[1] + 0.8 * (ordered[2] - ordered[1]))
    assert timing.p80_ms == pytest.approx(ordered[7] + 0.2 * (ordered[8] - ordered[7]))
    assert (timing.min_ms, timing.max_ms, timing.samples) == (0.41, 0.62, 10)
    assert timing.mean_ms == pytest.approx(sum(samples) / 10)
    assert timing.spread == pytest.approx((timing.p80_ms - timing.p20_ms) / timing.median_ms)
    assert (timing.warmup_ms, timing.rep_ms, timing.method) == (25, 100, DO_BENCH)


def test_quantile_edges_and_single_sample() -> None:
    assert quantile([1.0, 2.0, 3.0], 0.0) == 1.0
    assert quantile([1.0, 2.0, 3.0], 1.0) == 3.0
    one = summarize([0.25], CUDAGRAPH)
    assert one.median_ms == one.p20_ms == one.p80_ms == one.min_ms == one.max_ms == 0.25
    with pytest.raises(ValueError):
        summarize([], DO_BENCH)


def test_summarize_quantiles_from_an_older_triton() -> None:
    timing = summarize_quantiles([0.9, 1.0, 1.1, 1.3, 2.0], DO_BENCH)
    assert (timing.min_ms, timing.p20_ms, timing.median_ms, timing.p80_ms, timing.max_ms) == (0.9, 1.0, 1.1, 1.3, 2.0)
    assert timing.samples is None


def test_within_noise_uses_the_larger_spread_and_a_floor() -> None:
    tight = Timing(DO_BENCH, median_ms=1.0, p20_ms=0.999, p80_ms=1.001)
    loose = Timing(DO_BENCH, median_ms=1.0, p20_ms=0.9, p80_ms=1.1)
    assert within_noise(1.02, tight, tight)  # under the 3% floor
    assert not within_noise(1.05, tight, tight)
    assert within_noise(1.15, tight, loose)  # the loose row's 20% spread
    assert not within_noise(1.25, tight, loose)


# --------------------------------------------------------------------------- derived metrics


def test_tflops_and_percent_of_matmul_peak() -> None:
    rows, _ = finished_rows()
    row = find(rows, "matmul", "original", "ptx", 1024)
    assert row.flops == 2 * 1024**3
    assert row.tflops == pytest.approx(2 * 1024**3 / 0.010e-3 / 1e12)  # 214.7 TFLOP/s
    assert row.peak_key == "float16" and row.peak_tflops == 600.0
    assert row.pct_peak_compute == pytest.approx(100 * row.tflops / 600.0)
    # bytes estimated from the tensors: a and b read, c written
    assert row.bytes == 4194304 + 2097152 and row.bytes_source == "estimate (inputs + outputs)"
    assert row.gbps == pytest.approx(row.bytes / 0.010e-3 / 1e9)
    assert row.pct_peak_bandwidth == pytest.approx(100 * row.gbps / 2684.35456)


def test_gbps_without_flops_expression() -> None:
    rows, _ = finished_rows()
    row = find(rows, "softmax", "original", "ptx", 1024)
    assert row.flops is None and row.tflops is None and row.pct_peak_compute is None
    assert row.gbps == pytest.approx(4194304 / 0.004e-3 / 1e9)
    assert row.pct_peak_bandwidth == pytest.approx(100 * row.gbps / 2684.35456)


def test_project_bytes_expression_over_dims_and_shapes() -> None:
    row = BenchRow("k", "original", "ptx", 1024, PASS, dims={"M": 1024, "N": 512}, shapes={"x": [1024, 512]},
                   dtypes={"x": "float32"}, timing=Timing(DO_BENCH, median_ms=0.5), input_bytes=1, output_bytes=1)
    problems = derive_metrics(row, None, "2 * x[0] * x[1] * 4", None)
    assert problems == []
    assert row.bytes == 2 * 1024 * 512 * 4 and row.bytes_source == "project"
    assert row.gbps == pytest.approx(row.bytes / 0.5e-3 / 1e9)
    assert row.pct_peak_bandwidth is None  # no peaks: no percentage, never a guess
    assert evaluate_expression("prod(x) * M", {"M": 2}, {"x": [3, 4]}) == 24.0


def test_a_broken_expression_is_reported_not_guessed() -> None:
    row = BenchRow("k", "original", "ptx", 8, PASS, dims={"M": 8}, timing=Timing(DO_BENCH, median_ms=1.0))
    problems = derive_metrics(row, "2 * M * Q", None, None)
    assert row.flops is None and row.tflops is None
    assert "cannot evaluate flops" in problems[0] and "Q" in problems[0]


def test_tf32_peak_for_float32_inputs() -> None:
    peaks = recorded()["peaks"]
    row = BenchRow("k", "original", "ptx", 8, PASS, dims={"M": 1024}, dtypes={"x": "float32"},
                   timing=Timing(DO_BENCH, median_ms=1.0))
    derive_metrics(row, "2 * M**3", None, peaks)
    assert row.peak_key == "tf32" and row.pct_peak_compute == pytest.approx(100 * row.tflops / 300.0)


# --------------------------------------------------------------------------- speedups, ratio, fallback


def test_speedups_and_the_ptx_ratio() -> None:
    rows, notes = finished_rows()
    assert find(rows, "matmul", "original", "ptx", 1024).speedup == pytest.approx(1.0)
    assert find(rows, "matmul", "optimized", "tileir", 1024).speedup == pytest.approx(0.010 / 0.008)
    assert find(rows, "matmul", "reference", "torch", 1024).speedup == pytest.approx(0.010 / 0.0095)
    small = find(rows, "matmul", "optimized", "ptx", 1024)
    assert small.ratio_to_original == pytest.approx(1.01) and small.within_noise is True
    large = find(rows, "matmul", "optimized", "ptx", 4096)
    assert large.ratio_to_original == pytest.approx(1.2) and large.within_noise is False
    assert any("size 4096" in n and "outside the noise" in n for n in notes)
    assert not any("size 1024" in n and "matmul" in n for n in notes)


def test_fallback_flag_on_a_tileir_row_compiled_by_ptx() -> None:
    rows, _ = finished_rows()
    fell_back = find(rows, "matmul", "optimized", "tileir", 4096)
    assert fell_back.provenance.fallback is True
    assert "fallback: compiled by cuda, not tileir" in fell_back.reason
    assert find(rows, "matmul", "optimized", "tileir", 1024).provenance.fallback is False
    assert find(rows, "matmul", "original", "ptx", 1024).provenance.fallback is False  # cuda is right for PTX
    row = BenchRow("k", "optimized", "tileir", 8, PASS, provenance=Provenance(compiled_backend="cuda,tileir"))
    mark_fallback(row)
    mark_fallback(row)  # idempotent
    assert row.provenance.fallback and row.reason.count("fallback") == 1


def test_provenance_survives_the_json_round_trip(tmp_path: Path) -> None:
    rows, notes = finished_rows()
    run = BenchRun(rows=rows, peaks=recorded()["peaks"], notes=notes)
    loaded = load_bench_run(save_bench_run(run, tmp_path))
    row = loaded.rows[0]
    assert row.provenance.device["name"] == "FAKE GPU (test fixture)"
    assert (row.provenance.triton_distribution, row.provenance.triton_version) == ("nvtriton", "3.6.0")
    assert row.provenance.torch_version == "2.11.0" and row.provenance.kernels == {"matmul_kernel": "cuda"}
    assert row.timing.method == CUDAGRAPH and row.timing.input_sets == 39
    assert row.autotuners[0].best_config.startswith("BLOCK_SIZE_K=64") and row.autotune_ms == 1900.0
    assert [r.status for r in loaded.rows] == [r.status for r in rows]
    assert [r.tflops for r in loaded.rows] == [r.tflops for r in rows]


def test_error_and_not_run_rows_carry_no_numbers() -> None:
    rows, _ = finished_rows()
    without = [row for row in rows if row.status in (ERROR, NOT_RUN)]
    assert {row.status for row in without} == {ERROR, NOT_RUN}  # the rows this is about exist
    for row in without:
        assert row.median_ms is None and row.tflops is None and row.gbps is None and row.speedup is None
        assert row.reason


def test_exit_codes() -> None:
    ok = BenchRow("k", "original", "ptx", 8, PASS, timing=Timing(DO_BENCH, median_ms=1.0))
    skipped = BenchRow("k", "original", "tileir", 8, NOT_RUN, "not run: no GPU")
    broken = BenchRow("k", "original", "ptx", 8, ERROR, "timeout after 5s")
    assert BenchRun([ok, skipped]).exit_code() == ExitCode.OK
    assert BenchRun([skipped]).exit_code() == ExitCode.NOT_RUN
    assert BenchRun([ok, broken]).exit_code() == ExitCode.FAILED


# --------------------------------------------------------------------------- planning and not-run rows


def small_project(tmp_path: Path, **extra: object):
    """vector_add, copied alone (no optimized file beside it)."""
    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    raw = {"name": "vector_add", "path": "vector_add.py", "entry": "add", "reference": "x + y",
           "inputs": {"x": ["N"], "y": ["N"]}, "dims": {"N": 4096}, **extra}
    return parse_project({"defaults": {"sizes": [128, 1024]}, "kernel": [raw]}, None, tmp_path)


def test_no_gpu_every_row_not_run_and_nothing_timed(tmp_path: Path) -> None:
    run = bench_project(small_project(tmp_path), machine=NO_GPU)
    assert len(run.rows) == 2 * 5  # two sizes x (original/optimized on PTX and TileIR, torch)
    assert {r.status for r in run.rows} == {NOT_RUN}
    assert {r.reason for r in run.rows} == {"not run: no GPU"}
    assert all(r.timing is None and r.tflops is None and r.gbps is None for r in run.rows)
    assert run.exit_code() == ExitCode.NOT_RUN and run.peaks is None and run.peaks_note == "not run: no GPU"
    assert [r.size for r in run.rows[:5]] == [128] * 5 and run.rows[0].shapes == {"x": [128], "y": [128]}
    assert run.rows[0].provenance.device["name"] == "cpu" and run.rows[0].provenance.torch_version


def test_reasons_on_a_gpu_without_tileir(tmp_path: Path) -> None:
    project = small_project(tmp_path, reference="original")
    plan = plan_items(project, project.kernels, BenchSettings(), HOPPER)
    reasons = {(r.variant, r.backend): r.reason for _, r in plan.decided}
    assert "no optimized file vector_add_tileir.py" in reasons[("optimized", "ptx")]
    assert reasons[("original", "tileir")] == "not run: FAKE H100 (test) is sm_90; TileIR needs Blackwell (sm_100+)"
    assert "the original PTX row is the baseline" in reasons[("reference", "torch")]
    planned = [(item.variant, item.backend, item.size) for job in plan.jobs for item in job.items]
    assert planned == [("original", "ptx", 128), ("original", "ptx", 1024)]  # one job, both sizes
    isolated = plan_items(project, project.kernels, BenchSettings(isolate=True), HOPPER)
    assert [len(job.items) for job in isolated.jobs] == [1, 1]


def test_jobs_per_kernel(tmp_path: Path) -> None:
    source = (EXAMPLES / "vector_add.py").read_text()
    (tmp_path / "vector_add.py").write_text(source)
    (tmp_path / "vector_add_tileir.py").write_text(source)
    raw = {"path": "vector_add.py", "entry": "add", "reference": "x + y", "inputs": {"x": ["N"], "y": ["N"]},
           "dims": {"N": 4096}}
    project = parse_project({"defaults": {"sizes": [128, 1024]}, "kernel": [raw]}, None, tmp_path)
    plan = plan_items(project, project.kernels, BenchSettings(), HOPPER)
    jobs = [(job.backend, sorted({(i.variant, i.backend) for i in job.items}), len(job.items)) for job in plan.jobs]
    # one job per kernel and worker backend: the torch reference rides with the PTX rows; the pairs follow them
    assert jobs == [("ptx", [("optimized", "ptx"), ("original", "ptx"), ("reference", "torch")], 6)]
    items = plan.jobs[0].items
    assert [(items[a].variant, items[b].variant, items[a].size == items[b].size) for a, b in plan.jobs[0].pairs] \
        == [("original", "optimized", True)] * 2
    isolated = plan_items(project, project.kernels, BenchSettings(isolate=True), HOPPER)
    assert [(len(job.items), job.start_item) for job in isolated.jobs] == [(1, 0)] * 6 + [(2, 2)] * 2  # pairs last


def test_a_kernel_without_sweep_is_timed_once(tmp_path: Path) -> None:
    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    project = parse_project({"kernel": [{"path": "vector_add.py", "entry": "add",
                                         "inputs": {"x": [4096], "y": [4096]}}]}, None, tmp_path)
    run = bench_project(project, machine=NO_GPU)
    assert {r.size for r in run.rows} == {None} and len(run.rows) == 5


def test_settings_are_checked() -> None:
    from tileiropt.errors import UserError

    for bad in (BenchSettings(method="fast"), BenchSettings(rep_ms=0), BenchSettings(timeout=-1),
                BenchSettings(sizes=[0])):
        with pytest.raises(UserError):
            bad.check()


# --------------------------------------------------------------------------- timing helpers


def test_method_choice_and_input_rotation() -> None:
    l2 = 50 * 2**20
    assert choose_method("auto", 4 * 2**20, l2) == CUDAGRAPH  # fits in L2: launch gaps matter, use graphs
    assert choose_method("auto", 400 * 2**20, l2) == DO_BENCH  # streams from DRAM; do_bench clears L2 per run
    assert choose_method(DO_BENCH, 1, l2) == DO_BENCH
    assert input_set_count(400 * 2**20, l2) == 1
    assert input_set_count(10 * 2**20, l2) == 15  # 3x L2 worth of copies
    assert input_set_count(1024, l2) == 512  # capped


def test_triton_version_guards() -> None:
    def modern(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
        fn()
        assert return_mode == "all"
        return [1.0, 2.0, 3.0]

    def no_all(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
        assert return_mode in ("min", "max", "mean", "median")
        return [0.5, 1.0, 2.0, 3.0, 4.0] if quantiles else 2.0

    def ancient(fn, rep=20, grad_to_none=None):
        return 2.5

    calls = []
    first = _call_bench(modern, lambda: calls.append(1), DO_BENCH, warmup=10, rep=50)
    assert (first.median_ms, first.samples, first.warmup_ms, first.rep_ms) == (2.0, 3, 10, 50) and calls
    second = _call_bench(no_all, lambda: None, CUDAGRAPH, warmup=10, rep=50)
    assert (second.median_ms, second.p20_ms, second.samples, second.warmup_ms) == (2.0, 1.0, None, None)
    third = _call_bench(ancient, lambda: None, CUDAGRAPH, rep=50)
    assert third.median_ms == 2.5 and "mean" in third.note


# --------------------------------------------------------------------------- worker plumbing (stand-in worker)


def _fake_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "WORKER_MODULE", "fake_bench_worker")
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES))


def _item(index: int, kernel: str, timeout: float = 30.0) -> BenchItem:
    return BenchItem(id=index, kernel=kernel, variant="original", backend="ptx", path="/fixture/k.py", entry="k",
                     reference=None, size=128, dims={}, shapes={"x": [128]}, dtypes={"x": "float32"},
                     timeout_s=timeout)


def test_timeouts_and_crashes_cost_one_row_each(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_worker(monkeypatch)
    items = [_item(0, "a"), _item(1, "hang", timeout=2.0), _item(2, "b"), _item(3, "crash"), _item(4, "poison"),
             _item(5, "c")]
    seen: list[str] = []
    jobs = BenchJobs(BenchSettings(rounds=0), on_row=lambda r: seen.append(r.kernel))
    with RunWorkers() as workers:
        slots = workers.slots(JobPool({"ptx": [BenchJob(0, "k", "ptx", items)]}), {"ptx": BACKENDS["ptx"]}, jobs)
        assert run_jobs(slots, [LOCAL])
        caches = [jobs.rows[i].reason.split("cache=")[1] for i in (0, 2, 5)]
        assert len(set(caches)) == 1 and Path(caches[0]).is_dir()  # one Triton cache per run and compiler
    assert not Path(caches[0]).exists()  # removed with the run
    rows = jobs.rows
    status = {items[i].kernel: rows[i].status for i in rows}
    assert status == {"a": PASS, "hang": ERROR, "b": PASS, "crash": ERROR, "poison": ERROR, "c": PASS}
    assert rows[1].reason.startswith("timeout after 2s")
    assert rows[3].reason.startswith("crashed: SIGSEGV")
    assert sorted(seen) == sorted(i.kernel for i in items)
    pids = {i: rows[i].reason.split()[0] for i in (0, 2, 5)}
    assert len(set(pids.values())) == 3  # a new worker after the hang, the crash and the poisoned context
    # the first, then one after the hang, two for the crash (a crash is retried once in a fresh worker: it is evidence,
    # not yet a verdict) and one after the poisoned context
    assert slots.workers_started == 5
    assert [(t.kernel, t.worker_start_s is not None) for t in slots.timings] == [("k", True)]  # its last part


# --------------------------------------------------------------------------- peaks cache


def test_peaks_cache_is_keyed_by_device_and_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    peaks = dict(recorded()["peaks"])
    assert peaks_module.load_cached_peaks(peaks["device"], peaks["torch_version"]) is None
    path = peaks_module.save_peaks(peaks)
    assert path == tmp_path / "peaks.json"
    assert peaks_module.load_cached_peaks(peaks["device"], peaks["torch_version"])["copy"]["gbps"] > 0
    assert peaks_module.load_cached_peaks(peaks["device"], "another torch") is None
    assert peaks_module.load_cached_peaks("another GPU", peaks["torch_version"]) is None


def test_obtain_peaks_uses_the_cache_without_a_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.check.environment import probe_torch

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    peaks = {**recorded()["peaks"], "device": HOPPER.device.name, "torch_version": probe_torch()["version"]}
    peaks_module.save_peaks(peaks)
    monkeypatch.setattr(bench_module, "start_worker", lambda *a, **k: pytest.fail("no worker may start"))
    found, note = obtain_peaks(HOPPER)
    assert found["matmul"]["float16"]["tflops"] == 600.0 and note.startswith("cached in")
    assert obtain_peaks(NO_GPU) == (None, "not run: no GPU")


def test_peaks_are_measured_by_the_runs_idle_worker_which_goes_back_to_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No worker started for the peaks when the run keeps a PTX worker idle on the first slot: it measures them
    and is kept again for the timing jobs."""
    _fake_worker(monkeypatch)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    with RunWorkers(keep=True) as workers:
        workers.prestart(LOCAL, [BACKENDS["ptx"]])
        (kept,) = [w for idle in workers.kept.idle.values() for w in idle]
        monkeypatch.setattr(bench_module, "start_worker", lambda *a, **k: pytest.fail("no worker may start"))
        found, note = obtain_peaks(HOPPER, remeasure=True, workers=workers, launcher=LOCAL)
        assert found["device"] == "FAKE GPU" and note.startswith("measured now")  # by `kept`: none could start
        assert [w for idle in workers.kept.idle.values() for w in idle] == [kept] and kept.proc.poll() is None


def test_one_triton_cache_per_compiler_ptx_and_the_tileir_code_on_it_share_one() -> None:
    with RunWorkers() as workers:
        ptx, forced, tileir = (workers.env(name)["TRITON_CACHE_DIR"] for name in ("ptx", "tileir-code-on-ptx",
                                                                                   "tileir"))
        assert ptx == forced and tileir != ptx and Path(ptx).is_dir() and Path(tileir).is_dir()
    assert not Path(ptx).exists() and not Path(tileir).exists()  # removed with the run


# --------------------------------------------------------------------------- command line


def test_cli_without_gpu_exits_3_with_every_row_not_run(tmp_path: Path) -> None:
    project = tmp_path / "tileiropt.toml"
    project.write_text(f"""
[defaults]
sizes = [128]
[[kernel]]
path = "{EXAMPLES / 'vector_add.py'}"
entry = "add"
reference = "x + y"
inputs = {{ x = ["N"], y = ["N"] }}
dims = {{ N = 1024 }}
""")
    result = CliRunner().invoke(app, ["bench", str(project), "--json"])
    if Machine.probe().has_gpu:
        pytest.skip("this machine has a GPU")
    assert result.exit_code == ExitCode.NOT_RUN
    data = json.loads(result.stdout)
    assert {r["status"] for r in data["rows"]} == {"not-run"} and len(data["rows"]) == 5
    assert all(r["timing"] is None for r in data["rows"])
    assert json.loads((tmp_path / ".tileiropt" / "bench.json").read_text())["rows"] == data["rows"]
    human = CliRunner().invoke(app, ["bench", str(project)])
    assert human.exit_code == ExitCode.NOT_RUN and "5 rows: not run: no GPU" in human.stdout


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", str(tmp_path / "missing.toml")])
    assert result.exit_code == ExitCode.BAD_INPUT and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["bench", str(EXAMPLES), "--method", "fast"])
    assert result.exit_code == ExitCode.BAD_INPUT and "--method" in result.output


# --------------------------------------------------------------------------- on a GPU (pytest -m gpu)


@pytest.mark.gpu
def test_bench_on_a_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real timings: every PTX and torch row times, with provenance, rates and the PTX ratio."""
    from tileiropt.apply.command import apply_paths

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    (tmp_path / "scale.py").write_text((FIXTURES / "scale.py").read_text())
    apply_paths([tmp_path / "vector_add.py", tmp_path / "scale.py"])
    project = parse_project({"defaults": {"sizes": [256, 4096]}, "kernel": [
        {"name": "vector_add", "path": "vector_add.py", "entry": "add", "reference": "x + y",
         "inputs": {"x": ["M", "N"], "y": ["M", "N"]},
         "dims": {"M": 256, "N": 256}, "sweep": ["M", "N"]},
        {"path": "scale.py", "entry": "scale", "reference": "x * alpha", "inputs": {"x": ["N"]}, "dims": {"N": 1024},
         "args": {"alpha": 2.0}, "bytes": "2 * N * 4"},
    ]}, None, tmp_path)
    machine = Machine.probe()
    run = bench_project(project, settings=BenchSettings(warmup_ms=5, rep_ms=20), machine=machine)
    assert run.exit_code() == ExitCode.OK, [(r.kernel, r.label, r.reason) for r in run.rows if r.status == ERROR]
    assert run.peaks and run.peaks["copy"]["gbps"] > 0 and run.peaks["matmul"]["float16"]["tflops"] > 0
    for row in run.rows:
        if row.backend == "tileir" and machine.tileir_blockers:
            assert row.status == NOT_RUN and row.timing is None
            continue
        assert row.status == PASS, (row.kernel, row.label, row.reason)
        assert row.timing.median_ms > 0 and row.timing.p20_ms <= row.timing.median_ms <= row.timing.p80_ms
        assert row.gbps > 0 and row.pct_peak_bandwidth > 0 and row.speedup > 0
        if row.backend != "torch":
            assert row.first_call_ms > row.timing.median_ms  # it compiled
        assert row.provenance.device["name"] == machine.device.name and row.provenance.torch_version
        if row.backend == "ptx":
            assert row.provenance.compiled_backend == "cuda" and not row.provenance.fallback
        if (row.variant, row.backend) == ("optimized", "ptx"):
            assert row.ratio_to_original is not None and row.within_noise is not None
    small = find(run.rows, "vector_add", "original", "ptx", 256)
    large = find(run.rows, "vector_add", "original", "ptx", 4096)
    assert small.timing.method == CUDAGRAPH and small.timing.input_sets > 1  # fits in L2
    assert large.timing.method == DO_BENCH and large.timing.input_sets == 1
    scaled = find(run.rows, "scale", "original", "ptx", 256)
    assert scaled.bytes_source == "project" and scaled.bytes == 2 * 256 * 4
    assert scaled.autotuners and scaled.autotuners[0].best_config.startswith("BLOCK=256")


def test_an_invalidated_graph_capture_falls_back_instead_of_poisoning_the_worker() -> None:
    from tileiropt.bench.worker import poisons_worker

    assert not poisons_worker("CUDA error: operation not permitted when stream is capturing")
    assert not poisons_worker("cudaErrorStreamCaptureInvalidated: operation failed due to a previous error during "
                              "capture")
    assert poisons_worker("CUDA error: an illegal memory access was encountered")
    assert not poisons_worker("ValueError: bad shape")


# --------------------------------------------------------------------------- paired timing


def test_paired_ratio_verdicts() -> None:
    from tileiropt.bench.records import FASTER, SAME, SLOWER, UNCLEAR, paired_ratio

    a = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00, 1.00]  # milliseconds per call
    same = [x * y for x, y in zip(a, [1.001, 0.999, 1.002, 0.998, 1.0, 1.001, 0.999, 1.0, 1.002, 0.998])]
    ratio, low, high, verdict = paired_ratio(a, same)
    assert verdict == SAME and low < 1 < high and abs(ratio - 1) < 0.002
    slow = [x * 1.10 * y for x, y in zip(a, [1.002, 0.998, 1.001, 0.999, 1.0, 1.003, 0.997, 1.0, 1.001, 0.999])]
    assert paired_ratio(a, slow)[3] == SLOWER
    fast = [x * 0.8 for x in a]
    assert paired_ratio(a, fast)[3] == FASTER
    noisy = [x * y for x, y in zip(a, [1.2, 0.85, 1.15, 0.9, 1.1, 0.95, 1.05, 1.0, 1.12, 0.88])]
    assert paired_ratio(a, noisy)[3] == UNCLEAR  # the interval straddles 1.05: no claim either way
    drift = [t * (1 + 0.01 * i) for i, t in enumerate(a)]  # the GPU clock drifts: both sides see it
    assert paired_ratio(drift, [t * 1.0 for t in drift])[3] == SAME
    tiny = [t * 0.002 for t in a]  # 2 microseconds per call: launch-bound, never judged
    assert paired_ratio(tiny, [t * 1.3 for t in tiny])[3] == UNCLEAR


def test_paired_timing_decides_the_ptx_check() -> None:
    from tileiropt.bench.records import PairedTiming, compare_rows, row_from_dict

    def row(variant: str, median: float) -> BenchRow:
        return BenchRow(kernel="k", variant=variant, backend="ptx", size=1, status="pass", dtypes={"x": "float32"},
                        timing=Timing(method="do_bench", median_ms=median, p20_ms=median * 0.9,
                                      p80_ms=median * 1.1))

    original, optimized = row("original", 1.0), row("optimized", 1.12)
    optimized.paired = PairedTiming(rounds=10, a_ms=[1.0] * 10, b_ms=[1.12] * 10, ratio=1.12, ci_low=1.10,
                                    ci_high=1.14, threshold=0.05, verdict="slower")
    warnings = compare_rows([original, optimized])
    assert optimized.ratio_to_original == 1.12 and optimized.within_noise is False
    assert any("slower on PTX" in w and "1.100-1.140" in w for w in warnings)
    from tileiropt.output import to_jsonable

    again = row_from_dict(json.loads(json.dumps(to_jsonable(optimized))))
    assert again.paired == optimized.paired  # the record keeps the paired timing


def test_metric_expressions_are_safe_and_bounded() -> None:
    from tileiropt.project.metric_expressions import ExpressionError, evaluate

    assert evaluate("2 * M * N * K", {"M": 4, "N": 8, "K": 2}, {}) == 128.0
    assert evaluate("4 * prod(x) + math.prod(x) + x[0]", {}, {"x": [2, 3]}) == 32.0
    for bad in ("9**9**9", "().__class__.__base__", '__import__("os").system("true")', '{"__builtins__": {}}',
                "lambda: 1", "x.shape", "10**40", "[1] * 10**9"):
        with pytest.raises(ExpressionError):
            evaluate(bad, {}, {"x": [1]})


def test_project_refuses_an_unsafe_metric_expression(tmp_path) -> None:
    from tileiropt.errors import UserError
    from tileiropt.project.spec import parse_project

    data = {"kernel": [{"name": "k", "path": "k.py", "entry": "k", "inputs": {"x": ["N"]}, "dims": {"N": 4},
                        "flops": "9**9**9"}]}
    (tmp_path / "k.py").write_text("def k(x):\n    pass\n")
    with pytest.raises(UserError, match=r"kernel\[0\]\.flops.*exponent beyond 64"):
        parse_project(data, tmp_path / "tileiropt.toml", tmp_path)


def test_kept_workers_serve_the_next_phase_and_a_prestarted_one_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_worker(monkeypatch)

    def phase(workers: RunWorkers, names: list[str]) -> tuple[BenchJobs, object]:
        jobs = BenchJobs(BenchSettings(rounds=0))
        items = [_item(i, name) for i, name in enumerate(names)]
        slots = workers.slots(JobPool({"ptx": [BenchJob(0, "k", "ptx", items)]}), {"ptx": BACKENDS["ptx"]}, jobs)
        assert run_jobs(slots, [LOCAL])
        return jobs, slots

    with RunWorkers(keep=True) as workers:
        workers.prestart(LOCAL, [BACKENDS["ptx"]])
        first, first_slots = phase(workers, ["a", "b"])
        second, second_slots = phase(workers, ["c"])
        pids = {row.reason.split()[0] for rows in (first.rows, second.rows) for row in rows.values()}
        assert len(pids) == 1  # one process served both phases, started before either
        assert first_slots.workers_started == 0 and second_slots.workers_started == 0
        assert first_slots.timings[0].worker_start_s is not None  # the first job paid the start-up
        assert second_slots.timings[0].worker_start_s is None  # the next phase's did not
        kept = [w for idle in workers.kept.idle.values() for w in idle]
        assert len(kept) == 1 and kept[0].proc.poll() is None
    assert kept[0].proc.poll() is not None  # closing the run's workers ends them


def test_isolate_gives_each_job_a_fresh_worker_even_with_kept_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_worker(monkeypatch)
    jobs = BenchJobs(BenchSettings(rounds=0))
    pool = JobPool({"ptx": [BenchJob(i, "k", "ptx", [_item(i, name)]) for i, name in enumerate("abc")]})
    with RunWorkers(keep=True) as workers:
        slots = workers.slots(pool, {"ptx": BACKENDS["ptx"]}, jobs, isolate=True)
        assert run_jobs(slots, [LOCAL])
        assert not any(workers.kept.idle.values())
    assert len({row.reason.split()[0] for row in jobs.rows.values()}) == 3 and slots.workers_started == 3


def test_a_pair_sent_on_its_own_runs_only_when_both_its_rows_timed() -> None:
    from tileiropt.bench.records import BenchRow

    jobs = BenchJobs(BenchSettings())
    items = [_item(7, "k"), _item(8, "k")]
    pair = BenchJob(0, "k", "ptx", items, [[0, 1]], start_item=2)
    assert jobs.message(pair)["passed"] == []  # nothing timed yet: the worker skips the pair
    jobs.rows[7] = items[0].row(PASS)
    jobs.rows[8] = items[1].row(ERROR, "timeout after 2s")
    assert jobs.message(pair)["passed"] == [0]
    jobs.rows[8] = BenchRow(**{**vars(items[1].row(PASS))})
    assert jobs.message(pair)["passed"] == [0, 1]


def test_a_slot_that_gives_up_one_backend_still_serves_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_worker(monkeypatch)
    monkeypatch.setenv("FAKE_TILEIR_DIES", "1")
    jobs = BenchJobs(BenchSettings(rounds=0))
    tileir = [BenchJob(i, f"t{i}", "tileir", [_item(i, f"t{i}")]) for i in range(3)]  # most waiting: chosen first
    ptx = [BenchJob(9, "p", "ptx", [_item(9, "p")])]
    with RunWorkers() as workers:
        slots = workers.slots(JobPool({"tileir": tileir, "ptx": ptx}), {"tileir": BACKENDS["tileir"],
                                                                        "ptx": BACKENDS["ptx"]}, jobs)
        assert run_jobs(slots, [LOCAL])
    assert jobs.rows[9].status == PASS  # the PTX job ran on the same slot after TileIR was given up
    assert {jobs.rows[i].status for i in range(3)} == {ERROR}
    assert all("did not start" in jobs.rows[i].reason for i in range(3))


def test_a_pair_times_the_measurements_its_rows_prepared_and_a_sweep_keeps_only_what_fits(monkeypatch) -> None:
    """The rows' first calls (compile, autotune, inputs) are not made again for their pair; past KEEP_BYTES a
    pair prepares its own."""
    from types import SimpleNamespace

    from tileiropt.bench import worker

    def prepared(megabytes: int) -> worker.Prepared:
        return worker.Prepared(fn=lambda: None, method="do_bench", input_sets=1, provenance=Provenance(),
                               first_call_ms=1.0, autotune=[], input_bytes=megabytes * 2**20, output_bytes=0)

    monkeypatch.setattr(worker.KeptPrepared, "KEEP_BYTES", 100 * 2**20)
    kept = worker.KeptPrepared()
    small_a, small_b, large = prepared(30), prepared(30), prepared(60)
    kept.add(0, small_a)
    kept.add(1, small_b)
    kept.add(2, large)  # 120 MiB in all: over the cap, not kept
    assert kept.pair(0, 1) == (small_a, small_b) and kept.bytes == 0
    assert kept.pair(0, 1) is None and kept.pair(2, 3) is None
    monkeypatch.setattr(worker.Measurement, "prepare", lambda self: pytest.fail("prepared again"))
    monkeypatch.setattr(worker, "time_prepared", lambda p, warmup, rep: SimpleNamespace(median_ms=1.0))
    monkeypatch.setattr(worker, "gpu_state", lambda: {})
    item = BenchItem(id=0, kernel="k", variant="original", backend="ptx", path="", entry="k", reference=None,
                     size=None, dims={}, shapes={}, dtypes={})
    paired = worker.run_pair(item, item, Provenance(), 10, 0.05, (small_a, small_b))
    assert paired.verdict == "same" and paired.rounds == 8


def test_a_pair_of_captured_launches_whose_rows_compiled_the_same_code_is_not_prepared_again(monkeypatch) -> None:
    """A launch of gigabytes is not kept for its pair: what its two rows compiled already says the code is the
    same, so neither is built again to learn it."""
    from tileiropt.bench import worker
    from tileiropt.project.launch import CapturedLaunch

    monkeypatch.setattr(worker.Measurement, "prepare", lambda self: pytest.fail("prepared again"))
    item = BenchItem(id=0, kernel="k", variant="original", backend="ptx", path="k.py", entry="k", reference=None,
                     size=None, dims={}, shapes={}, dtypes={}, launch=CapturedLaunch("k", "k.py", ()))
    compiled = {"k": {"config": "BLOCK=1024, num_warps=4", "code": "ab12"}}
    paired = worker.run_pair(item, item, Provenance(), 10, 0.05, None,
                             (Provenance(launched=compiled), Provenance(launched=dict(compiled))))
    assert paired.verdict == worker.SAME_CODE and paired.rounds == 0 and "PTX code identical" in paired.note
    other = {"k": {"config": "BLOCK=1024, num_warps=4", "code": "cd34"}}  # another code: both are prepared, timed
    with pytest.raises(pytest.fail.Exception, match="prepared again"):
        worker.run_pair(item, item, Provenance(), 10, 0.05, None,
                        (Provenance(launched=compiled), Provenance(launched=other)))
    assert worker.both_ran({0: Provenance()}, 0, 1) is None  # a row of an earlier worker: the pair prepares both


def test_an_optimized_row_of_the_same_code_as_its_original_takes_the_original_timing_said_so(monkeypatch) -> None:
    """Where the optimized file compiled to the original's PTX at the same config (a hint that PTX drops), its
    row is the original's timing, marked as not measured; another code is measured."""
    from tileiropt.bench import worker
    from tileiropt.bench.records import Timing
    from tileiropt.project.launch import CapturedLaunch

    launch = CapturedLaunch("k", "k.py", ())
    original = BenchItem(id=0, kernel="k", variant="original", backend="ptx", path="k.py", entry="k",
                         reference=None, size=None, dims={}, shapes={}, dtypes={}, launch=launch)
    optimized = BenchItem(**{**vars(original), "id": 1, "variant": "optimized", "path": "k_tileir.py"})
    compiled = {"k": {"config": "BLOCK=1024, num_warps=4", "code": "ab12"}}
    timed = Timing(method="do_bench", median_ms=2.0, p20_ms=1.9, p80_ms=2.1, note="graph not used")
    row = original.row(PASS, "", Provenance(launched=compiled), timing=timed)
    reused = worker.reused_timing((original, row), optimized, Provenance(launched=dict(compiled)))
    assert reused is not None and reused.median_ms == 2.0 and reused.reused_from == "original"
    assert reused.note.startswith("graph not used; the original row's timing, not measured again: PTX code")
    other = {"k": {"config": "BLOCK=1024, num_warps=4", "code": "cd34"}}
    assert worker.reused_timing((original, row), optimized, Provenance(launched=other)) is None
    assert worker.reused_timing(None, optimized, Provenance(launched=dict(compiled))) is None
    failed = original.row(ERROR, "boom", Provenance(launched=compiled))
    assert worker.reused_timing((original, failed), optimized, Provenance(launched=dict(compiled))) is None


EMULATED_HOPPER = Machine(device=HOPPER.device, tileir_blockers=list(HOPPER.tileir_blockers),
                          tileir_emulated="emulated TileIR: tileiropt's test emulator")


def test_under_the_emulator_the_optimized_file_has_an_emulated_tileir_row_in_its_own_worker(tmp_path: Path) -> None:
    source = (EXAMPLES / "vector_add.py").read_text()
    (tmp_path / "vector_add.py").write_text(source)
    (tmp_path / "vector_add_tileir.py").write_text(source)
    raw = {"path": "vector_add.py", "entry": "add", "reference": "x + y", "inputs": {"x": ["N"], "y": ["N"]},
           "dims": {"N": 4096}}
    project = parse_project({"defaults": {"sizes": [128]}, "kernel": [raw]}, None, tmp_path)
    plan = plan_items(project, project.kernels, BenchSettings(), EMULATED_HOPPER)
    jobs = {job.backend: sorted({(i.variant, i.backend) for i in job.items}) for job in plan.jobs}
    assert jobs["tileir-emulated"] == [("optimized", "tileir-emulated")]  # its own worker, under ENABLE_TILE=1
    reasons = {(r.variant, r.backend): r.reason for _, r in plan.decided}
    assert "sm_90" in reasons[("optimized", "tileir")]  # the TileIR backend itself still says why it did not run
    without = plan_items(project, project.kernels, BenchSettings(), HOPPER)  # no emulator: no such row at all
    assert all(item.backend != "tileir-emulated" for job in without.jobs for item in job.items)
    assert all(row.backend != "tileir-emulated" for _, row in without.decided)


def test_an_emulated_tileir_row_is_never_a_tileir_speedup_and_its_fallback_is_flagged() -> None:
    timing = {"method": "do_bench", "median_ms": 0.01}
    rows = [row_from_dict({"kernel": "k", "variant": variant, "backend": backend, "size": 8, "status": PASS,
                           "timing": {**timing, "median_ms": ms}, "provenance": {"compiled_backend": compiled}})
            for variant, backend, ms, compiled in (("original", "ptx", 0.010, "cuda"),
                                                   ("optimized", "tileir-emulated", 0.005, "cuda"))]
    compare_rows(rows)
    assert rows[1].speedup is None  # PTX's compiler under the emulator: no ratio to show as a TileIR speedup
    mark_fallback(rows[1])
    assert rows[1].provenance.fallback and "fallback: compiled by cuda, not tileir" in rows[1].reason
