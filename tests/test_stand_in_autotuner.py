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


def test_a_package_pre_hook_takes_the_place_of_the_reset_so_nothing_is_zeroed() -> None:
    import triton
    import triton.language as tl

    from tileiropt.harness.autotuners import resets

    def kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
        pass

    configs = [triton.Config({"BLOCK": 16})]
    plain = triton.autotune(configs=configs, key=[], reset_to_zero=["out_ptr"])(triton.jit(kernel))
    own = triton.autotune(configs=configs, key=[], reset_to_zero=["out_ptr"], pre_hook=lambda *a, **k: None)(
        triton.jit(kernel))
    assert resets(plain) == ["out_ptr"]
    assert resets(own) == []  # Triton runs the package's pre_hook instead, and never zeroes out_ptr then


def test_a_pinned_config_built_anew_keeps_the_pre_hook_of_the_config_it_is() -> None:
    from types import SimpleNamespace

    import triton

    from tileiropt.capture.replay import _pinned

    def hook(nargs: dict) -> None:
        return None

    # the configs name different keys: the captured launch binds both, and matches none of them as written
    tuner = SimpleNamespace(configs=[triton.Config({"BLOCK_M": 64}, pre_hook=hook),
                                     triton.Config({"BLOCK_M": 128, "GROUP": 8}, pre_hook=hook)], cache={})
    with _pinned([tuner], {"BLOCK_M": 64, "GROUP": 8, "num_warps": 4}) as left:
        (pinned,) = tuner.configs
        assert pinned.kwargs == {"BLOCK_M": 64, "GROUP": 8} and pinned.pre_hook is hook
        assert "BLOCK_M" not in left and "GROUP" not in left
