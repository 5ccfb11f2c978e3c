"""The `classify` phase of a run: every kernel file's kernels, their class and TileIR lint; classify.json. A
library's files no captured launch needs are classified in the background while the later phases run, and join
the record before the run settles. An unchanged re-run reuses the saved record (its inputs: the files' SHA-256,
the release, the dtypes the IR check lowers with, the tool, Triton's and torch's versions)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tileiropt.check.machine import versions
from tileiropt.classify.background import BackgroundClassify
from tileiropt.classify.classify import FileResult, classify_paths
from tileiropt.classify.command import classify_json
from tileiropt.classify.ir.specialize import ir_dtype
from tileiropt.contract.context import RunContext
from tileiropt.contract.outcome import Outcome, Stop
from tileiropt.contract.phase_records import ClassifyRecord, classify_from_dict
from tileiropt.engine.resume import input_key, tool_digest
from tileiropt.harness.provenance import file_digest
from tileiropt.phases import BY_NAME
from tileiropt.schema import ERROR, PASS


def classify_inputs(paths: list[Path], release: str, dtypes: list[str] | None) -> str:
    """What a classification depends on: the files' SHA-256, the release, the dtypes the IR check lowers with,
    the tool's source, Triton's and torch's versions. An unchanged re-run reuses the saved classify.json."""
    return input_key({"files": {str(p): file_digest(p) for p in paths}, "release": release, "dtypes": dtypes,
                      "tool": tool_digest(), "versions": versions()})


@dataclass(frozen=True)
class Classified:
    """What the run reads of a classification: the files that could not be parsed, and the counts it says."""

    failed: dict[Path, str]  # resolved file -> why it was not parsed
    files: int
    kernels: int
    helpers: int  # kernels only other kernels call

    @classmethod
    def of_results(cls, results: list[FileResult]) -> Classified:
        kernels = [k for r in results for k in r.kernels]
        return cls({Path(r.file).resolve(): r.message or r.status for r in results if r.status == ERROR},
                   len(results), len(kernels), sum(not k.is_entry for k in kernels))

    @classmethod
    def of_record(cls, record: ClassifyRecord) -> Classified:
        """A saved record's (an unchanged re-run's): its kernels are JSON objects."""
        return cls({Path(f.file).resolve(): f.message or f.status for f in record.files if f.status == ERROR},
                   len(record.files), len(record.kernels),
                   sum(1 for k in record.kernels if isinstance(k, dict) and not k.get("is_entry", True)))

    def status(self, how: str) -> tuple[str, str]:
        if self.failed:
            return ERROR, f"{len(self.failed)} file(s) could not be classified{how}"
        called = f" ({self.kernels - self.helpers} launched by the host, {self.helpers} helper(s) they call)" \
            if self.helpers else ""
        return PASS, f"{self.kernels} Triton kernel(s){called} in {self.files} file(s){how}"


class ClassifyPhase:
    about = BY_NAME["classify"]
    needs: tuple[str, ...] = ()

    def wanted(self, context: RunContext) -> bool:
        return True

    def run(self, context: RunContext, earlier: Sequence[Outcome]) -> Outcome:
        project, release = context.project, context.release
        paths = list(dict.fromkeys(s.path for s in context.specs))  # static: even a stopped kernel is classified
        rest: list[Path] = []  # a library's files no captured launch needs: classified beside the later phases
        if project.capture is not None:  # every target file (a whole library), launched or not
            launched = {p.resolve() for p in paths}
            rest = [p for p in dict.fromkeys(project.capture.files) if p.resolve() not in launched]
        # the IR check lowers with the float dtypes the project (or a capture) uses: exact, not assumed
        lowered = {ir_dtype(d) for s in context.specs for variant in s.dtypes for d in variant.values()}
        dtypes = sorted(d for d in lowered if d is not None) or None
        inputs = classify_inputs([*paths, *rest], release.release.version, dtypes)
        found = None if context.request.fresh else context.store.reused(ClassifyRecord, inputs)
        background = None
        if found is not None:
            record = found[1]
            classified, how = Classified.of_record(record), " (reused: the files, the release and the tool unchanged)"
        else:
            first = classify_paths(paths, release=release.release, dtypes=dtypes, models=context.models)
            if rest and paths:
                # no launch of theirs says their dtypes: lowered as `tileiropt classify` lowers a file alone; the
                # whole record, keyed by every file, once the rest is in (`joined`)
                background = BackgroundClassify(rest, release.release, first, inputs)
                inputs = classify_inputs(paths, release.release.version, dtypes)  # until then, these only
            else:
                first += classify_paths(rest, release=release.release, dtypes=dtypes, models=context.models)
            document = {**classify_json(first, release), "inputs": inputs}
            record = classify_from_dict(document)  # the typed record later phases read; its kernels stay JSON
            classified = Classified.of_results(first)
            how = f"; the library's other {len(rest)} file(s) are classified beside the later phases" \
                if background is not None else ""
            context.store.save(ClassifyRecord, document)  # a reused record is on disk already
        stops = [Stop(s.name, "classify", f"cannot classify {s.path.name}: {classified.failed[s.path.resolve()]}")
                 for s in context.specs if s.path.resolve() in classified.failed]
        done = Outcome.of("classify", *classified.status(how), record=record, stops=stops)
        if background is not None:
            done.later = lambda: joined(context, background)
        return done


def joined(context: RunContext, rest: BackgroundClassify) -> tuple[str, str, object]:
    """The library's other files, classified beside the later phases: their results join the launched files' in
    classify.json (its inputs then those of every file); the phase's (status, detail) counting them, and the whole
    record."""
    waited = time.monotonic()
    results = rest.join()
    document = {**classify_json(results, context.release), "inputs": rest.inputs}
    context.store.save(ClassifyRecord, document)
    status, detail = Classified.of_results(results).status(
        f"; {len(results) - len(rest.first)} of the files, those no captured launch needs, classified beside the "
        f"later phases (waited {time.monotonic() - waited:.1f} s for them at the end)")
    return status, detail, classify_from_dict(document)
