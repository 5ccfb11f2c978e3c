"""The `capture` phase of a run (only when the project asks for one): the program runs, and each distinct launch
of a target file's kernel becomes a kernel of the run. The validation workers the run needs first start as the
program starts (`engine.prestart`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from tileiropt.capture.capture import CaptureResult, add_captured_kernels, cut_summary
from tileiropt.capture.interpreter_route import ROUTE_NOTE, interpreter_route
from tileiropt.contract.context import RunContext
from tileiropt.contract.outcome import Outcome
from tileiropt.contract.store import Store
from tileiropt.engine.prestart import prestart
from tileiropt.output import is_record
from tileiropt.phases import BY_NAME
from tileiropt.project.spec import KernelSpec
from tileiropt.schema import ERROR, FAIL, NOT_RUN, PASS


class CapturePhase:
    about = BY_NAME["capture"]
    needs: tuple[str, ...] = ("check",)

    def wanted(self, context: RunContext) -> bool:
        """Only when the project asks for a capture; a run that does not capture supersedes the capture record an
        earlier run left in the records folder (`supersede_capture`)."""
        if context.project.capture is None:
            supersede_capture(context.store)
            return False
        return True

    def run(self, context: RunContext, earlier: Sequence[Outcome]) -> Outcome:
        """Run the program, keep the distinct launches of the target files' kernels as replay specs."""
        machine = context.the_machine()
        request = context.project.capture
        files = len(request.files) if request is not None else None  # the launches' files: the workers worth starting
        result, specs = add_captured_kernels(
            context.project, machine, context.request.timeout, fresh=context.request.fresh,
            before_program=lambda: prestart(context.workers, context.request.executor, machine, files=files),
            on_progress=progress_line(context))
        context.specs += specs
        return judged(context, result, specs, machine.has_gpu)


def judged(context: RunContext, result: CaptureResult, specs: list[KernelSpec], has_gpu: bool) -> Outcome:
    """The capture's outcome: what it launched, and whether the program's own failure fails the run (a program
    that needs a GPU this machine lacks is the machine's, not the code's)."""
    request = context.project.capture
    assert request is not None
    kernels = len({(s.launch.kernel, s.launch.file) if s.launch else (None, None) for s in specs})
    never = result.never_launched_text()
    how = (f"reused from the capture of {result.started or 'an earlier run'} (the program, its files and the "
           "kernel files unchanged; --fresh runs it again)") if result.reused else \
        f"in {result.seconds:.1f} s" + ("" if result.failure else f"; {result.ended}")  # the failure says it
    detail = (f"{len(specs)} distinct launch(es) of {kernels} kernel(s) {how}"
              + (f"; never launched: {never}" if never else ""))
    if result.outside:
        detail += f"; {len(result.outside)} kernel(s) launched from outside the targets"
    failure = result.failure
    program: dict[str, object] | None = None if failure is None else \
        {"command": result.command, **failure.to_json(), "summary": failure.summary()}
    if result.cut:  # never a pass: what it launched before is still replayed, the coverage is partial
        cut: dict[str, object] = {"command": result.command, "cut": result.cut, "where": result.where,
               "summary": cut_summary(result.cut, result.where)}
        return outcome(FAIL, f"{detail}; {cut_summary(result.cut, result.where)}", result, cut, fails_run=True)
    needs_gpu_here = failure is not None and failure.needs_gpu and not has_gpu
    if not specs:
        files = ", ".join(p.name for p in request.files) if request.library is None else \
            f"the {len(request.files)} kernel file(s) under {request.library.name}/"
        if failure is not None and needs_gpu_here:
            hint = interpreter_route(request.files)
            program = {**(program or {}), "launched_none": True, "hint": hint}
            return outcome(NOT_RUN, f"the program needs a GPU before its first launch and this machine has none: "
                                    f"{failure.summary()}; to validate its kernels here under the interpreter: "
                                    f"{hint} {ROUTE_NOTE}", result, program, not_run_here=True)
        if failure is not None:
            return outcome(ERROR, f"the program failed before launching a kernel of {files}: {failure.summary()}",
                           result, program, fails_run=True)
        said = f"its last output line: {result.last_output}" if result.last_output else ""  # "4 skipped in 0.2s"
        detail = f"no launch of a kernel in {files} was captured; {result.ended}" + (f" ({said})" if said else "")
        if request.command is None:
            detail += ("; module-level benchmarks are not run during a capture: give a command that launches "
                       f"the kernels after `--`: tileiropt run {request.files[0].name} -- <command>")
        program = {"command": result.command, "launched_none": True,
                   "summary": f"it launched no kernel of {files}; {result.ended}" + (f", {said}" if said else "")}
        return outcome(ERROR, detail, result, program, fails_run=True)
    if failure is not None and needs_gpu_here:  # the machine's, not the code's
        return outcome(PASS, f"{detail}; the rest of the program did not run here: it needs a GPU and this machine "
                             f"has none ({failure.summary()})", result, program)
    if failure is not None:  # what it launched before failing is still replayed
        return outcome(FAIL, f"{detail}; the program failed: {failure.summary()}", result, program, fails_run=True)
    return outcome(PASS, detail, result, program)


def outcome(status: str, detail: str, result: CaptureResult, program: dict[str, object] | None, *,
            fails_run: bool = False, not_run_here: bool = False) -> Outcome:
    done = Outcome.of("capture", status, detail, record=result, fails_run=fails_run, not_run_here=not_run_here)
    done.program = program
    return done


def supersede_capture(store: Store) -> None:
    """Remove the capture record (capture.json) an earlier run left in `store`'s folder: this run does not capture,
    and its report must not open with another run's program and launch counts. Only a regular file the tool wrote
    goes; a link, or a file that is not a record of the tool's, is left as it is."""
    path = store.path(CaptureResult)
    try:
        if path.is_file() and not path.is_symlink() and is_record(path.read_text(encoding="utf-8")):
            path.unlink()
    except (OSError, UnicodeDecodeError):
        pass  # not removable here: the report says whose records it holds


def progress_line(context: RunContext) -> Callable[[str], None]:
    """Where the capture's progress line goes: the phase's line on a terminal; in a pipe, a line every 30 s of the
    program's run, the first 30 s after it started (each line's time is the program's: a line counted from the
    phase's start would come as the program starts, after the targets' kernels were found, and say "0s")."""
    printed: list[float] = []  # when the last line was printed; the first: when the program's first line came

    def show(text: str) -> None:
        context.on_event("capture", text)
        console = context.request.console
        now = time.monotonic()
        if not printed:
            printed.append(now)
        if console is not None and not console.is_terminal and now - printed[0] >= 30:
            printed[0] = now
            console.print(f"capture: {text}", markup=False, highlight=False, soft_wrap=True)

    return show
