"""The transforms `apply` runs on each kernel, in order (`TRANSFORMS`): one class each, with the example it acts on.

A transform reads the kernel (`KernelStep`: its analysis record, class, config space, the release) and what the
transforms before it decided (the twin's name, the kernels the configs go to), and adds to the kernel's plan:
statements for its `if is_tileir():` block, a twin, a change for the report. It writes nothing itself:
`apply.rewrite_module` turns the plans into the file. Each one's `EXAMPLE` is a kernel file it changes; the
golden tests (`tests/test_golden_transforms.py`) hold the file `apply` writes for it when only that transform
runs (and the ones it `NEEDS`), as LibCST's codemod tests hold a codemod's output.

A new transform is a class here, placed in `TRANSFORMS` after what it reads is decided (the twin before the
configs that name it, the configs before the dispatch that binds the name), with its example and golden file.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import ClassVar

import libcst as cst

from tileiropt.apply.locate import Locator
from tileiropt.apply.math_rewrites import Gated, rewrite_math
from tileiropt.apply.plan import (
    FileNames,
    KernelPlan,
    call_form_autotuners,
    hint_autotune_asked,
    in_place_note,
    plan_autotuned,
    plan_call_form_autotuned,
    plan_hint_only,
    plan_launch_hints,
    plan_tma_twin,
)
from tileiropt.apply.spaces import Space
from tileiropt.apply.tma import TmaResult, dispatch_statement
from tileiropt.classify.classify import KernelRecord
from tileiropt.classify.discovery import KernelInfo
from tileiropt.classify.model import FileModel
from tileiropt.contract.phase_records import Change
from tileiropt.harness.gate import twin_names
from tileiropt.releases import Release


@dataclass
class KernelStep:
    """One kernel on its way through `TRANSFORMS`: what every transform reads, and what each decides for the next
    (the twin, the name bound under the gate, the kernels the configs go to, the TMA rewrite)."""

    model: FileModel
    kernel: KernelInfo
    record: KernelRecord
    kernel_class: str
    node: cst.FunctionDef
    space: Space
    cap: int
    release: Release
    names: FileNames  # the file's own module-level names (a new one must not shadow them)
    plan: KernelPlan
    twin: cst.FunctionDef  # the body the TMA rewrite starts from: the kernel's own
    target: str  # the name the kernel is bound to under the gate
    paths: list[str] = field(default_factory=list)  # the kernels the TileIR configs go to
    tma: TmaResult | None = None  # the TMA rewrite's plan, when the kernel gets one
    hint_autotune: tuple[str, ...] = ()  # kernels the user asked a hint-only autotuner for (`all`: every one)

    @property
    def without_autotuner(self) -> bool:
        """An entry kernel its author launches without autotuner: its launch keeps the author's options."""
        return self.kernel.autotune is None and self.kernel.is_entry and not self.call_autotuners

    @functools.cached_property
    def call_autotuners(self) -> list[tuple[str, int]]:
        """The autotuners the file makes over a decorated kernel by a call (`name = triton.autotune(...)(kernel)`);
        a kernel made by assignment has those in its chain (`classify.assigned`)."""
        if self.kernel.autotune is not None or self.kernel.made_by == "assignment":
            return []
        return call_form_autotuners(self.model.scan.tree, self.kernel.name, self.model.module.aliases)

    @property
    def autotune_asked(self) -> bool:
        """The user asked for a hint-only autotuner on this kernel (`plan.hint_autotune_asked`)."""
        return hint_autotune_asked(self.kernel, self.record, self.hint_autotune)


class Transform:
    """One rewrite of a kernel's plan. `EXAMPLE`: a kernel file it changes; `NEEDS`: the transforms that must run
    before it for the example to show it (the golden test runs them with it); `ASKED`: the kernels of the example
    it acts on only when asked (`--hint-autotune`)."""

    name: ClassVar[str]
    EXAMPLE: ClassVar[str]
    NEEDS: ClassVar[tuple[str, ...]] = ()
    ASKED: ClassVar[tuple[str, ...]] = ()

    def __call__(self, step: KernelStep) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<transform {self.name}>"


