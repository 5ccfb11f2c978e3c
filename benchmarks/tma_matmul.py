"""Pointer-load GEMM vs its TMA twin vs torch.matmul (cuBLAS), on an NVIDIA GPU.

    python benchmarks/tma_matmul.py --out tma_matmul.json [--sizes 1024,4096,8192] [--dtype float16]

Applies tileiropt to `examples/matmul.py` in a temporary folder and imports the result with
TILEIROPT_FORCE_TILEIR=1, so the TileIR code is bound whatever the backend: under PTX that
times the TMA twin (device-side descriptors, sm_90+) against the kernel's pointer-load body
(`matmul_kernel_tileir_pointer`), both over the same config list. For each square size, each
kernel is autotuned once (the time is reported apart), its best config is pinned, and
`triton.testing.do_bench` gives the median and the 20th/80th percentiles; TFLOP/s = 2 M N K / t.
Prints a Markdown table and writes the records as JSON to --out. Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUANTILES = [0.5, 0.2, 0.8]


def _fail(message: str) -> None:
    print(f"tma_matmul: {message}", file=sys.stderr)
    sys.exit(2)


def _load_module(folder: Path):
    """examples/matmul.py rewritten by tileiropt, imported with the TileIR code bound."""
    import importlib.util

    from tileiropt.apply.apply import apply_file

    target = folder / "matmul_tileir.py"
    apply_file(ROOT / "examples" / "matmul.py", output=target)
    spec = importlib.util.spec_from_file_location("tma_matmul_bench", target)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tflops(size: int, ms: float) -> float:
    return 2 * size**3 / (ms * 1e-3) / 1e12


def _measure(run, tuner, check) -> dict:
    """Autotune `tuner` through `run` once, pin the config it chose, time `run` with it."""
    import torch
    import triton

    from tileiropt.harness.autotuners import config_label, pinned

    start = time.perf_counter()
    run()
    torch.cuda.synchronize()
    tune_s = time.perf_counter() - start
    best = tuner.best_config
    with pinned(tuner, best):
        error = check(run())
        median, low, high = triton.testing.do_bench(run, quantiles=QUANTILES)
    return {"median_ms": median, "p20_ms": low, "p80_ms": high, "config": config_label(best),
            "autotune_s": round(tune_s, 2), "max_abs_error": error}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file for the records")
    parser.add_argument("--sizes", default="1024,4096,8192")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    options = parser.parse_args()

    try:
        import torch
    except ImportError:
        _fail("needs torch with CUDA")
    if not torch.cuda.is_available():
        _fail("needs an NVIDIA GPU (torch.cuda.is_available() is False)")
    if torch.cuda.get_device_capability()[0] < 9:
        _fail("device-side tensor descriptors (TMA) need sm_90 or newer")
    if os.environ.get("TRITON_INTERPRET") == "1":
        _fail("unset TRITON_INTERPRET: this times compiled kernels")
    os.environ["TILEIROPT_FORCE_TILEIR"] = "1"  # read when the rewritten module is imported
    import triton

    dtype = getattr(torch, options.dtype)
    with tempfile.TemporaryDirectory() as folder:
        module = _load_module(Path(folder))
        backend = triton.runtime.driver.active.get_current_target().backend
        dispatch = module.matmul_kernel
        tma, pointer = module.matmul_kernel_tileir, module.matmul_kernel_tileir_pointer
        rows = []
        for size in [int(s) for s in options.sizes.split(",")]:
            torch.manual_seed(0)
            a = torch.randn(size, size, device="cuda", dtype=dtype)
            b = torch.randn(size, size, device="cuda", dtype=dtype)
            c = torch.empty(size, size, device="cuda", dtype=dtype)
            expected = torch.matmul(a, b)

            def check(out: torch.Tensor, expected: torch.Tensor = expected) -> float:
                return (out.float() - expected.float()).abs().max().item()

            def launch(kernel, c=c, a=a, b=b, size=size):
                def run() -> torch.Tensor:
                    grid = lambda meta: (triton.cdiv(size, meta["BLOCK_SIZE_M"]) * triton.cdiv(size, meta["BLOCK_SIZE_N"]),)  # noqa: E731,E501
                    kernel[grid](a, b, c, size, size, size, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                 c.stride(0), c.stride(1))
                    return c
                return run

            row = {"size": size, "dtype": options.dtype}
            row["pointer"] = _measure(launch(pointer), pointer, check)
            row["tma"] = _measure(launch(dispatch), tma, check)  # the dispatch adds the layout flags
            row["tma"]["path"] = dispatch.last_path
            if dispatch.last_path != "tma":
                _fail(f"the dispatch took the {dispatch.last_path} path: {dispatch.last_reason}")
            median, low, high = triton.testing.do_bench(lambda a=a, b=b: torch.matmul(a, b), quantiles=QUANTILES)
            row["cublas"] = {"median_ms": median, "p20_ms": low, "p80_ms": high}
            for name in ("pointer", "tma", "cublas"):
                row[name]["tflops"] = round(_tflops(size, row[name]["median_ms"]), 1)
            rows.append(row)
            print(f"{size}: cuBLAS {row['cublas']['tflops']}, pointer {row['pointer']['tflops']}, "
                  f"TMA {row['tma']['tflops']} TFLOP/s", file=sys.stderr)

    record = {
        "benchmark": "tma_matmul",
        "kernel": "examples/matmul.py",
        "device": torch.cuda.get_device_name(),
        "capability": list(torch.cuda.get_device_capability()),
        "backend": backend,
        "triton": triton.__version__,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "env": {k: os.environ.get(k) for k in ("ENABLE_TILE", "TILEIROPT_FORCE_TILEIR")},
        "configs": len(tma.configs),
        "rows": rows,
    }
    options.out.write_text(json.dumps(record, indent=2) + "\n")
    print(_table(record))
    return 0


def _table(record: dict) -> str:
    lines = [f"GEMM {record['rows'][0]['dtype'] if record['rows'] else ''} on {record['device']} "
             f"(backend {record['backend']}, triton {record['triton']}), TFLOP/s at the median "
             f"(ms: median [p20, p80]); best of {record['configs']} configs per kernel",
             "",
             "| M=N=K | cuBLAS | pointer loads | TMA twin | TMA / pointer | pointer config | TMA config |",
             "|---|---|---|---|---|---|---|"]
    for row in record["rows"]:
        def cell(name: str, row: dict = row) -> str:
            r = row[name]
            return f"{r['tflops']} ({r['median_ms']:.3f} [{r['p20_ms']:.3f}, {r['p80_ms']:.3f}])"
        ratio = row["pointer"]["median_ms"] / row["tma"]["median_ms"]
        lines.append(f"| {row['size']} | {cell('cublas')} | {cell('pointer')} | {cell('tma')} | {ratio:.2f}x "
                     f"| {row['pointer']['config']} | {row['tma']['config']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
