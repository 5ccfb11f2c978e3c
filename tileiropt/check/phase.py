"""The `check` phase of a run: the machine probed once (its facts adopted to the end of the run), saved as
check.json, and judged once (`Machine.judge`): every later phase and worker reads that judgement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from tileiropt.check.environment import CheckReport, check_environment
from tileiropt.check.machine import Machine
from tileiropt.check.machine_facts import machine_facts
from tileiropt.contract.context import RunContext
from tileiropt.contract.outcome import Outcome
from tileiropt.phases import BY_NAME
from tileiropt.schema import PASS


class CheckPhase:
    about = BY_NAME["check"]
    needs: tuple[str, ...] = ()

    def wanted(self, context: RunContext) -> bool:
        return True

    def run(self, context: RunContext, earlier: Sequence[Outcome]) -> Outcome:
        origin = context.adopted.enter_context(machine_facts(context.request.fresh))  # held until the run ends
        report = check_environment(release=context.release.release.version)
        report.release["origin"] = context.release.origin
        context.store.save(CheckReport, report)
        context.machine = machine = Machine.judge(asdict(report))
        context.workers.judged(machine.tileir_blockers)  # every worker is told, and probes no more
        ready = "TileIR ready" if report.tileir_ready else "TileIR not ready: " + "; ".join(report.reasons)
        return Outcome.of("check", PASS, f"{machine.device.name}; {ready}; machine {origin}", record=report)
