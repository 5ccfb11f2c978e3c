"""The project model: the kernel entry points to validate and bench (`KernelSpec`), the program to capture
launches from (`CaptureRequest`), and the project that holds them (`Project`), with their defaults.

`project_file` builds it from a `tileiropt.toml`, `project` from the command line's target.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tileiropt.errors import UserError
from tileiropt.harness.gate import optimized_name
from tileiropt.project.launch import CapturedLaunch
from tileiropt.project.tolerances import tolerances

PROJECT_FILE = "tileiropt.toml"
DEFAULT_SIZES = (128, 1024, 8192)
DEFAULT_ARTIFACTS = ".tileiropt"
DEFAULT_TIMEOUT_S = 300.0


@dataclass
class KernelSpec:
    """One kernel entry point: how to call it, on what, and what it must equal."""

    name: str
    path: Path
    entry: str  # a name in the kernel module ("layer_norm", "LayerNorm.apply") or "pkg.mod:fn"
    reference: str | None
    inputs: dict[str, list[int | str]]  # tensor name -> shape; a str is a named dim
    dims: dict[str, int] = field(default_factory=dict)
    sweep: list[str] = field(default_factory=list)  # named dims set to each bench size
    dtypes: list[dict[str, str]] = field(default_factory=list)  # one dict per dtype variant
    args: dict[str, Any] = field(default_factory=dict)  # non-tensor keyword arguments
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)  # int tensors: [lo, hi)
    atol: float | None = None
    rtol: float | None = None
    flops: str | None = None  # expression over dims and shapes, for TFLOP/s
    bytes: str | None = None  # expression, for GB/s; estimated from tensors when absent
    timeout: float = DEFAULT_TIMEOUT_S
    optimized: Path | None = None  # the transformed file; default <stem>_tileir.py beside path
    sizes: list[int] = field(default_factory=lambda: list(DEFAULT_SIZES))
    seed: int = 0
    module: str | None = None  # the dotted name the kernel file is imported by (in a package), else None
    call: str | None = None  # a call expression over inputs, dims and args; None: entry(**inputs, **args)
    root: Path | None = None  # the project's folder (outputs for kernel files outside it go to `artifacts`)
    artifacts: Path | None = None
    launch: CapturedLaunch | None = None  # a captured launch to replay (entry: the kernel; reference: "original")

    @property
    def optimized_path(self) -> Path:
        """`optimized`, else ``<stem>_tileir.py`` beside the kernel file when it lies in the project's folder;
        a file outside it (an installed package) is not written into: its output goes to the artifacts."""
        if self.optimized is not None:
            return self.optimized
        name = optimized_name(self.path.stem)
        if self.root is None or self.artifacts is None or self.path.is_relative_to(self.root):
            return self.path.with_name(name)
        return self.artifacts.joinpath("optimized", *(self.module or self.path.stem).split(".")[:-1], name)

    def shapes(self, dims: dict[str, int] | None = None) -> dict[str, list[int]]:
        """Concrete shapes with named dims resolved (`dims` overrides the project's)."""
        values = {**self.dims, **(dims or {})}
        return {name: [values[d] if isinstance(d, str) else d for d in shape]
                for name, shape in self.inputs.items()}

    def sweep_dims(self, size: int) -> dict[str, int]:
        """The dims for one bench size: every swept named dim set to `size`."""
        return {name: size for name in self.sweep}

    def tolerances(self, dtypes: dict[str, str]) -> tuple[float, float]:
        """(atol, rtol): the project's, else the default of the loosest float input dtype."""
        return tolerances(dtypes, self.atol, self.rtol)


DEFAULT_MAX_CONFIGS = 16  # TileIR configs `apply` adds per kernel at most (a project's `max_configs`, --max-configs)
DEFAULT_STALL_S = 300.0  # a captured program without output and without a launch this long is stuck


@dataclass
class CaptureRequest:
    """Run a program and replay the launches it makes of the kernels in `files` (see capture/capture.py)."""

    files: list[Path]
    command: list[str] | None = None  # None: the first file as a script
    budget: float | None = None  # seconds the program may run (None: to its end)
    cap: int = 3  # distinct launches kept per kernel
    stall: float | None = DEFAULT_STALL_S  # seconds without output and without a launch: the program is stuck
    cut: str = ""  # once captured: the capture was cut (why and where); what it launched is partial
    library: Path | None = None  # library mode: `files` are the kernel files under this folder (project/library.py)
    spread_gpus: bool = False  # each pytest-xdist worker of the command gets a GPU of its own (--spread-gpus)
    made_by_call: list[Path] = field(default_factory=list)  # library files whose kernels only a call makes


@dataclass
class Project:
    file: Path | None  # None when built from command-line flags
    root: Path
    kernels: list[KernelSpec]
    artifacts: Path
    max_configs: int = DEFAULT_MAX_CONFIGS
    capture: CaptureRequest | None = None
    tileir_version: str | None = None  # the CUDA Tile IR release to target (None: detected, else the newest)
    executor: Any = None  # tileiropt.engine.executors.Executor from the [executor] table (None: this host)
    hint_autotune: tuple[str, ...] = ()  # kernels given a hint-only autotuner, not launch hints (`all`: every one)

    def select(self, names: list[str] | None) -> list[KernelSpec]:
        if not names:
            return list(self.kernels)
        known = {k.name: k for k in self.kernels}
        missing = [n for n in names if n not in known]
        if missing:
            option = next((n for n in missing if n.startswith("-")), None)  # `--kernel --json`: an option taken
            raise UserError(f"no kernel named {', '.join(missing)} in the project"
                            + (f" ({option} was read as --kernel's value)" if option else ""),
                            file=str(self.file) if self.file else None,
                            hint=(f"--kernel NAME {option}, NAME among: " if option else "choose among: ")
                            + ", ".join(known))
        return [known[n] for n in names]
