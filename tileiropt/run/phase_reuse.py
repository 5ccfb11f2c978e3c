"""Reusing a phase's record on an unchanged re-run: `classify` and `apply` (capture, validate and bench keep their
own input keys: capture/capture.py, engine/resume.py). A record is reused when its inputs -- the files' SHA-256,
the release, the tool's source, Triton's and torch's versions -- are those of this run, and, for `apply`, every
optimized file is still as it wrote it; `--fresh` redoes them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tileiropt.check.machine import versions
from tileiropt.engine.resume import input_key, tool_digest
from tileiropt.harness.provenance import file_digest
from tileiropt.records.phases import apply_from_dict, classify_from_dict
from tileiropt.report.artifacts import APPLY_FILE, CLASSIFY_FILE


def _reads_as(read: Callable[[Any], Any], document: dict[str, Any]) -> bool:
    """The document reads as its typed record (`records.phases`): a record of another shape is never reused."""
    try:
        read(document)
    except (TypeError, ValueError, KeyError, RecursionError):
        return False
    return True


def classify_inputs(paths: list[Path], release: str, dtypes: list[str] | None) -> str:
    """What a classification depends on: the files' SHA-256, the release, the dtypes the IR check lowers with,
    the tool's source, Triton's and torch's versions. An unchanged re-run reuses the saved classify.json."""
    return input_key({"files": {str(p): file_digest(p) for p in paths}, "release": release, "dtypes": dtypes,
                      "tool": tool_digest(), "versions": versions()})


def saved(artifacts: Path, name: str) -> Any:
    """The JSON document saved as `<artifacts>/<name>`, or None when there is none or it cannot be read."""
    try:
        return json.loads((Path(artifacts) / name).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None


def earlier_classify(artifacts: Path, inputs: str) -> dict[str, Any] | None:
    """The saved classify.json when its inputs are `inputs` (and it reads as one), else None."""
    document = saved(artifacts, CLASSIFY_FILE)
    if not isinstance(document, dict) or document.get("inputs") != inputs or not _reads_as(classify_from_dict,
                                                                                          document):
        return None
    return document


def apply_inputs(pairs: list[tuple[Path, Path]], max_configs: int, release: str,
                 hint_autotune: tuple[str, ...] = ()) -> str:
    """What `apply` depends on: each (kernel file's SHA-256, optimized path), the config cap, the release, the
    kernels given a hint-only autotuner, the tool."""
    return input_key({"pairs": [(str(p), file_digest(p), str(o)) for p, o in pairs], "max_configs": max_configs,
                      "release": release, "hint_autotune": list(hint_autotune), "tool": tool_digest(),
                      "versions": versions()})


def earlier_apply(artifacts: Path, inputs: str) -> dict[str, Any] | None:
    """The saved apply.json when its inputs are `inputs` and every optimized file is still as it wrote it."""
    document = saved(artifacts, APPLY_FILE)
    if not isinstance(document, dict) or document.get("inputs") != inputs or document.get("dry_run") is not False:
        return None
    outputs = document.get("outputs")
    if not isinstance(outputs, dict) or not _reads_as(apply_from_dict, document):
        return None
    if any(file_digest(Path(path)) != digest for path, digest in outputs.items()):
        return None  # an optimized file changed or went away since: write it again
    return document


def written_before(artifacts: Path) -> dict[str, str]:
    """Optimized path -> SHA-256 of each file the last apply of these artifacts wrote (apply.json's `outputs`),
    whatever its inputs: a file still so is the tool's own, even one with no TileIR change (an exact copy of its
    original, which carries no marker), and may be written again."""
    document = saved(artifacts, APPLY_FILE)
    outputs = document.get("outputs") if isinstance(document, dict) else None
    return {str(k): str(v) for k, v in outputs.items()} if isinstance(outputs, dict) else {}
