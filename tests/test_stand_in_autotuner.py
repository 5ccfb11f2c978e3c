"""The interpreter's stand-in for an autotuner (it takes the first config, as nothing can be timed on the CPU) does
to `reset_to_zero` arguments what Triton's autotuner does after tuning a key: zero them before the launch, once per
key. A program leaving such a buffer to its autotuner gets the sums it gets on a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

_PROGRAM = textwrap.dedent('''
    import json, os
    os.environ["TRITON_INTERPRET"] = "1"
    from tileiropt.harness.stand_ins import install_interpreter_device
    install_interpreter_device()
    import torch, triton, triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"],
                     reset_to_zero=["total_ptr"])
    @triton.jit
    def sum_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.atomic_add(total_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))

    def total(x, stale):
        out = torch.full((1,), stale)  # left for the autotuner to zero
        sum_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, out, x.numel())
        return out.item()

    x = torch.ones(100)
    print(json.dumps({"first": total(x, 7.0), "again": total(x, 7.0), "new key": total(torch.ones(50), 7.0)}))
''')


def test_the_stand_in_zeroes_what_the_autotuner_resets_once_per_key(tmp_path: Path) -> None:
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    sums = json.loads(done.stdout.strip().splitlines()[-1])
    # tuned once per key, as on a GPU: zeroed the first time; a cached key is not reset again (Triton's own rule)
    assert sums == {"first": 100.0, "again": 107.0, "new key": 50.0}