_IMPORTS = "import triton\nimport triton.language as tl\n\n\n"


class MathInPlace(Transform):
    """exp rewritten as exp2 + mul where the release's compiler does not do it itself: in place, each rewritten call
    behind the gate's constexpr (`(tl.exp2(x * LOG2E) if TILEIR else tl.exp(x))`), never a copy of the kernel."""

    name = "math_in_place"
    EXAMPLE = _IMPORTS + (
        "@triton.jit\n"
        "def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    x = tl.load(x_ptr + offs, mask=offs < n)\n"
        "    tl.store(out_ptr + offs, x / (1 + tl.exp(-x)), mask=offs < n)\n")

    def __call__(self, step: KernelStep) -> None:
        kernel, plan, release = step.kernel, step.plan, step.release
        info = step.model.module
        gated = Gated(step.names.flag, step.names.log2e)
        rewritten, rewrites = rewrite_math(step.node, info.aliases, gated) if release.exp_to_exp2 else (step.node, [])
        if rewrites:
            plan.rewritten = rewritten
            locator = Locator(step.model.node(kernel), step.node, info.aliases)
            for rewrite in rewrites:
                call = locator.tree_call(rewrite.call)
                plan.report.changes.append(Change(call.lineno if call is not None else kernel.first_line,
                                                  f"in place, under the gate: {rewrite.what}",
                                                  f"{release.label()}'s compiler does not rewrite exp into ex2 + "
                                                  "mul itself; with the gate off the call compiles as before"))
        step.paths = [step.target]


class TmaTwin(Transform):
    """A TMA twin of a dot kernel (descriptor loads), the pointer twin beside it; the configs go to both."""

    name = "tma_twin"
    EXAMPLE = _IMPORTS + (
        "@triton.jit\n"
        "def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,\n"
        "                  stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):\n"
        "    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)\n"
        "    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)\n"
        "    offs_k = tl.arange(0, BLOCK_K)\n"
        "    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak\n"
        "    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn\n"
        "    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n"
        "    for k in range(0, tl.cdiv(K, BLOCK_K)):\n"
        "        k_left = K - k * BLOCK_K\n"
        "        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)\n"
        "        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)\n"
        "        acc = tl.dot(a, b, acc)\n"
        "        a_ptrs += BLOCK_K * stride_ak\n"
        "        b_ptrs += BLOCK_K * stride_bk\n"
        "    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn\n"
        "    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))\n"
        "\n\n"
        "def matmul(a, b, c):\n"
        "    M, K = a.shape\n"
        "    N = b.shape[1]\n"
        "    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))\n"
        "    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),\n"
        "                        c.stride(1), BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)\n")

    def __call__(self, step: KernelStep) -> None:
        step.tma = plan_tma_twin(step.model, step.kernel, step.kernel_class, step.twin, step.plan)
        release, kernel = step.release, step.kernel
        if step.tma is not None and step.plan.twin is not None and release.exp_to_exp2:
            # the descriptor form is TileIR's alone: its math in the TileIR form, ungated
            step.plan.twin = rewrite_math(step.plan.twin, step.model.module.aliases, Gated(None, step.names.log2e))[0]
        if release.num_warps == "hint" and kernel.autotune is not None:
            step.plan.report.changes.append(Change(kernel.line, f"num_warps kept in the TileIR configs: "
                                                   f"{release.label()} takes it as a hint", release.num_warps_note))
        if step.tma is not None:
            assert step.plan.report.twin is not None  # plan_tma_twin names the twin it plans
            step.paths = [step.plan.report.twin, twin_names(kernel.name)[1]]
            step.target = step.paths[0]


