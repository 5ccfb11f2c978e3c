"""Scale: work spread over GPU slots, records journaled as they finish, unchanged re-runs reusing them,
progress in a pipe, and a clean stop on SIGINT/SIGTERM.

GPU spreading is checked with the stand-in bench worker (it logs which CUDA_VISIBLE_DEVICES ran what);
resume and signals with real interpreter workers. Waits are bounded by hang guards, never asserted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tileiropt.bench import run as bench_module
from tileiropt.bench.run import BenchSettings, bench_project, earlier_bench
from tileiropt.check.machine import Machine
from tileiropt.cli import app
from tileiropt.engine import engine
from tileiropt.engine.engine import JobPool
from tileiropt.engine.executors import Executor, resolve_executor
from tileiropt.engine.progress import Progress
from tileiropt.engine.resume import journal_path, read_journal
from tileiropt.errors import ExitCode
from tileiropt.project.spec import load_project, parse_project
from tileiropt.schema import PASS
from tileiropt.validate.cases import Case
from tileiropt.validate.run import validate_project

from shared import EXAMPLES, TEST_FIXTURES, gpu_machine, with_sigint

BENCH_FIXTURES = TEST_FIXTURES / "bench"
VALIDATE_FIXTURES = TEST_FIXTURES / "validate"
GUARD_S = 120.0  # hang guard of the subprocess tests (never reached when things work)


# --------------------------------------------------------------------------- several GPUs (stand-in worker)


def _fake_gpus(monkeypatch: pytest.MonkeyPatch, log: Path) -> Machine:
    monkeypatch.setattr(engine, "WORKER_MODULE", "fake_bench_worker")
    for name, value in {"PYTHONPATH": str(BENCH_FIXTURES), "FAKE_BENCH_LOG": str(log),
                        "FAKE_BENCH_SLEEP": "0.05"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(bench_module, "obtain_peaks",
                        lambda machine, remeasure=False, workers=None, launcher=None: (None, "not measured (test)"))
    return gpu_machine("FAKE GPU (test fixture)", blockers=["nvtriton is not installed"])


def _many_kernels(tmp_path: Path, count: int) -> object:
    (tmp_path / "k.py").write_text("def k(x):\n    return x\n")
    kernels = [{"name": f"k{i}", "path": "k.py", "entry": "k", "reference": "x", "inputs": {"x": ["N"]},
                "dims": {"N": 64}, "sweep": ["N"]} for i in range(count)]
    return parse_project({"defaults": {"sizes": [64, 128]}, "kernel": kernels}, None, tmp_path)


def test_bench_spreads_kernels_over_the_gpus_one_measurement_per_gpu_at_a_time(tmp_path, monkeypatch) -> None:
    log = tmp_path / "gpu.log"
    machine = _fake_gpus(monkeypatch, log)
    project = _many_kernels(tmp_path, 6)
    run = bench_project(project, settings=BenchSettings(rounds=0), machine=machine,
                        executor=Executor(gpus=["0", "1"]))
    timed = [r for r in run.rows if r.status == PASS]
    assert len(timed) == 6 * 2 * 2  # per kernel: original PTX + torch reference, at two sizes
    assert {r.provenance.worker for r in timed} == {"gpu 0", "gpu 1"}
    for kernel in {r.kernel for r in timed}:  # a kernel's rows all come from one GPU: like with like
        assert len({r.provenance.worker for r in timed if r.kernel == kernel}) == 1
    spans: dict[str, list[tuple[float, float]]] = {}
    for line in log.read_text().splitlines():
        gpu, began, ended = line.split()
        spans.setdefault(gpu, []).append((float(began), float(ended)))
    assert set(spans) == {"0", "1"} and sum(len(s) for s in spans.values()) == len(timed)
    for gpu, intervals in spans.items():  # never two measurements on one GPU at once
        intervals.sort()
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(intervals, intervals[1:])), gpu
    assert run.settings["slots"] == ["gpu 0", "gpu 1"]


def test_bench_journals_rows_and_reuses_unchanged_ones(tmp_path, monkeypatch) -> None:
    log = tmp_path / "gpu.log"
    machine = _fake_gpus(monkeypatch, log)
    project = _many_kernels(tmp_path, 2)
    first = bench_project(project, settings=BenchSettings(rounds=0), machine=machine, journal=True,
                          executor=Executor(gpus=["0"]))
    journaled = [e["row"]["kernel"] for e in read_journal(project.artifacts, "bench") if "row" in e]
    assert sorted(journaled) == sorted(r.kernel for r in first.rows if r.status == PASS)
    from tileiropt.bench.records import save_bench_run

    save_bench_run(first, project.artifacts)
    assert not journal_path(project.artifacts, "bench").exists()  # the records file supersedes the journal
    measured = len(log.read_text().splitlines())
    again = bench_project(project, settings=BenchSettings(rounds=0), machine=machine, journal=True,
                          earlier=earlier_bench(project.artifacts), executor=Executor(gpus=["0"]))
    assert len(log.read_text().splitlines()) == measured  # nothing measured again
    assert again.reused == measured and [r.status for r in again.rows] == [r.status for r in first.rows]
    assert again.peaks_note == "not measured (test)"  # reused rows still get the peaks their % of peak needs
    (tmp_path / "k.py").write_text("def k(x):\n    return x  # changed\n")
    third = bench_project(project, settings=BenchSettings(rounds=0), machine=machine,
                          earlier=earlier_bench(project.artifacts), executor=Executor(gpus=["0"]))
    assert third.reused == 0 and len(log.read_text().splitlines()) == 2 * measured  # the file changed


# --------------------------------------------------------------------------- resume (interpreter workers)


def _pool(**counts: int) -> JobPool:
    return JobPool({name: [Case(id=i, kernel=f"k{i}", variant="original", path="k.py", entry="k", reference="x",
                                 shapes={}, dtypes={}, atol=0.0, rtol=0.0) for i in range(count)]
                     for name, count in counts.items()})


def test_the_case_pool_first_sends_slots_where_most_cases_wait_and_keeps_a_worker_on_its_backend() -> None:
    pool = _pool(ptx=4, tcop=2)
    assert pool.choose() == "ptx"  # the most cases waiting
    assert pool.choose() == "tcop"  # a backend nobody serves comes before a second worker elsewhere
    first, moved = pool.next_job("ptx")
    assert first is not None and first.id == 0 and moved is None
    pool.put_back(first, "ptx")  # a case cut short goes first
    assert [pool.next_job("ptx")[0].id for _ in range(4)] == [0, 1, 2, 3]
    assert pool.next_job("ptx") == (None, None)
    pool.release("ptx")
    assert pool.choose("ptx") == "tcop" and pool.serving["tcop"] == 2  # nothing measured: join by count
    assert [case.id for case in pool.drain("tcop")] == [0, 1]
    assert pool.choose() is None
    single = _pool(tcop=1)
    assert single.choose() == "tcop" and single.choose() is None  # one job, one worker on its way: no second


def test_the_case_pool_moves_a_worker_only_where_the_run_ends_sooner() -> None:
    pool = _pool(ptx=20, tcop=20)
    for backend in ("ptx", "tcop", "ptx", "ptx"):
        pool.serving[backend] += 1
    pool.observe("ptx", 8.0, first=True)  # a worker's start-up, with its first case
    pool.observe("ptx", 0.1, first=False)
    pool.observe("tcop", 1.0, first=False)
    # ptx: 2 s left over 3 workers; tcop: 20 s for 1. A ptx worker moves (8 s start-up, then shared work).
    assert pool.next_job("ptx") == (None, "tcop")
    assert pool.serving["ptx"] == 2 and pool.serving["tcop"] == 2
    # now ptx ends in 1 s, tcop in 10 s; one more move would end tcop at about 9.3 s: not 15% sooner
    case, moved = pool.next_job("ptx")
    assert case is not None and moved is None
    # a worker never leaves its backend without one
    lone = _pool(ptx=5, tcop=50)
    lone.serving.update({"ptx": 1, "tcop": 1})
    lone.observe("ptx", 8.0, first=True)
    lone.observe("ptx", 0.1, first=False)
    lone.observe("tcop", 1.0, first=False)
    assert lone.next_job("ptx")[1] is None


def test_a_free_slot_joins_a_backend_only_when_the_work_left_per_worker_exceeds_a_start_up() -> None:
    pool = _pool(ptx=3, tcop=40)
    pool.serving.update({"ptx": 1, "tcop": 1})
    pool.observe("tcop", 8.0, first=True)
    pool.observe("ptx", 0.2, first=False)
    pool.observe("tcop", 0.5, first=False)
    assert pool.choose() == "tcop"  # 20 s of work for one worker: worth an 8 s start-up
    for _ in range(30):
        pool.next_job("tcop")
    assert pool.choose() is None  # 10 cases (5 s) over 2 workers, 3 (0.6 s) over 1: neither is worth one


def test_a_worker_serves_many_cases_one_start_per_slot_and_backend(tmp_path) -> None:
    project = _many_kernels(tmp_path, 12)
    run = validate_project(project, backends=["interpret"], parallel=2, command=["test"])
    assert [r.status for r in run.records] == [PASS] * 12, [r.reason for r in run.records]
    assert run.slots == 2 and 1 <= run.workers <= 2  # not one worker per case, nor per shard of cases
    assert {r.kernel for r in run.records} == {f"k{i}" for i in range(12)}


def _examples(tmp_path: Path) -> Path:
    folder = tmp_path / "examples"
    folder.mkdir()
    for source in EXAMPLES.glob("*.py"):
        if not source.name.endswith("_tileir.py"):
            (folder / source.name).write_text(source.read_text())
    (folder / "tileiropt.toml").write_text((EXAMPLES / "tileiropt.toml").read_text())
    return folder


KERNELS = ["--kernel", "vector_add", "--kernel", "softmax", "--kernel", "rms_norm", "--backend", "interpret"]


def test_an_unchanged_rerun_reuses_records_and_a_changed_file_or_fresh_redoes_them(tmp_path) -> None:
    folder = _examples(tmp_path)
    runner = CliRunner()
    first = runner.invoke(app, ["validate", str(folder), *KERNELS, "--json"])
    assert first.exit_code == 0, first.output
    records = json.loads(first.stdout)["records"]
    assert records and all(r["inputs"] for r in records) and json.loads(first.stdout)["reused"] == 0
    second = json.loads(runner.invoke(app, ["validate", str(folder), *KERNELS, "--json"]).stdout)
    assert second["reused"] == len(records)
    assert [(r["kernel"], r["config"], r["status"]) for r in second["records"]] == \
        [(r["kernel"], r["config"], r["status"]) for r in records]
    source = folder / "softmax.py"
    source.write_text(source.read_text() + "\n# edited\n")
    third = json.loads(runner.invoke(app, ["validate", str(folder), *KERNELS, "--json"]).stdout)
    softmax = [r for r in records if r["kernel"] == "softmax"]
    assert third["reused"] == len(records) - len(softmax)
    fresh = json.loads(runner.invoke(app, ["validate", str(folder), *KERNELS, "--fresh", "--json"]).stdout)
    assert fresh["reused"] == 0 and len(fresh["records"]) == len(records)


def test_progress_in_a_pipe_is_one_line_per_finished_kernel() -> None:
    from rich.console import Console

    progress = Progress("validate", "cases", Console(file=open(os.devnull, "w")), tty=False)
    progress.plan({"a": 2, "b": 1})
    progress.record("a", "pass")
    progress.finished("a")
    assert progress.lines == []  # a has one case left
    progress.record("b", "fail")
    progress.finished("b")
    progress.record("a", "pass")
    progress.finished("a")
    assert [line.split(" [")[0] for line in progress.lines] == ["validate: b done: 1 fail", "validate: a done: 2 pass"]
    assert "3/3 cases, 2/2 kernels" in progress.lines[-1]


# --------------------------------------------------------------------------- executors


def test_executor_options_are_checked(tmp_path) -> None:
    from tileiropt.errors import UserError

    with pytest.raises(UserError, match="--executor: unknown value 'cloud'"):
        resolve_executor(None, {"kind": "cloud"})
    with pytest.raises(UserError, match="--slurm-tasks"):
        resolve_executor(None, {"tasks": 0})
    base = {"kernel": [{"name": "k", "path": "k.py", "entry": "k", "reference": "x", "inputs": {"x": [4]}}]}
    (tmp_path / "k.py").write_text("def k(x):\n    return x\n")
    for table, message in (({"kind": "cloud"}, "executor.kind"), ({"tasks": "4"}, "executor.tasks"),
                           ({"nodes": 2}, "executor"), ({"srun_args": "--exclusive"}, "executor.srun_args")):
        with pytest.raises(UserError, match=message):
            parse_project({**base, "executor": table}, tmp_path / "tileiropt.toml", tmp_path)
    project = parse_project({**base, "executor": {"kind": "slurm", "partition": "gpu", "time": "00:10:00",
                                                  "tasks": 8, "srun_args": ["--exclusive"]}}, None, tmp_path)
    executor = project.executor
    assert (executor.kind, executor.partition, executor.tasks) == ("slurm", "gpu", 8)
    launcher = executor.slots(gpu_work=True, per_gpu=1, cpu_slots=1)[0]
    assert launcher.command("m")[:2] == ["srun", "--ntasks=1"] and "--partition=gpu" in launcher.prefix
    assert "--gpus-per-task=1" in launcher.prefix and "--time=00:10:00" in launcher.prefix
    local = Executor(gpus=["0", "1"]).slots(gpu_work=True, per_gpu=2, cpu_slots=1)
    assert [slot.env["CUDA_VISIBLE_DEVICES"] for slot in local] == ["0", "1", "0", "1"]


# --------------------------------------------------------------------------- clean shutdown


def _tagged_processes(tag: str) -> list[int]:
    """Processes (other than this one) whose environment carries `tag`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if tag.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _hanging_project(tmp_path: Path) -> Path:
    """A project whose first kernel passes quickly and whose second hangs for a minute."""
    for name in ("hang.py", "scale.py"):
        (tmp_path / name).write_text((VALIDATE_FIXTURES / name).read_text())
    (tmp_path / "tileiropt.toml").write_text(
        '[[kernel]]\nname = "quick"\npath = "scale.py"\nentry = "scale"\nreference = "x * alpha + 1"\n'
        'inputs = { x = [64] }\nargs = { alpha = 0.5 }\n\n'
        '[[kernel]]\nname = "hang"\npath = "hang.py"\nentry = "copy"\nreference = "x"\ninputs = { x = [300] }\n'
        'timeout = 600\n')
    return tmp_path / "tileiropt.toml"


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_a_tool_killed_with_sigkill_leaves_no_worker_behind(tmp_path) -> None:
    """SIGKILL gives the tool no chance to stop its workers: their sentinels see it gone and end their groups."""
    project = _hanging_project(tmp_path)
    tag = uuid.uuid4().hex
    env = {**os.environ, "TILEIROPT_TEST_TAG": tag}
    process = subprocess.Popen([sys.executable, "-m", "tileiropt", "validate", str(project), "--backend",
                                "interpret", "--fresh"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + GUARD_S
    try:
        while time.monotonic() < deadline:  # until the hanging kernel runs in a worker
            entries = read_journal(tmp_path / ".tileiropt", "validate") \
                if journal_path(tmp_path / ".tileiropt", "validate").exists() else []
            if any(e.get("record", {}).get("kernel") == "quick" for e in entries) and \
                    len(_tagged_processes(tag)) >= 2:
                break
            assert process.poll() is None
            time.sleep(0.2)
        else:
            pytest.fail("the hanging kernel never started")
        assert _tagged_processes(tag)  # its sentinels and workers, mid-kernel
        process.kill()
        process.wait(timeout=GUARD_S)
    finally:
        if process.poll() is None:
            process.kill()
    deadline = time.monotonic() + 10
    while _tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _tagged_processes(tag) == []  # every sentinel ended its worker's group


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_ends_every_worker_and_keeps_finished_records(tmp_path, sig) -> None:
    project = _hanging_project(tmp_path)
    tag = f"TILEIROPT_TEST_TAG={uuid.uuid4().hex}"
    env = {**os.environ, tag.split("=")[0]: tag.split("=")[1]}
    process = subprocess.Popen(with_sigint([sys.executable, "-m", "tileiropt", "validate", str(project), "--backend",
                                            "interpret", "--fresh"]), env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    journal = journal_path(tmp_path / ".tileiropt", "validate")
    deadline = time.monotonic() + GUARD_S
    try:
        while time.monotonic() < deadline:  # until the quick kernel's record is journaled and the hang runs
            entries = read_journal(tmp_path / ".tileiropt", "validate") if journal.exists() else []
            if any(e.get("record", {}).get("kernel") == "quick" for e in entries) and \
                    len(_tagged_processes(tag.split("=")[1])) >= 2:
                break
            assert process.poll() is None, process.communicate()
            time.sleep(0.2)
        else:
            pytest.fail("the quick record never reached the journal")
        process.send_signal(sig)
        out, err = process.communicate(timeout=GUARD_S)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == ExitCode.INTERRUPTED, err
    assert "interrupted" in err and "Traceback" not in err
    deadline = time.monotonic() + 10
    while _tagged_processes(tag.split("=")[1]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _tagged_processes(tag.split("=")[1]) == []  # no worker left behind
    saved = json.loads((tmp_path / ".tileiropt" / "validate.json").read_text())
    assert saved["interrupted"] is True
    assert any(r["kernel"] == "quick" and r["status"] == "pass" for r in saved["records"])
    assert not any(r["kernel"] == "hang" and r["status"] == "error" for r in saved["records"])  # cut, not failed


# --------------------------------------------------------------------------- run's exit code


def test_kernels_sharing_a_file_each_get_their_optimized_file_and_unvalidated_ones_fail_the_run(tmp_path) -> None:
    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    kernel = ('[[kernel]]\nname = "{name}"\npath = "vector_add.py"\nentry = "add"\nreference = "x + y"\n'
              'inputs = {{ x = [256], y = [256] }}\noptimized = "{optimized}"\n\n')
    (tmp_path / "tileiropt.toml").write_text(kernel.format(name="first", optimized="first_tileir.py")
                                             + kernel.format(name="second", optimized="second_tileir.py"))
    result = CliRunner().invoke(app, ["run", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "first_tileir.py").is_file() and (tmp_path / "second_tileir.py").is_file()
    records = json.loads((tmp_path / ".tileiropt" / "validate.json").read_text())["records"]
    for name in ("first", "second"):
        assert any(r["kernel"] == name and r["variant"] == "optimized" and r["status"] == "pass" for r in records)


def test_a_kernel_whose_optimized_file_never_ran_stops_the_run(tmp_path, monkeypatch) -> None:
    from tileiropt.validate.phase import never_validated
    from tileiropt.validate.records import ValidationRecord

    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    (tmp_path / "tileiropt.toml").write_text('[[kernel]]\nname = "va"\npath = "vector_add.py"\nentry = "add"\n'
                                             'reference = "x + y"\ninputs = { x = [256], y = [256] }\n')
    project = load_project(tmp_path / "tileiropt.toml")
    records = [ValidationRecord("va", "optimized", "interpret", "-", "not-run",
                                "not run: no optimized file va_tileir.py")]
    (stop,) = never_validated(project.select(None), records)
    assert (stop.kernel, stop.phase) == ("va", "validate")
    assert "never validated: not run: no optimized file" in stop.reason


def test_a_kernel_that_kills_its_parent_costs_at_most_its_own_record() -> None:
    """The worker's parent is a sentinel, so the tool (here: this test process) lives on."""
    from tileiropt.validate.run import validate_project

    project = parse_project({"kernel": [
        {"name": "kills_parent", "path": "kills_parent.py", "entry": "copy", "reference": "x", "inputs": {"x": [300]}},
        {"name": "after", "path": "scale.py", "entry": "scale", "reference": "x * alpha + 1", "inputs": {"x": [64]},
         "args": {"alpha": 0.5}},
    ]}, None, VALIDATE_FIXTURES)
    run = validate_project(project, backends=["interpret"], parallel=1)
    status = {r.kernel: r.status for r in run.records}
    assert status["after"] == PASS  # the kernels after it still ran
    assert status["kills_parent"] == PASS  # what it killed is the sentinel; the worker went on and finished


def test_a_worker_killed_by_its_kernel_is_that_records_error_and_a_failing_exit(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # a kernel-file target keeps its records in ./.tileiropt
    (tmp_path / "kills_itself.py").write_text((VALIDATE_FIXTURES / "kills_itself.py").read_text())
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "kills_itself.py"), "--entry", "copy",
                                      "--shapes", '{"x": [300]}', "--reference", "x", "--backend", "interpret"])
    assert result.exit_code == ExitCode.FAILED, result.output
    records = json.loads((tmp_path / ".tileiropt" / "validate.json").read_text())["records"]
    original = next(r for r in records if r["variant"] == "original")
    assert original["status"] == "error" and original["reason"].startswith("crashed: SIGKILL; could not tell whose")
    assert original["cause"] == "unknown"  # no traceback: never blamed on the kernel without evidence


def test_processes_the_users_entry_starts_end_with_the_worker(monkeypatch) -> None:
    from tileiropt.validate.run import validate_project

    tag = f"TILEIROPT_TEST_STARTED={os.getpid()}-{time.monotonic_ns()}"
    monkeypatch.setenv(*tag.split("="))
    project = parse_project({"kernel": [{"name": "starts", "path": "starts_a_process.py", "entry": "copy",
                                         "reference": "x", "inputs": {"x": [300]}}]}, None, VALIDATE_FIXTURES)
    run = validate_project(project, backends=["interpret"], parallel=1)
    assert {r.status for r in run.records} == {PASS}
    deadline = time.monotonic() + 10  # SIGKILL is sent at once; the process leaves /proc a moment later
    while _tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _tagged_processes(tag) == []  # the entry's `sleep 120` went with its worker's process group


def test_run_interrupted_during_a_phase_keeps_its_records_writes_the_report_and_exits_130(tmp_path, monkeypatch):
    from tileiropt.validate import phase as validate_phase
    from tileiropt.validate.records import ValidateRun, ValidationRecord

    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    (tmp_path / "tileiropt.toml").write_text('[[kernel]]\nname = "va"\npath = "vector_add.py"\nentry = "add"\n'
                                             'reference = "x + y"\ninputs = { x = [256], y = [256] }\n')

    def cut_short(project, **options):  # what validate_project returns after Ctrl-C: what finished
        record = ValidationRecord("va", "original", "interpret", "(launch)", "pass")
        return ValidateRun(records=[record], backends=["interpret"], interrupted=True)

    monkeypatch.setattr(validate_phase, "validate_project", cut_short)
    result = CliRunner().invoke(app, ["run", str(tmp_path), "--json"])
    assert result.exit_code == ExitCode.INTERRUPTED, result.output
    run = json.loads((tmp_path / ".tileiropt" / "run.json").read_text())
    assert run["exit_code"] == ExitCode.INTERRUPTED
    assert run["phases"][-2]["phase"] == "compatibility" and run["phases"][-2]["detail"] == "interrupted"
    saved = json.loads((tmp_path / ".tileiropt" / "validate.json").read_text())
    assert saved["interrupted"] is True and saved["records"][0]["status"] == "pass"
    assert (tmp_path / ".tileiropt" / "report.md").is_file()  # the report of what finished


def test_run_interrupted_in_validate_reports_what_validate_saved(tmp_path, monkeypatch):
    """The records validate saved before Ctrl-C (the original's and the optimized file's) are those the report
    reads, not only the compatibility phase's it held."""
    from tileiropt.report import phase as report_phase
    from tileiropt.validate import phase as validate_phase
    from tileiropt.validate.records import ValidateRun, ValidationRecord

    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    (tmp_path / "tileiropt.toml").write_text('[[kernel]]\nname = "va"\npath = "vector_add.py"\nentry = "add"\n'
                                             'reference = "x + y"\ninputs = { x = [256], y = [256] }\n')

    def validated(project, **options):  # compatibility passes; validate is cut after one optimized record
        variant = options["variants"][0]
        record = ValidationRecord("va", variant, "interpret", "(launch)", "pass")
        return ValidateRun(records=[record], backends=["interpret"], interrupted=variant == "optimized")

    read = []
    real = report_phase.build_report
    monkeypatch.setattr(validate_phase, "validate_project", validated)
    monkeypatch.setattr(report_phase, "build_report", lambda artifacts, kernels: read.append(artifacts) or
                        real(artifacts, kernels))
    result = CliRunner().invoke(app, ["run", str(tmp_path), "--json"])
    assert result.exit_code == ExitCode.INTERRUPTED, result.output
    (artifacts,) = read
    assert [r.variant for r in artifacts.validate.records] == ["original", "optimized"]
    run = json.loads((tmp_path / ".tileiropt" / "run.json").read_text())
    assert [(p["phase"], p["status"]) for p in run["phases"]][-2:] == [("validate", "not-run"), ("report", "pass")]


def test_run_interrupted_after_its_phases_adds_no_second_row_for_the_last(tmp_path, monkeypatch):
    from tileiropt.run import pipeline

    (tmp_path / "vector_add.py").write_text((EXAMPLES / "vector_add.py").read_text())
    (tmp_path / "tileiropt.toml").write_text('[[kernel]]\nname = "va"\npath = "vector_add.py"\nentry = "add"\n'
                                             'reference = "x + y"\ninputs = { x = [256], y = [256] }\n')

    def cut(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "settle", cut)
    result = CliRunner().invoke(app, ["run", str(tmp_path), "--json"])
    assert result.exit_code == ExitCode.INTERRUPTED, result.output
    phases = [p["phase"] for p in json.loads((tmp_path / ".tileiropt" / "run.json").read_text())["phases"]]
    assert phases.count("bench") == 1 and phases[-2:] == ["report", "report"], phases


def test_a_worker_takes_the_parents_triton_distribution_only_when_it_imports_the_same_triton() -> None:
    from tileiropt.check.environment import triton_distribution
    from tileiropt.engine.worker_io import base_provenance
    from tileiropt.harness.backends import INTERPRET

    real = triton_distribution()
    assert base_provenance(INTERPRET, {**real, "name": "as-the-parent-saw-it"}).triton_distribution == \
        "as-the-parent-saw-it"
    elsewhere = {**real, "name": "another-install", "location": "/elsewhere/triton"}
    assert base_provenance(INTERPRET, elsewhere).triton_distribution == real["name"]


def test_a_case_sent_to_a_worker_that_exits_before_beginning_it_goes_to_the_next_worker(tmp_path) -> None:
    # the first kernel's file breaks the CUDA context at import: its worker reports it and exits, after the
    # pool has already sent it the next case; that case is run by a new worker, not recorded as an error
    (tmp_path / "k.py").write_text("def k(x):\n    return x\n")
    (tmp_path / "bad.py").write_text("raise RuntimeError('CUDA error: an illegal memory access was encountered')\n\n\n"
                                     "def k(x):\n    return x\n")
    kernels = [{"name": "bad", "path": "bad.py", "entry": "k", "reference": "x", "inputs": {"x": ["N"]},
                "dims": {"N": 64}}]
    kernels += [{"name": f"k{i}", "path": "k.py", "entry": "k", "reference": "x", "inputs": {"x": ["N"]},
                 "dims": {"N": 64}} for i in range(3)]
    project = parse_project({"kernel": kernels}, None, tmp_path)
    run = validate_project(project, backends=["interpret"], parallel=1, command=["test"])
    by_kernel = {r.kernel: r for r in run.records}
    assert by_kernel["bad"].status != PASS and "illegal memory access" in by_kernel["bad"].reason
    assert [by_kernel[f"k{i}"].status for i in range(3)] == [PASS] * 3, [r.reason for r in run.records]
    assert run.workers == 2


def test_workers_that_never_start_give_every_case_one_error_with_the_cause(tmp_path, monkeypatch) -> None:
    from tileiropt.engine.workers import Launcher

    broken = Launcher(prefix=[sys.executable, "-c", "import sys; sys.exit(3)"], name="broken")
    monkeypatch.setattr(Executor, "slots", lambda self, **options: [broken, broken])
    run = validate_project(_many_kernels(tmp_path, 5), backends=["interpret"], command=["test"])
    assert len(run.records) == 5 and {r.status for r in run.records} == {"error"}
    assert all("the worker did not start: crashed (exit code 3)" in r.reason for r in run.records), \
        [r.reason for r in run.records]
    assert run.workers <= 4  # two tries per slot, then the backend's cases are given the cause


def test_validation_workers_per_gpu_follow_the_cores_and_the_gpus_memory() -> None:
    from tileiropt.engine.executors import validate_per_gpu

    assert validate_per_gpu(cpus=2, memory_gib=80.0) == 2  # never fewer than two
    assert validate_per_gpu(cpus=8, memory_gib=80.0) == 2
    assert validate_per_gpu(cpus=12, memory_gib=80.0) == 3
    assert validate_per_gpu(cpus=16, memory_gib=80.0) == 4
    assert validate_per_gpu(cpus=128, memory_gib=141.0) == 4  # never more than four
    assert validate_per_gpu(cpus=16, memory_gib=60.0) == 3  # one per 20 GiB
    assert validate_per_gpu(cpus=16, memory_gib=24.0) == 2
    assert validate_per_gpu(cpus=16, memory_gib=None) == 2  # memory unknown
