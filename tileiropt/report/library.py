"""The report's first screen for a library run (`tileiropt run DIR -- COMMAND`): the library's kernels by verdict,
by class and by file launched, and the kernels the command never launched, counted per folder and folded (the
coverage of the library by its tests)."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tileiropt.capture.capture import CaptureResult
from tileiropt.capture.keys import KernelKey
from tileiropt.contract.phase_records import ClassifyRecord
from tileiropt.report.verdict import ATTENTION, BUCKET_LABELS, BUCKETS, EMULATED, PROVEN, READY, UNPROVEN, UNTUNED


@dataclass
class LibraryFile:
    file: str  # relative to the library folder
    defined: list[str]  # every kernel the file defines
    launched: list[str]  # those the command launched
    verdicts: Counter[str] = field(default_factory=Counter)  # bucket -> captured launches (report sections)

    @property
    def never(self) -> list[str]:
        return [k for k in self.defined if k not in self.launched]


@dataclass
class LibrarySummary:
    folder: str
    files: list[LibraryFile]
    classes: Counter[str]  # kernel class -> kernels of the library (launched or not; helpers they call left out)
    cut: bool = False  # the command did not finish: the coverage is partial
    outside: list[str] = field(default_factory=list)  # kernels it launched that no file of the library defines
    made_by_call: list[str] = field(default_factory=list)  # files whose kernels only a call makes (not covered)

    @property
    def defined(self) -> int:
        return sum(len(f.defined) for f in self.files)

    @property
    def launched(self) -> int:
        return sum(len(f.launched) for f in self.files)


def _real(path: str) -> str:
    return os.path.realpath(path)


def library_summary(capture: CaptureResult | None, classify: ClassifyRecord | None,
                    sections: list[Any]) -> LibrarySummary | None:
    """The library's kernels from capture.json's targets and counts, classify.json's classes and each report
    section's verdict; None when the run was not a library run."""
    if capture is None or capture.library is None:
        return None
    folder = capture.library
    counts = capture.counts
    files: dict[str, LibraryFile] = {}
    for key in capture.expected:
        kernel, path = KernelKey.parse(key)
        entry = files.setdefault(_real(path), LibraryFile(file=os.path.relpath(_real(path), _real(folder)),
                                                          defined=[], launched=[]))
        entry.defined.append(kernel)
        if key in counts:
            entry.launched.append(kernel)
    for section in sections:
        listed = files.get(_real(section.path)) if getattr(section, "path", None) else None
        if listed is None or section.verdict is None:
            continue
        listed.verdicts[section.verdict.bucket] += 1
    classes: Counter[str] = Counter()
    for record in classify.kernels if classify is not None else []:
        if isinstance(record, dict) and record.get("is_entry", True) and _real(str(record.get("file", ""))) in files:
            classes[str(record.get("class") or "unknown")] += 1
    return LibrarySummary(folder=folder, files=sorted(files.values(), key=lambda f: f.file), classes=classes,
                          cut=bool(capture.cut),
                          outside=sorted(str(item.get("kernel")) for item in capture.outside.values()
                                         if isinstance(item, dict)),
                          made_by_call=[os.path.relpath(_real(f), _real(folder)) for f in capture.made_by_call])


def library_md(summary: LibrarySummary, launches: int = 0) -> str:
    """The first screen: totals, coverage, verdicts, classes, one row per file whose kernels were launched (a column
    per verdict that occurs); the next steps follow it, then the kernels never launched (`never_launched_md`: a count
    per folder, their names folded one line a folder; every name is in the JSON form too)."""
    name = Path(summary.folder).name
    verdicts: Counter[str] = Counter()
    for f in summary.files:
        verdicts.update(f.verdicts)
    share = 100 * summary.launched / summary.defined if summary.defined else None
    coverage = "n/a" if share is None else "less than 1%" if 0 < share < 1 else f"{share:.0f}%"
    if summary.cut:
        coverage += ", partial: the command was cut before its end"
    seen = f" in {launches} distinct launch(es)" if launches else ""
    lines = [f"**Library `{name}/`**: {summary.defined} kernel(s) in {len(summary.files)} file(s); the command "
             f"launched {summary.launched} of them{seen} ({coverage} of the library); "
             f"{summary.defined - summary.launched} never launched."]
    if summary.made_by_call:
        lines.append(f"Not covered: {len(summary.made_by_call)} file(s) define kernels only inside functions (made "
                     "by a call, which a capture cannot replay from the module): "
                     + ", ".join(f"`{f}`" for f in summary.made_by_call) + ".")
    if summary.outside:
        lines.append(f"It also launched {len(summary.outside)} kernel(s) that no file of the library defines "
                     f"(generated code, other packages; not validated): {', '.join(f'`{k}`' for k in summary.outside)}"
                     " (where each was defined: below).")
    if verdicts:
        lines.append("Captured launches by verdict: " + ", ".join(f"{verdicts[b]} {BUCKET_LABELS[b]}" for b in BUCKETS
                                                                  if verdicts[b]) + " (the next steps: below).")
    if summary.classes:
        lines.append("By class: " + ", ".join(f"{c} {n}" for c, n in summary.classes.most_common()) + ".")
    order = [b for b in (READY, EMULATED, PROVEN, UNTUNED, ATTENTION, UNPROVEN) if verdicts[b]]
    launched = [f for f in summary.files if f.launched]
    if launched:  # the files whose kernels the command launched, by verdict; the rest below, folded
        # kernels, then the captured launches of them by verdict (a kernel launched at 3 shapes counts 3 there)
        rows = ["| file | kernels | launched | " + " | ".join(f"{BUCKET_LABELS[b]} (launches)" for b in order)
                + " | never launched |", "|" + "---|" * (len(order) + 4)]
        for f in launched:
            rows.append(f"| `{f.file}` | {len(f.defined)} | {len(f.launched)} | "
                        + " | ".join(str(f.verdicts[b]) for b in order) + f" | {len(f.never)} |")
        lines.append("\n".join(rows))
    return "\n\n".join(lines)


def never_launched_md(files: list[LibraryFile]) -> str:
    """The kernels the command never launched: a count per folder, then their names folded, one line a folder
    (after the next steps: what was launched comes first)."""
    by_folder: dict[str, list[LibraryFile]] = {}
    for f in files:
        if f.never:
            by_folder.setdefault(os.path.dirname(f.file) or ".", []).append(f)
    total = sum(len(f.never) for f in files)
    untouched = [f for f in files if f.never and not f.launched]
    elsewhere = sum(len(f.never) for f in untouched)
    parts = ([f"{total - elsewhere} in the files above"] if total > elsewhere else []) + \
        ([f"{elsewhere} in {len(untouched)} file(s) none of whose kernels was launched"] if untouched else [])
    counts = ", ".join(f"`{folder}/` {sum(len(f.never) for f in group)}" for folder, group in sorted(by_folder.items()))
    listed = "\n".join(f"- `{folder}/`: " + "; ".join(
        f"`{os.path.basename(f.file)}` " + ", ".join(f"`{k}`" for k in f.never) for f in group)
        for folder, group in sorted(by_folder.items()))
    return (f"Never launched by the command: {total} kernel(s), {', '.join(parts)}; by folder: {counts}.\n\n"
            f"<details><summary>Their names, by folder</summary>\n\n{listed}\n\n</details>")
