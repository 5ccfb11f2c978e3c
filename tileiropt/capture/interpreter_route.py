"""The command that validates a file's kernels without a GPU, where its program needs one before its first launch:
printed by the capture phase, the report and the run's screen alike."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

ROUTE_NOTE = "(the shapes, --dtypes and --args as the function needs them)"


def interpreter_route(files: Sequence[Path]) -> str:
    """The command that validates a file's kernels without a GPU, where its program needs one before any launch:
    the first target file with a module-level function that launches a kernel, that function called on inputs of
    given shapes (`--entry`, `--shapes`), runnable as printed from the current folder."""
    from tileiropt.classify.discovery import scan
    from tileiropt.invocation import tool_words

    chosen, entry, arguments = files[0], "FUNCTION", ["x"]
    for file in files:
        try:
            found = scan(file.read_text(encoding="utf-8", errors="replace"), str(file))
        except Exception:  # unreadable here: the next file, else the command keeps its placeholders
            continue
        holders = [f for f in found.launch_functions.values() if f is not None and found.functions.get(f.name) is f]
        if holders:
            positional = holders[0].args.args
            required = [a.arg for a in positional[: len(positional) - len(holders[0].args.defaults)]]
            chosen, entry = file, holders[0].name
            arguments = [name for name in required if name not in ("self", "cls")] or arguments
            break
    shapes = json.dumps({argument: [1024] for argument in arguments})  # a shape each: the note asks for the real ones
    return shlex.join([*tool_words(), "run", os.path.relpath(chosen), "--entry", entry, "--shapes", shapes])
