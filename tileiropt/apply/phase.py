"""The `apply` phase of a run: `<stem>_tileir.py` for each kernel file still going (once per file and optimized
path); apply.json. A file that cannot be rewritten stops its kernels. An unchanged re-run reuses the saved record
when its inputs are this run's and every optimized file is still as it wrote it; `--fresh` writes them again."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tileiropt.apply.apply import ApplyResult, helper_level
from tileiropt.apply.command import FileError, apply_paths
from tileiropt.check.machine import versions
from tileiropt.classify.rules.base import KernelFinding
from tileiropt.contract.context import RunContext, record_of
from tileiropt.contract.outcome import Outcome, Stop
from tileiropt.contract.phase_records import ApplyRecord, ClassifyRecord, apply_from_dict, apply_record, record_dict
from tileiropt.contract.policy import live
from tileiropt.contract.store import Store
from tileiropt.engine.resume import input_key, tool_digest
from tileiropt.harness.provenance import file_digest
from tileiropt.phases import BY_NAME
from tileiropt.schema import ERROR, PASS


def apply_inputs(pairs: list[tuple[Path, Path]], max_configs: int, release: str,
                 hint_autotune: tuple[str, ...] = (), decided: dict[str, dict[str, list[dict]]] | None = None) -> str:
    """What `apply` depends on: each (kernel file's SHA-256, optimized path), the config cap, the release, the
    kernels given a hint-only autotuner, the error findings classify decided for each file (`decided`), the
    tool."""
    return input_key({"pairs": [(str(p), file_digest(p), str(o)) for p, o in pairs], "max_configs": max_configs,
                      "release": release, "hint_autotune": list(hint_autotune), "decided": decided,
                      "tool": tool_digest(), "versions": versions()})


def earlier_apply(store: Store, inputs: str) -> dict[str, object] | None:
    """The saved apply.json when its inputs are `inputs` and every optimized file is still as it wrote it."""
    document = store.reuse(ApplyRecord, inputs)
    if document is None or document.get("dry_run") is not False:
        return None
    outputs = document.get("outputs")
    if not isinstance(outputs, dict) or any(file_digest(Path(path)) != digest for path, digest in outputs.items()):
        return None  # an optimized file changed or went away since: write it again
    return document


def written_before(store: Store) -> dict[str, str]:
    """Optimized path -> SHA-256 of each file the last apply of these artifacts wrote (apply.json's `outputs`),
    whatever its inputs: a file still so is the tool's own, even one with no TileIR change (an exact copy of its
    original, which carries no marker), and may be written again."""
    document = store.document(ApplyRecord)
    outputs = document.get("outputs") if isinstance(document, dict) else None
    return {str(k): str(v) for k, v in outputs.items()} if isinstance(outputs, dict) else {}


class ApplyPhase:
    about = BY_NAME["apply"]
    needs: tuple[str, ...] = ("classify",)  # its verdicts, and the file models it read (`RunContext.models`)

    def wanted(self, context: RunContext) -> bool:
        return True

    def run(self, context: RunContext, earlier: Sequence[Outcome]) -> Outcome:
        """Rewrite each file still going; a kernel classify found an error in gets no TileIR code (classify's
        verdict, its IR check included: apply does not lint again where classify ran)."""
        project, store = context.project, context.store
        going = live(context.specs, earlier)
        pairs = list(dict.fromkeys((spec.path.resolve(), spec.optimized_path.resolve()) for spec in going))
        classified = record_of(earlier, "classify")
        classified = classified if isinstance(classified, ClassifyRecord) else None
        decided = classified.errors([path for path, _ in pairs]) if classified is not None else None
        inputs = apply_inputs(pairs, project.max_configs, context.release.release.version, project.hint_autotune,
                              decided)
        document = None if context.request.fresh else earlier_apply(store, inputs)
        if document is not None:
            record = apply_from_dict(document)
            how = " (reused: the files, the release and the tool unchanged, the outputs as written)"
        else:
            results, errors = self.rewrite(context, pairs, decided)
            release = {"version": context.release.release.version, "origin": context.release.origin}
            record = apply_record(results, errors, dry_run=False, release=release)
            document = {**record_dict(record), "inputs": inputs,
                        "outputs": {str(o): file_digest(o) for _, o in pairs if o.is_file()}}
            how = ""
        store.save(ApplyRecord, document)
        failed = {Path(e.file).resolve(): e.error for e in record.errors}
        stops = [Stop(s.name, "apply", f"apply failed: {failed[s.path.resolve()]}")
                 for s in going if s.path.resolve() in failed]
        if record.errors:
            return Outcome.of("apply", ERROR, f"{len(record.errors)} file(s) could not be rewritten", record=record,
                              stops=stops)
        count = sum(1 for f in record.files if f.output)
        return Outcome.of("apply", PASS, f"{count} optimized file(s) written{how}", record=record, stops=stops)

    @staticmethod
    def rewrite(context: RunContext, pairs: list[tuple[Path, Path]], decided: dict[str, dict[str, list[dict]]] | None
                ) -> tuple[list[ApplyResult], list[FileError]]:
        """Each file rewritten; `decided`: file -> kernel -> its error findings as classify decided them."""
        project = context.project
        library = project.capture.library if project.capture is not None else None
        ours = written_before(context.store)
        results: list[ApplyResult] = []
        errors: list[FileError] = []
        for path, output in pairs:  # once per (file, optimized path): kernels sharing a file may name their own
            if output.is_file() and ours.get(str(output)) == file_digest(output):
                output.unlink()  # as the last apply wrote it (an unchanged copy has no marker): ours to redo
            output.parent.mkdir(parents=True, exist_ok=True)  # outside the project: under artifacts
            level = helper_level(path, library) if library is not None and path.is_relative_to(
                library.resolve()) else None  # a library's files share one helper module
            findings = None if decided is None else {
                kernel: [KernelFinding.from_json(kernel, f) for f in found]
                for kernel, found in decided.get(str(path), {}).items()}
            written, problems = apply_paths([path], output=output, max_configs=project.max_configs,
                                            release=context.release.release, models=context.models,
                                            helper_level=level, hint_autotune=project.hint_autotune,
                                            decided=findings)
            results += written
            errors += problems
        return results, errors
