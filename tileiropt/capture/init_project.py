"""`tileiropt init kernel.py`: a project file prefilled from a capture of the kernel file's own run.

Each wrapper in the kernel file that launched a kernel (a function, or an autograd Function's `forward`,
called through `Class.apply`) becomes a `[[kernel]]` table: its tensor arguments as inputs with named
dims (one name per distinct size, shared across tensors), the dtypes seen, its other arguments, the
largest dim as the swept one, and `reference = "original"` (the untransformed file) for the user to
replace with a torch expression. The kernel file itself is never touched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tileiropt.capture.capture import CaptureResult
from tileiropt.capture.keys import KernelKey

_DIM_NAMES = ["M", "N", "K", "L", "P", "Q", "R", "S", "T", "U", "V", "W"]


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def _python(value: object, dims: dict[int, str]) -> str:
    """A captured argument as Python source in the call expression (ints that are dims become their names)."""
    if isinstance(value, dict) and "sequence" in value:
        items = [_python(v, dims) for v in value["sequence"]]
        if value.get("tuple"):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, int) and not isinstance(value, bool) and value in dims:
        return dims[value]
    return repr(value)


def _table(caller: dict[str, Any], kernels: list[str], path: str, used: set[str]) -> list[str] | None:
    tensors: dict[str, dict[str, Any]] = caller["tensors"]
    if not tensors:
        return None
    function = caller["function"]
    parts = function.split(".")
    if caller.get("method") and parts[-1] != "forward":
        return None  # a backward or another method: reached through the forward's entry
    order = list(dict.fromkeys(size for t in tensors.values() for size in t["shape"] if size > 1))
    dims = {size: name for size, name in zip(order, _DIM_NAMES)}  # named in order of first appearance
    sizes = sorted(dims, reverse=True)
    inputs = {name: [dims.get(size, size) for size in t["shape"]] for name, t in tensors.items()}
    dtypes = {name: t["dtype"] for name, t in tensors.items()}
    name = parts[0] if caller.get("method") else function
    base, n = name.lower(), 2
    while name in used:
        name, n = f"{base}_{n}", n + 1
    used.add(name)
    lines = ["", "[[kernel]]", f"name = {_toml(name)}", f"path = {_toml(path)}",
             f"# launches {', '.join(kernels)} (captured from the file's own run)"]
    if caller.get("method"):
        params = [p for p in caller["params"] if p not in ("ctx", "self", "cls")]
        arguments = [p if p in tensors else _python(caller["others"].get(p), dims) for p in params]
        call = f"{parts[0]}.apply({', '.join(arguments)})"
        lines.append(f"call = {_toml(call)}")
    else:
        lines.append(f"entry = {_toml(function)}")
        others = {k: v for k, v in caller["others"].items() if k in caller["params"] and not isinstance(v, dict)}
        if others:
            lines.append(f"args = {_toml(others)}")
    lines.append(f"inputs = {_toml(inputs)}")
    if dims:
        lines.append(f"dims = {_toml({v: k for k, v in dims.items()})}")
        lines.append(f"sweep = {_toml([dims[sizes[0]]])}  # the largest dim; list the dims a bench should sweep")
    lines.append(f"dtypes = {_toml(dtypes if len(set(dtypes.values())) > 1 else next(iter(dtypes.values())))}")
    lines.append('reference = "original"  # the untransformed file; a torch expression also checks the original')
    return lines


def project_text(result: CaptureResult, kernel_file: Path, root: Path) -> str:
    """The project file for `kernel_file` from a capture of its run."""
    path = str(kernel_file.resolve().relative_to(root.resolve())) if kernel_file.resolve().is_relative_to(
        root.resolve()) else str(kernel_file.resolve())
    callers: dict[str, tuple[dict[str, Any], list[str]]] = {}
    for launch in result.launches:
        caller = launch.caller
        if caller:
            entry = callers.setdefault(caller["function"], (caller, []))
            if launch.kernel not in entry[1]:
                entry[1].append(launch.kernel)
    lines = [f"# tileiropt project for {path}, prefilled from a capture of `{' '.join(result.command[1:])}`",
             f"# ({len(result.launches)} distinct launch(es) of {len(result.kernels())} kernel(s); {result.ended}).",
             "# Edit the inputs, dims and reference; `tileiropt run` reads this file.", "",
             "[defaults]", "sizes = [1024, 4096, 16384]"]
    used: set[str] = set()
    tables = [t for caller, kernels in callers.values() if (t := _table(caller, kernels, path, used))]
    for table in tables:
        lines += table
    never = [KernelKey.parse(key).kernel for key in result.never_launched()]
    if never:
        lines += ["", f"# never launched by the run: {', '.join(never)} (give them a [[kernel]] table of your own)"]
    if not tables:
        lines += ["", "# no wrapper of this file launched a kernel with tensor arguments; capture instead:",
                  "[project]", f"capture = {_toml('python ' + path)}", f"capture_files = [{_toml(path)}]"]
    return "\n".join(lines) + "\n"
