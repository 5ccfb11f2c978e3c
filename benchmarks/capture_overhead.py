"""What the capture costs the user's program: the same launch-heavy command alone and under the recorder.

Writes a small package of three kernels (one autotuned over four configs, one element-wise, one reduction) and a
driver that launches them over a few sizes, then many times more at sizes already seen (a test suite or a benchmark
repeating itself). Runs the driver alone and under `run_capture` (library mode: to its end), `--repeat` times each,
alternating, and prints as JSON:

- `whole_ratio`: the command's wall time under capture / alone (medians): start-up, the recorder's import and
  the launches together;
- `steady_ratio` and `hook_us_per_launch`: the driver's own timing of its repeated launches (every kernel already
  has its launches): what one more launch costs under the recorder;
- the tool's own cost around the program: classifying the targets, and reading what it recorded.

On a GPU the kernels run through PTX; without one through Triton's interpreter (far slower launches: the ratios
then say little about a GPU, and `--launches` should be small).

    python benchmarks/capture_overhead.py [--launches N] [--repeat R] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNELS = '''
import os

import torch
import triton
import triton.language as tl

# Triton's interpreter cannot benchmark configs (no driver): one config there
CONFIGS = [(1024, 4)] if os.environ.get("TRITON_INTERPRET") == "1" else [(256, 2), (512, 4), (1024, 4), (2048, 8)]


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b, w in CONFIGS], key=["n"])
@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


def axpy(alpha, x, y):
    out = torch.empty_like(x)
    n = x.numel()
    axpy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, alpha, n)
    return out


def relu(x):
    out = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


def row_sum(x):
    out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
    row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
    return out
'''

DRIVER = '''
import json
import sys
import time

import torch

from heavy.ops import axpy, relu, row_sum

device = "cuda" if torch.cuda.is_available() else "cpu"
launches = int(sys.argv[1])
sizes = [1000, 5000, 20000]
inputs = {n: (torch.rand(n, device=device), torch.rand(n, device=device), torch.rand(n // 100, 100, device=device))
          for n in sizes}


def step(n):
    x, y, m = inputs[n]
    axpy(2.0, x, y)
    relu(x)
    row_sum(m)


for n in sizes:  # every kernel's distinct launches (and the autotuner's choice) first
    step(n)
if device == "cuda":
    torch.cuda.synchronize()
started = time.perf_counter()
for i in range(launches // 3):
    step(sizes[i % len(sizes)])
if device == "cuda":
    torch.cuda.synchronize()
print(json.dumps({"loop_s": time.perf_counter() - started, "loop_launches": 3 * (launches // 3)}))
'''


def write_program(folder: Path) -> Path:
    package = folder / "heavy"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(KERNELS)
    (folder / "drive.py").write_text(DRIVER)
    return package / "ops.py"


def _loop(text: str) -> dict:
    line = next(line for line in reversed(text.splitlines()) if line.startswith("{\"loop_s\""))
    return json.loads(line)


def driver(launches: int) -> list[str]:
    """The driver's command, pinned to one CPU core where `taskset` exists (both sides alike: less noise)."""
    pin = ["taskset", "-c", "1"] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 else []
    return [*pin, sys.executable, "drive.py", str(launches)]


def alone(folder: Path, launches: int, interpret: bool) -> tuple[float, dict]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"TRITON_INTERPRET": "1"} if interpret else {})}
    started = time.monotonic()
    done = subprocess.run(driver(launches), cwd=folder, env=env, capture_output=True, text=True, check=True)
    return time.monotonic() - started, _loop(done.stdout)


def captured(folder: Path, ops: Path, launches: int, interpret: bool) -> tuple[float, dict, dict]:
    from tileiropt.capture.capture import run_capture, target_kernels

    started = time.monotonic()
    target_kernels([ops])
    classify_s = time.monotonic() - started
    result = run_capture([ops], driver(launches), interpret=interpret, cwd=folder,
                         stop_when_captured=False, stall=600)
    if result.exit_code != 0:
        raise SystemExit(f"the driver failed under capture: {result.ended}\n{result.stderr_tail}")
    program_s = result.seconds  # from the program's start to its end (the targets were classified before)
    seen = sum(result.counts.values())
    return program_s, _loop(result.stderr_tail), {"classify_s": round(classify_s, 3), "launches_seen": seen,
                                                    "distinct_kept": len(result.launches)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=None, help="repeated launches (default: 30000 on a GPU, "
                                                                    "600 under the interpreter)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import torch

    interpret = not torch.cuda.is_available()
    launches = args.launches or (600 if interpret else 30000)
    with tempfile.TemporaryDirectory(prefix="capture-overhead-") as tmp:
        folder = Path(tmp)
        ops = write_program(folder)
        alone(folder, 30, interpret)  # compile and autotune once: both sides then start from a warm Triton cache
        runs: dict[str, list] = {"alone": [], "captured": []}
        extra = {}
        for _ in range(args.repeat):
            runs["alone"].append(alone(folder, launches, interpret))
            wall, loop, extra = captured(folder, ops, launches, interpret)
            runs["captured"].append((wall, loop))
    whole = {k: statistics.median(w for w, _ in v) for k, v in runs.items()}
    steady = {k: statistics.median(loop["loop_s"] for _, loop in v) for k, v in runs.items()}
    loop_launches = runs["alone"][0][1]["loop_launches"]
    report = {
        "device": "cuda" if not interpret else "cpu (Triton interpreter)",
        "launches_in_loop": loop_launches, "repeat": args.repeat,
        "whole_s": {k: round(v, 3) for k, v in whole.items()},
        "whole_ratio": round(whole["captured"] / whole["alone"], 3),
        "steady_s": {k: round(v, 4) for k, v in steady.items()},
        "steady_ratio": round(steady["captured"] / steady["alone"], 3),
        "hook_us_per_launch": round(1e6 * (steady["captured"] - steady["alone"]) / loop_launches, 2),
        "launch_us_alone": round(1e6 * steady["alone"] / loop_launches, 2),
        **extra,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
