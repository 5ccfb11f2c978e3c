"""Kernels made by assignment at module level (`k = triton.jit(k)`, then `k = triton.autotune(...)(k)`: see
`tileiropt.classify.assigned`) in apply's plan.

Such a kernel is rewritten as a decorated one is: its math in place inside its def, its launches' hints at the
launches (under whichever name they use), its TileIR configs added to the config list of the autotuner its
assignments apply. Only the place of its `if is_tileir():` block differs: right after the assignment that binds its
outermost object (the block reads the autotuner there: `k.configs = k.configs + [...]`), never after the def, where
the name is still a plain function. An object the file makes over the kernel beside that chain (a second autotuner
over an earlier name) gets no TileIR code, and the report says so.
"""

from __future__ import annotations

from tileiropt.apply.nested import assignment_index
from tileiropt.apply.plan import KernelPlan
from tileiropt.classify.discovery import KernelInfo
from tileiropt.classify.model import FileModel


def follow_assignments(model: FileModel, kernel: KernelInfo, plan: KernelPlan) -> None:
    """For a kernel made by assignment: its TileIR block placed after the last assignment of its chain, and each
    object made beside the chain named as left alone."""
    made = model.scan.made.get(kernel.name)
    if made is None or made.node is not model.node(kernel):
        return
    plan.after_binding = made.top
    plan.after_index = assignment_index(model.scan.tree, made.top, made.statement)
    for name, line in made.side:
        plan.report.skipped.append(
            f"no TileIR code for {name} (line {line}): a second object made over the kernel beside {made.top}, "
            "which gets it")
