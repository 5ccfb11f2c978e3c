"""The `tileiropt` command line: one thin function per subcommand, no logic here.

Each command parses flags, calls its phase module, prints a Rich table (or JSON with --json)
and exits with a code from `tileiropt.errors.ExitCode`. Options shared by several commands are
declared once, as `Annotated` aliases. Each command imports its phase module when it runs: all of
them at start-up would make every `tileiropt` invocation start in 0.53 s instead of 0.06 s.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape

from tileiropt import __version__
from tileiropt.cli.style import show_flags_as_flags
from tileiropt.engine.workers import stopping_on_signals
from tileiropt.errors import ExitCode, UserError, check_seconds
from tileiropt.output import err_console, print_json
from tileiropt.phases import phases_text
from tileiropt.project.model import DEFAULT_MAX_CONFIGS
from tileiropt.verbosity import set_verbosity

show_flags_as_flags()
app = typer.Typer(
    name="tileiropt",
    help="Prepare existing Triton kernels for NVIDIA's CUDA Tile IR backend (ENABLE_TILE=1, Blackwell), "
    "keeping the PTX path unchanged.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
# --json where --output-format chooses the output (classify, rule)
JsonFormatFlag = Annotated[bool, typer.Option("--json", help="Same as --output-format json.")]
LintFormatOpt = Annotated[
    str | None, typer.Option("--output-format", metavar="text|json|sarif|github",
                             help="text (default), json, sarif (SARIF 2.1.0, for code scanning) or github "
                                  "(workflow annotations).", show_default=False)
]
RuleFormatOpt = Annotated[
    str | None, typer.Option("--output-format", metavar="text|json", help="text (Markdown, default) or json.",
                             show_default=False)
]
QuietFlag = Annotated[bool, typer.Option("-q", "--quiet", help="Print only errors and the findings or final result.")]
VerboseFlag = Annotated[bool, typer.Option("-v", "--verbose", help="Print more detail.")]
# The target of validate / bench / run: a project, or one kernel file with the seed-style flags.
TargetArg = Annotated[
    Path | None,
    typer.Argument(help="Project file or folder (default: ./tileiropt.toml), or a kernel .py (run: its own run, "
                        "or the command after `--`, is captured; or --entry/--shapes).",
                   show_default=False),
]
EntryOpt = Annotated[str | None, typer.Option("--entry", help="Wrapper to call (kernel .py target).")]
ShapesOpt = Annotated[str | None, typer.Option("--shapes", help='Input shapes as JSON, e.g. {"x": [32, 512]}.')]
DtypesOpt = Annotated[
    str | None, typer.Option("--dtypes", help='Input dtypes: JSON {"x": "bfloat16"}, a list, or one name.')
]
ArgsOpt = Annotated[str | None, typer.Option("--args", help="Non-tensor keyword arguments as JSON.")]
ReferenceOpt = Annotated[
    str | None, typer.Option("--reference", help='Torch expression, "pkg.mod:fn" or "original"; bench times a '
                                                 'torch or function reference as the baseline.')
]
KernelOpt = Annotated[list[str] | None, typer.Option("--kernel", help="Only this kernel (repeatable).")]
TimeoutOpt = Annotated[
    float | None, typer.Option("--timeout", help="Seconds per record or measurement (default: the project's "
                                                 "timeout).", show_default=False)
]
BackendOpt = Annotated[
    list[str] | None,
    typer.Option("--backend", help="ptx, tileir, interpret, tileir-code-on-ptx, tileir-code-on-interpret "
                                   "(repeatable; default: by machine)", show_default=False),
]
SizesOpt = Annotated[
    list[int] | None, typer.Option("--size", help="Bench size (repeatable; default: the project's sizes).")
]

MAX_CONFIGS_HELP = ("TileIR configs added to a kernel at most: where its own configs crossed with the lever "
                    "combinations would make more, some of them are crossed (those that hold every meta-parameter "
                    "value; a list built by code: its first). Every lever value is tried once whatever the cap.")
HINT_AUTOTUNE_HELP = ("Add a hint-only autotuner to KERNEL (launched without one) instead of literal hints at its "
                      "launch; 'all' for every such kernel that does not write its own inputs. Repeatable.")
HintAutotuneOpt = Annotated[list[str] | None, typer.Option("--hint-autotune", metavar="KERNEL",
                                                           help=HINT_AUTOTUNE_HELP)]
MaxConfigsOpt = Annotated[int | None, typer.Option("--max-configs", min=1, show_default=False,
                                                   help=MAX_CONFIGS_HELP + " Default: the project's max_configs.")]

IncludeOpt = Annotated[list[str] | None, typer.Option(
    "--include", help="Library folder: only files matching this glob (repeatable), e.g. 'ops/*.py'.",
    show_default=False)]
ExcludeOpt = Annotated[list[str] | None, typer.Option(
    "--exclude", help="Library folder: leave out files matching this glob (repeatable).", show_default=False)]

CaptureBudgetOpt = Annotated[
    float | None, typer.Option("--capture-budget", help="Seconds the captured program may run (default: to its "
                                                        "end; a program cut by it is not a pass).",
                               show_default=False)
]
CaptureStallOpt = Annotated[
    float | None, typer.Option("--capture-stall", help="Seconds without output and without a launch after which "
                                                       "the captured program is stuck: its stacks are saved and it is "
                                                       "cut (default 300).", show_default=False)
]

FreshOpt = Annotated[
    bool, typer.Option("--fresh", help="Redo every record (default: reuse those whose inputs did not change).")
]
ExecutorOpt = Annotated[
    str | None, typer.Option("--executor", help="local: every visible GPU of this host (default); slurm: each "
                                                "worker a SLURM job step (srun).", show_default=False)
]
SlurmPartitionOpt = Annotated[str | None, typer.Option("--slurm-partition", help="SLURM partition of the steps.",
                                                       show_default=False)]
SlurmTimeOpt = Annotated[str | None, typer.Option("--slurm-time", help="SLURM time limit per step, e.g. 00:30:00.",
                                                  show_default=False)]
SlurmGpusOpt = Annotated[int | None, typer.Option("--slurm-gpus-per-task", help="GPUs per SLURM step (default: 1 "
                                                  "on a GPU machine, else 0).", show_default=False)]
SlurmTasksOpt = Annotated[int | None, typer.Option("--slurm-tasks", help="SLURM steps at once (default 4).",
                                                   show_default=False)]


def _executor(kind: str | None, partition: str | None, time: str | None, gpus: int | None,
              tasks: int | None) -> dict[str, Any]:
    """The executor options given on the command line (they override the project's [executor] table)."""
    given = {"kind": kind, "partition": partition, "time": time, "gpus_per_task": gpus, "tasks": tasks}
    return {key: value for key, value in given.items() if value is not None}


def _target(target: Path | None, entry: str | None, shapes: str | None, dtypes: str | None, reference: str | None,
            args: str | None, kernel: list[str] | None, tileir_version: str | None, fresh: bool,
            executor: dict[str, Any], as_json: bool) -> Any:
    """The options validate, bench and run share (`project.options.TargetOptions`)."""
    from tileiropt.capture.targets import TargetOptions  # on use: it imports the capture and the machine probe

    return TargetOptions(target=target, entry=entry, shapes=shapes, dtypes=dtypes, reference=reference, args=args,
                         kernels=kernel, tileir_version=tileir_version, fresh=fresh, executor=executor,
                         as_json=as_json)


TileirVersionOpt = Annotated[
    str | None, typer.Option("--tileir-version", metavar="X.Y",
                             help="CUDA Tile IR release to target (default: the one detected, else the newest known).",
                             show_default=False)
]

F = TypeVar("F", bound=Callable[..., Any])


def _budget(value: float | None, flag: str = "--capture-budget") -> float | None:
    return None if value is None else check_seconds(flag, value)


def user_errors(func: F) -> F:
    """Turn a UserError into one line on stderr and its exit code -- never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: object, **kwargs: object) -> Any:
        as_json = bool(kwargs.get("json_output")) or kwargs.get("output_format") == "json"
        try:
            with stopping_on_signals():  # SIGTERM acts as Ctrl-C; either ends every worker first
                return func(*args, **kwargs)
        except UserError as exc:
            fail(str(exc), exc.code, as_json, {"file": exc.file, "line": exc.line, "fix": exc.hint,
                                               "message": exc.message})
        except KeyboardInterrupt:
            fail("interrupted", ExitCode.INTERRUPTED, as_json)
        except OSError as exc:  # a path the system refuses (name too long, permissions, a vanished file)
            where = f"{exc.filename}: " if exc.filename else ""
            fail(f"{where}{exc.strerror or exc} (fix: check the path)", ExitCode.BAD_INPUT, as_json,
                 {"file": exc.filename, "fix": "check the path"})

    return wrapper  # type: ignore[return-value]


def program_after_dashes(ctx: typer.Context, command: str) -> list[str] | None:
    """The program a command runs (`run`, `init`: what follows `--`), or None. Click's leftovers do not tell it from
    stray words before `--` (`tileiropt run a.py b.py -- pytest` would run `b.py pytest`): `main` passes what
    followed `--` as typed (`ctx.obj`), and a word left over before it (or with no `--` at all) is bad input, said
    with its fix: the command takes one target."""
    leftovers = list(ctx.args)
    after = ctx.obj.get("after_dashes") if isinstance(ctx.obj, dict) else None  # None: not started by `main`
    if after is not None and len(leftovers) > len(after):
        stray = leftovers[: len(leftovers) - len(after)]
        where = " before `--`" if after else ""
        raise UserError(f"{command} takes one target; also given{where}: {' '.join(stray)}",
                        hint=f"a program to run goes after `--` (tileiropt {command} FILE -- COMMAND); several "
                             f"kernel files: their folder (tileiropt {command} DIR -- COMMAND) or a project file")
    return leftovers or None


def fail(text: str, code: ExitCode, as_json: bool, fields: dict[str, Any] | None = None) -> None:
    """One line on stderr and, with --json, an error document on stdout; then exit with `code`."""
    say_error(text, int(code), as_json, fields)
    raise typer.Exit(int(code)) from None


def say_error(text: str, code: int, as_json: bool, fields: dict[str, Any] | None = None) -> None:
    """An error as one line on stderr and, with --json, as a document on stdout."""
    err_console.print(f"[bold red]error[/]: {escape(text)}", soft_wrap=True)
    if as_json:
        print_json({"error": {"text": text, "exit_code": code, **(fields or {})}})


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tileiropt {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    quiet: QuietFlag = False,
    verbose: VerboseFlag = False,
) -> None:
    """Phases: check -> classify -> apply -> validate -> bench -> report; `run` does them all."""
    try:
        set_verbosity(quiet, verbose, reset=True)
    except UserError as exc:
        fail(str(exc), exc.code, False)


@app.command()
@user_errors
def check(
    json_output: JsonFlag = False,
    require_tileir: Annotated[
        bool, typer.Option("--require-tileir", help="Exit 1 unless TileIR is ready (for scripts).")
    ] = False,
    tileir_version: TileirVersionOpt = None,
) -> None:
    """Which triton, GPU, backend, tileiras and CUDA Tile IR release this machine has, and whether TileIR is ready."""
    from tileiropt.check.command import check_command

    raise typer.Exit(int(check_command(as_json=json_output, require_tileir=require_tileir,
                                       tileir_version=tileir_version)))


@app.command()
@user_errors
def classify(
    paths: Annotated[list[Path], typer.Argument(help="Kernel files or folders (searched recursively for *.py).")],
    select: Annotated[
        list[str] | None, typer.Option("--select", help="Only these lint codes or prefixes (repeatable, e.g. TIR0).")
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", help="Skip these lint codes or prefixes (repeatable).")
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when an error-severity finding exists.")] = False,
    tileir_version: TileirVersionOpt = None,
    ir: Annotated[
        bool, typer.Option("--ir/--no-ir", help="Lower kernels to TTIR and check the ops against the release.")
    ] = True,
    output_format: LintFormatOpt = None,
    quiet: QuietFlag = False,
    verbose: VerboseFlag = False,
    json_output: JsonFormatFlag = False,
) -> None:
    """Each Triton kernel -> dot / norm / elementwise / reduction, with evidence and TileIR lint.

    Also reads tool.tileiropt in the nearest pyproject.toml; `# noqa: TIR006` silences a line (docs/linting.md)."""
    # on use, not at every start-up (+0.07 s)
    from tileiropt.classify.command import classify_command
    from tileiropt.classify.lint_output import output_format_of

    set_verbosity(quiet, verbose)
    fmt = output_format_of(output_format, json_output)
    raise typer.Exit(classify_command(paths, select=select, ignore=ignore, strict=strict, output_format=fmt,
                                  tileir_version=tileir_version, ir=ir))


@app.command()
@user_errors
def rule(
    code: Annotated[str | None, typer.Argument(help="A rule code (TIR006) or name (erf); none: list the rules.",
                                               show_default=False)] = None,
    all_rules: Annotated[bool, typer.Option("--all", help="Print every rule's page.")] = False,
    output_format: RuleFormatOpt = None,
    json_output: JsonFormatFlag = False,
) -> None:
    """A lint rule's page: what it finds, why, how each release rates it, the fix, an example before and after."""
    from tileiropt.classify.rule_command import rule_command  # on use, not at every start-up (+0.03 s)

    raise typer.Exit(rule_command(code, all_rules=all_rules, output_format=output_format, json_output=json_output))


INIT_HELP = ("Write a commented project-file template (tileiropt.toml) to edit; `init kernel.py [-- command]` "
             "writes one prefilled from a capture of the kernel file's run (entries, shapes, dtypes, dims); "
             "`init DIR -- command` one that captures the command's launches of every kernel of the library "
             "folder DIR.")


@app.command(context_settings={"allow_extra_args": True}, help=INIT_HELP)
@user_errors
def init(
    ctx: typer.Context,
    path: Annotated[
        Path | None,
        typer.Argument(help="File to write (a folder gets tileiropt.toml), or a kernel .py to capture a project "
                            "from. [default: ./tileiropt.toml]", show_default=False),
    ] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Project file to write (with a kernel .py).",
                                                show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
    capture_budget: CaptureBudgetOpt = None,
    include: IncludeOpt = None,
    exclude: ExcludeOpt = None,
    json_output: JsonFlag = False,
) -> None:
    """(INIT_HELP)"""
    from tileiropt.capture.init_command import init_command  # on use, not at every start-up (+0.12 s)

    raise typer.Exit(int(init_command(path, program_after_dashes(ctx, "init"), output=output, force=force,
                                      capture_budget=_budget(capture_budget), include=include, exclude=exclude,
                                      as_json=json_output)))


@app.command()
@user_errors
def apply(
    paths: Annotated[list[Path], typer.Argument(help="Kernel files or folders (searched recursively).")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Output file (one input only).")] = None,
    in_place: Annotated[
        bool, typer.Option("--in-place", help="Rewrite the input itself; the original is kept as <file>.orig.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Print a unified diff of each rewrite and write nothing "
                                                      "(as ruff's --diff).")] = False,
    spaces: Annotated[
        Path | None, typer.Option("--spaces", help="TOML file of TileIR config spaces (see templates/spaces.toml).")
    ] = None,
    max_configs: Annotated[int, typer.Option("--max-configs", min=1, help=MAX_CONFIGS_HELP)] = DEFAULT_MAX_CONFIGS,
    hint_autotune: HintAutotuneOpt = None,
    tileir_version: TileirVersionOpt = None,
    json_output: JsonFlag = False,
) -> None:
    """Write <stem>_tileir.py with TileIR configs and twins behind a backend gate (PTX path unchanged)."""
    from tileiropt.apply.command import apply_command  # on use, not at every start-up (+0.37 s)

    code = apply_command(paths, output=output, in_place=in_place, dry_run=dry_run, diff=diff,
                     json_output=json_output, spaces_file=spaces, max_configs=max_configs,
                     tileir_version=tileir_version, hint_autotune=tuple(hint_autotune or ()))
    raise typer.Exit(code)



@app.command()
@user_errors
def validate(
    target: TargetArg = None,
    entry: EntryOpt = None,
    shapes: ShapesOpt = None,
    dtypes: DtypesOpt = None,
    reference: ReferenceOpt = None,
    args: ArgsOpt = None,
    kernel: KernelOpt = None,
    backend: BackendOpt = None,
    variant: Annotated[
        str | None, typer.Option("--variant", help="original, optimized or both (default: both when the "
                                                   "optimized file exists)", show_default=False)
    ] = None,
    all_configs: Annotated[
        bool, typer.Option("--all-configs/--best-config", help="Every autotune config, or only the one the "
                                                               "autotuner picks (GPU).")
    ] = True,
    timeout: TimeoutOpt = None,
    tileir_version: TileirVersionOpt = None,
    fresh: FreshOpt = False,
    executor: ExecutorOpt = None,
    slurm_partition: SlurmPartitionOpt = None,
    slurm_time: SlurmTimeOpt = None,
    slurm_gpus_per_task: SlurmGpusOpt = None,
    slurm_tasks: SlurmTasksOpt = None,
    json_output: JsonFlag = False,
) -> None:
    """Numerics against the reference, per backend (own subprocess) and per autotune config."""
    from tileiropt.validate.command import validate_command  # on use, not at every start-up (+0.12 s)

    options = _target(target, entry, shapes, dtypes, reference, args, kernel, tileir_version, fresh,
                      _executor(executor, slurm_partition, slurm_time, slurm_gpus_per_task, slurm_tasks), json_output)
    code = validate_command(options, backends=backend, variant=variant, all_configs=all_configs, timeout=timeout)
    raise typer.Exit(int(code))


@app.command()
@user_errors
def bench(
    target: TargetArg = None,
    entry: EntryOpt = None,
    shapes: ShapesOpt = None,
    dtypes: DtypesOpt = None,
    reference: ReferenceOpt = None,
    args: ArgsOpt = None,
    kernel: KernelOpt = None,
    sizes: SizesOpt = None,
    method: Annotated[
        str, typer.Option("--method", help="auto (CUDA graphs when the tensors fit in L2), do_bench or "
                                           "do_bench_cudagraph.")
    ] = "auto",
    warmup_ms: Annotated[float, typer.Option("--warmup-ms", help="do_bench warm-up, in milliseconds.")] = 25.0,
    rep_ms: Annotated[float, typer.Option("--rep-ms", help="Time spent repeating each kernel, in milliseconds.")
                      ] = 100.0,
    timeout: TimeoutOpt = None,
    isolate: Annotated[
        bool, typer.Option("--isolate", help="One worker process per measurement (slower start-up, full isolation).")
    ] = False,
    remeasure_peaks: Annotated[
        bool, typer.Option("--remeasure-peaks", help="Measure the device's copy and matmul peaks again.")
    ] = False,
    rounds: Annotated[
        int, typer.Option("--rounds", help="Paired rounds: original and optimized PTX timed in turns (0: none).")
    ] = 10,
    threshold: Annotated[
        float, typer.Option("--threshold", help="A paired ratio is a real difference when its 95% interval lies "
                                                "beyond 1 +- this (0.05 = 5%).")
    ] = 0.05,
    tileir_version: TileirVersionOpt = None,
    fresh: FreshOpt = False,
    executor: ExecutorOpt = None,
    slurm_partition: SlurmPartitionOpt = None,
    slurm_time: SlurmTimeOpt = None,
    slurm_gpus_per_task: SlurmGpusOpt = None,
    slurm_tasks: SlurmTasksOpt = None,
    json_output: JsonFlag = False,
) -> None:
    """Original vs optimized (PTX), PTX vs TileIR, torch baseline, over the size sweep."""
    # on use, not at every start-up (+0.13 s)
    from tileiropt.bench.command import bench_command
    from tileiropt.bench.run import BenchSettings

    settings = BenchSettings(method=method, warmup_ms=warmup_ms, rep_ms=rep_ms, timeout=timeout, isolate=isolate,
                             sizes=sizes or None, rounds=rounds, threshold=threshold)
    options = _target(target, entry, shapes, dtypes, reference, args, kernel, tileir_version, fresh,
                      _executor(executor, slurm_partition, slurm_time, slurm_gpus_per_task, slurm_tasks), json_output)
    code = bench_command(options, settings=settings, remeasure_peaks=remeasure_peaks)
    raise typer.Exit(int(code))


@app.command()
@user_errors
def report(
    target: Annotated[
        Path | None,
        typer.Argument(help="Artifacts folder, or a project file / folder (default: the current folder).",
                       show_default=False),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="md or json.")] = "md",
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to this file instead of stdout.")] = None,
    json_output: JsonFlag = False,
) -> None:
    """Render the Markdown report (or JSON) from the saved phase records alone."""
    from tileiropt.report.command import report_command  # on use, not at every start-up (+0.16 s)

    raise typer.Exit(int(report_command(target, fmt=fmt, output=output, as_json=json_output)))


RUN_HELP = (
    "Every phase in turn, then report.md in the artifacts folder.\n\nThe phases:\n\n" + phases_text() + "\n\n"
    "`tileiropt run kernel.py` alone runs the file as a script and captures its kernels' launches; "
    "`tileiropt run kernel.py -- pytest tests/test_ops.py` captures them from a command instead, and "
    "`tileiropt run src/mypkg -- pytest tests/` every kernel of a library folder (one without tileiropt.toml). Each "
    "distinct launch is replayed on the original and the optimized kernel: no shapes or reference needed."
)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False}, help=RUN_HELP)
@user_errors
def run(
    ctx: typer.Context,
    target: TargetArg = None,
    entry: EntryOpt = None,
    shapes: ShapesOpt = None,
    dtypes: DtypesOpt = None,
    reference: ReferenceOpt = None,
    args: ArgsOpt = None,
    kernel: KernelOpt = None,
    sizes: SizesOpt = None,
    timeout: TimeoutOpt = None,
    capture_budget: CaptureBudgetOpt = None,
    capture_stall: CaptureStallOpt = None,
    include: IncludeOpt = None,
    exclude: ExcludeOpt = None,
    tileir_version: TileirVersionOpt = None,
    in_place: Annotated[
        bool, typer.Option("--in-place", help="Write each optimized file over its kernel file once it validated and "
                                              "is not slower on PTX; the original is kept as <file>.orig.")
    ] = False,
    fresh: FreshOpt = False,
    max_configs: MaxConfigsOpt = None,
    hint_autotune: Annotated[list[str] | None, typer.Option(
        "--hint-autotune", metavar="KERNEL", help=HINT_AUTOTUNE_HELP + " Added to the project's hint_autotune.")
    ] = None,
    spread_gpus: Annotated[
        bool, typer.Option("--spread-gpus", help="Give each pytest-xdist worker of the command (pytest -n N) a GPU "
                                                 "of its own, by worker index, so the suite spreads over the GPUs.")
    ] = False,
    executor: ExecutorOpt = None,
    slurm_partition: SlurmPartitionOpt = None,
    slurm_time: SlurmTimeOpt = None,
    slurm_gpus_per_task: SlurmGpusOpt = None,
    slurm_tasks: SlurmTasksOpt = None,
    json_output: JsonFlag = False,
) -> None:
    """The phases end to end (RUN_HELP)."""
    from tileiropt.run.command import run_command  # on use, not at every start-up (+0.15 s)

    command = program_after_dashes(ctx, "run")
    options = _target(target, entry, shapes, dtypes, reference, args, kernel, tileir_version, fresh,
                      _executor(executor, slurm_partition, slurm_time, slurm_gpus_per_task, slurm_tasks), json_output)
    code = run_command(options, timeout=timeout, sizes=sizes, capture=command,
                           capture_budget=_budget(capture_budget),
                           capture_stall=_budget(capture_stall, "--capture-stall"), include=include,
                           exclude=exclude, in_place=in_place, spread_gpus=spread_gpus,
                           max_configs=max_configs, hint_autotune=tuple(hint_autotune or ()))
    raise typer.Exit(int(code))


