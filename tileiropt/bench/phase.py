"""The `bench` phase of a run: original against optimized on PTX, PTX against TileIR, the torch reference, for the
kernels still going; bench.json. A benchmark that errored fails the run; one that could not run for want of a GPU
is the machine's, not a failure."""

from __future__ import annotations

from collections.abc import Sequence

from tileiropt.bench.records import ERROR as BENCH_ERROR
from tileiropt.bench.records import BenchRow, BenchRun, code_proof
from tileiropt.bench.run import bench_project
from tileiropt.contract.context import RunContext
from tileiropt.contract.outcome import Outcome
from tileiropt.contract.policy import live
from tileiropt.engine.progress import phase_progress
from tileiropt.errors import ExitCode
from tileiropt.phases import BY_NAME
from tileiropt.schema import NOT_RUN, PASS


class BenchPhase:
    about = BY_NAME["bench"]
    needs: tuple[str, ...] = ("check", "validate")

    def wanted(self, context: RunContext) -> bool:
        return True

    def run(self, context: RunContext, earlier: Sequence[Outcome]) -> Outcome:
        request = context.request

        def on_row(row: BenchRow) -> None:
            if request.console is None:  # else the progress line says more
                context.on_event("bench", f"{row.kernel} {row.short_label} size {row.size}")

        run = bench_project(context.project, kernels=[s.name for s in live(context.specs, earlier)],
                            settings=request.bench_settings, command=request.command, on_row=on_row,
                            machine=context.the_machine(), executor=request.executor, journal=True,
                            earlier=context.earlier_bench, workers=context.workers,
                            progress=phase_progress("bench", "rows", request.console, context.on_event))
        context.store.save(BenchRun, run)
        if run.interrupted:
            raise KeyboardInterrupt("interrupted")  # the rows that finished are saved
        counts = run.counts()
        detail = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
        proof = code_proof(run.rows)
        if proof:
            detail += f"; {proof}"
        if counts[BENCH_ERROR]:
            done = Outcome.of("bench", BENCH_ERROR, detail, record=run, fails_run=True)
        elif run.exit_code() == ExitCode.NOT_RUN:
            done = Outcome.of("bench", NOT_RUN, "; ".join(dict.fromkeys(r.reason for r in run.rows)), record=run)
        else:
            done = Outcome.of("bench", PASS, detail, record=run)
        done.result.jobs = list(run.jobs)
        return done
