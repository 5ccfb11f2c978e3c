"""The backends a kernel can be validated (or benchmarked) on, and the environment of each.

The backend is fixed when Triton and the kernel module are imported, so each backend runs in
its own subprocess with these variables set before Python starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

FORCE_TILEIR_ENV = "TILEIROPT_FORCE_TILEIR"


@dataclass(frozen=True)
class Backend:
    name: str
    description: str
    env: dict[str, str]  # variables set in the worker
    interpreted: bool  # runs under TRITON_INTERPRET=1 on CPU tensors
    needs_gpu: bool
    optimized_only: bool  # only meaningful for an optimized file (its TileIR code on: forced, or by its own gate)
    expected_backend: str  # what should compile the kernels: "cuda", "tileir", "interpreter"
    emulated: bool = False  # under the tests' emulated nvtriton (tests/emulated_nvtriton): never the TileIR backend

    @property
    def device(self) -> str:
        return "cpu" if self.interpreted else "cuda"


PTX = Backend("ptx", "PTX backend (ENABLE_TILE=0)", {"ENABLE_TILE": "0"},
              interpreted=False, needs_gpu=True, optimized_only=False, expected_backend="cuda")
TILEIR = Backend("tileir", "TileIR backend (ENABLE_TILE=1)", {"ENABLE_TILE": "1"},
                 interpreted=False, needs_gpu=True, optimized_only=False, expected_backend="tileir")
INTERPRET = Backend("interpret", "Triton interpreter (TRITON_INTERPRET=1, CPU tensors)",
                    {"TRITON_INTERPRET": "1", "ENABLE_TILE": "0"},
                    interpreted=True, needs_gpu=False, optimized_only=False, expected_backend="interpreter")
TILEIR_CODE_ON_PTX = Backend("tileir-code-on-ptx", "TileIR code forced on, PTX backend",
                             {"ENABLE_TILE": "0", FORCE_TILEIR_ENV: "1"},
                             interpreted=False, needs_gpu=True, optimized_only=True, expected_backend="cuda")
TILEIR_CODE_ON_INTERPRET = Backend("tileir-code-on-interpret", "TileIR code forced on, Triton interpreter",
                                   {"TRITON_INTERPRET": "1", "ENABLE_TILE": "0", FORCE_TILEIR_ENV: "1"},
                                   interpreted=True, needs_gpu=False, optimized_only=True,
                                   expected_backend="interpreter")

# The TileIR path as nvtriton's Python surface presents it, run under the tests' emulated nvtriton
# (tests/emulated_nvtriton, on PYTHONPATH with ENABLE_TILE=1): the file's own gate turns its TileIR code on and the
# fork's Config takes its hints; standard Triton compiles (PTX, under a "tileir" target) or interprets underneath.
# Its records and rows say "emulated TileIR" and never count as the TileIR backend's.
EMULATOR_SETUP = "tests/emulated_nvtriton on PYTHONPATH with ENABLE_TILE=1"  # how a run gets the emulator
EMULATED_TILEIR = Backend("tileir-emulated", "emulated TileIR (ENABLE_TILE=1 under tileiropt's test emulator, "
                          "standard Triton's PTX compiler underneath; not the TileIR compiler)", {"ENABLE_TILE": "1"},
                          interpreted=False, needs_gpu=True, optimized_only=True, expected_backend="tileir",
                          emulated=True)
EMULATED_TILEIR_ON_INTERPRET = Backend(
    "tileir-emulated-interpret", "emulated TileIR (ENABLE_TILE=1 under tileiropt's test emulator), Triton "
    "interpreter (not the TileIR compiler)", {"ENABLE_TILE": "1", "TRITON_INTERPRET": "1"},
    interpreted=True, needs_gpu=False, optimized_only=True, expected_backend="interpreter", emulated=True)

BACKENDS: dict[str, Backend] = {b.name: b for b in (PTX, TILEIR, INTERPRET, TILEIR_CODE_ON_PTX,
                                                     TILEIR_CODE_ON_INTERPRET, EMULATED_TILEIR,
                                                     EMULATED_TILEIR_ON_INTERPRET)}

# Variables a backend may set; the worker environment starts without them so the parent's
# own settings (say ENABLE_TILE=1 in the user's shell) cannot leak into another backend.
_CONTROLLED = ("ENABLE_TILE", "TRITON_INTERPRET", FORCE_TILEIR_ENV)


def backend_env(backend: Backend, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The full environment of a worker process for `backend`."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _CONTROLLED}
    env.update(backend.env)
    return env


def default_backends(has_gpu: bool, tileir_ready: bool, emulated: bool = False) -> list[str]:
    """The backends `validate` runs when none is named.

    With a GPU: PTX and TileIR (a "not run" record when TileIR is not ready, plus the TileIR code
    forced on under PTX so rewritten bodies are still proven correct). Without one: the
    interpreter, the TileIR code under the interpreter, and TileIR as "not run". Under the
    emulated nvtriton (`emulated`), the emulated TileIR backend runs the TileIR code instead of the
    harness's forcing it on: the file's own gate turns it on there, and it compiles (or is interpreted)
    the same way, so the forced run would only repeat it.
    """
    if has_gpu:
        if tileir_ready:
            return ["ptx", "tileir"]
        return ["ptx", "tileir", EMULATED_TILEIR.name if emulated else "tileir-code-on-ptx"]
    return ["interpret", EMULATED_TILEIR_ON_INTERPRET.name if emulated else "tileir-code-on-interpret", "tileir"]


def emulated_backend(has_gpu: bool) -> Backend:
    """The emulated TileIR backend of a machine with or without a GPU."""
    return EMULATED_TILEIR if has_gpu else EMULATED_TILEIR_ON_INTERPRET