# click's base of every usage error (typer ships click inside itself: reached through a public exception)
_CLICK_ERROR: Any = next(base for base in typer.BadParameter.__mro__
                         if base.__name__ == "ClickException")  # its instances: show(), exit_code


def _own(argv: list[str]) -> list[str]:
    """The tool's own arguments: those before `--` (a capture command's flags are not ours)."""
    return argv[: argv.index("--")] if "--" in argv else argv


def _command_at(argv: list[str]) -> int | None:
    """Where the command's name is among the tool's own arguments."""
    names = {info.name or (info.callback.__name__ if info.callback else "") for info in app.registered_commands}
    return next((i for i, arg in enumerate(_own(argv)) if arg in names), None)


def _wants_json(argv: list[str]) -> bool:
    own = _own(argv)
    asked = [b for a, b in zip(own, own[1:], strict=False) if a == "--output-format"]
    return "--json" in own or "--output-format=json" in own or "json" in asked


def _command_named(argv: list[str]) -> str:
    """`tileiropt <command>` as the arguments name it (click gives some usage errors no context to read it from)."""
    at = _command_at(argv)
    return "tileiropt" if at is None else f"tileiropt {argv[at]}"


def json_after_command(argv: list[str]) -> list[str]:
    """`tileiropt --json run k.py` as `tileiropt run --json k.py`: `--json` written before the command is the
    command's own flag (every command that prints a result takes it), as `-q` and `-v` are read before it."""
    at = _command_at(argv)
    if at is None or "--json" not in argv[:at]:
        return argv
    before = [arg for arg in argv[:at] if arg != "--json"]
    return [*before, argv[at], "--json", *argv[at + 1:]]


def main() -> None:
    try:
        argv = sys.argv[1:]
        typed = {"after_dashes": argv[argv.index("--") + 1:] if "--" in argv else []}  # `program_after_dashes`
        code = app(args=json_after_command(argv), standalone_mode=False, obj=typed)
    except typer.Abort:
        err_console.print("[bold red]error[/]: interrupted")
        code = int(ExitCode.INTERRUPTED)
    except _CLICK_ERROR as exc:  # bad flags or arguments: one line, as every error, and with --json a document
        code = exc.exit_code
        context = getattr(exc, "ctx", None)
        command = context.command_path if context is not None else _command_named(sys.argv[1:])
        fix = f"see `{command} -h`"
        say_error(f"{command}: {exc.format_message()} (fix: {fix})", code, _wants_json(sys.argv[1:]),
                  {"file": None, "line": None, "fix": fix, "message": exc.format_message()})
    sys.exit(code if isinstance(code, int) else 0)


__all__ = ["app", "main", "user_errors", "JsonFlag", "ExitCode"]