class AutotunerConfigs(Transform):
    """TileIR configs added to the kernel's own autotuner."""

    name = "autotuner_configs"
    EXAMPLE = _IMPORTS + (
        "@triton.autotune(configs=[triton.Config({'BLOCK': 256}, num_warps=4),\n"
        "                          triton.Config({'BLOCK': 1024}, num_warps=8)], key=['n'])\n"
        "@triton.jit\n"
        "def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(out_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)\n")

    def __call__(self, step: KernelStep) -> None:
        if step.kernel.autotune is not None:
            plan_autotuned(step.kernel, step.model, step.space, step.cap, step.paths, step.plan, step.names)
        elif step.call_autotuners and step.tma is None and step.plan.twin is None:
            plan_call_form_autotuned(step.call_autotuners, step.kernel, step.space, step.cap, step.plan, step.names)


# an elementwise kernel its author launches without autotuner, up to its launch line (the examples add their own)
_ADD_WITHOUT_AUTOTUNER = _IMPORTS + (
        "@triton.jit\n"
        "def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    mask = offs < n\n"
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),\n"
        "             mask=mask)\n"
        "\n\n"
        "def add(x, y, out):\n"
        "    n = out.numel()\n")


class LaunchHints(Transform):
    """The release's starting occupancy for the kernel's class, at each launch site of an entry kernel its author
    launches without autotuner, as a literal under the gate; the author's launch is otherwise kept."""

    name = "launch_hints"
    EXAMPLE = (_ADD_WITHOUT_AUTOTUNER
               + "    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=4)\n")

    def __call__(self, step: KernelStep) -> None:
        if not step.without_autotuner or step.autotune_asked:
            return
        if "all" in step.hint_autotune:  # passed over: it writes its own inputs
            step.plan.report.skipped.append(in_place_note(step.kernel, step.record))
        plan_launch_hints(step.kernel, step.kernel_class, step.release.launch_hint(step.kernel_class),
                          step.release.label(), step.names.flag, step.plan, step.model.scan.tree)


class HintOnlyConfigs(Transform):
    """An autotuner of TileIR hints for an entry kernel that has none (each TMA path its own), only where the user
    asks for one (`--hint-autotune KERNEL`, or `all`): by default the author's launch is kept (`LaunchHints`)."""

    name = "hint_only_configs"
    ASKED = ("add_kernel",)
    EXAMPLE = _ADD_WITHOUT_AUTOTUNER + "    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n"

    def __call__(self, step: KernelStep) -> None:
        if not step.without_autotuner or not step.autotune_asked:
            return
        for path in step.paths:  # before a TMA dispatch: each path gets its own autotuner
            plan_hint_only(step.kernel, step.record, step.space, step.cap, path if step.tma else step.kernel.binding,
                           path, step.plan, step.names)


class Rebinding(Transform):
    """The kernel's module-level name bound, under the gate, to its TMA dispatch or its twin."""

    name = "rebinding"
    EXAMPLE = TmaTwin.EXAMPLE  # the name bound to the dispatch between the TMA twin and the pointer twin
    NEEDS = ("tma_twin",)

    def __call__(self, step: KernelStep) -> None:
        kernel, plan = step.kernel, step.plan
        if step.tma is not None:
            plan.block.append(dispatch_statement(kernel.name, step.paths[0], step.paths[1], step.tma.operands))
        if plan.twin is not None and not any(line.startswith(f"{kernel.name} =") for line in plan.block):
            plan.block.append(f"{kernel.name} = {step.target}")
            plan.report.changes.append(Change(kernel.line, f"{kernel.name} bound to {step.target} under the gate",
                                              "every caller, in this module or another, gets the TileIR body"))


# The transforms of a kernel, in the order they run.
TRANSFORMS: tuple[Transform, ...] = (MathInPlace(), TmaTwin(), AutotunerConfigs(), LaunchHints(), HintOnlyConfigs(),
                                     Rebinding())


def by_name(names: tuple[str, ...] | list[str]) -> tuple[Transform, ...]:
    """The transforms named, in `TRANSFORMS`' order."""
    unknown = set(names) - {t.name for t in TRANSFORMS}
    if unknown:
        raise ValueError(f"no transform named {', '.join(sorted(unknown))}")
    return tuple(t for t in TRANSFORMS if t.name in names)
