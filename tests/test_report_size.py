"""The report of a library run stays readable at library size: its first file holds the first screen (the
library's files launched, by verdict, the next steps, the kernels never launched counted per folder and folded one
line a folder), the summary table and the environment; each captured launch's sections go to a second file."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tileiropt.report.library import LibraryFile, LibrarySummary
from tileiropt.report.markdown import kernels_path, render_kernels_file, render_markdown, write_markdown
from tileiropt.report.model import Benchmark, Classification, KernelReport, Report, Section, Verdict
from tileiropt.report.verdict import ATTENTION, PROVEN, UNTUNED, KernelVerdict
from tileiropt.schema import NOT_RUN, PASS

NOT_TUNED = "compatible with TileIR, not tuned: no TileIR hint at its launch: its launches pass their own occupancy"


def launch(file: str, kernel: str, number: int, verdict: KernelVerdict) -> KernelReport:
    """One captured launch's section, as `build` fills it for a launch whose TileIR code passed on the
    interpreter."""
    passed = Verdict(PASS, backend="interpret", backend_description="Triton interpreter", max_difference=0.0,
                     configs=2)
    return KernelReport(
        name=f"{kernel}#{number}", path=f"/lib/pkg/{file}", optimized_path=f"/out/{file}", stopped=None,
        classification=Classification(True, kernel_type="norm-like", strategy="High occupancy",
                                      kernels=[{"kernel": kernel, "line": 10, "class": "norm", "confidence": 0.9}]),
        compatibility=passed, transformations=Section(True, lines=["occupancy 2 at its launch"], count=1),
        tileir_validation=Verdict(NOT_RUN, reason="not run: nvtriton is not installed"),
        tileir_code=passed, optimized_ptx=None,
        benchmark=Benchmark(False, reason="not run: no GPU"), output=Section(True, lines=[f"File: {file}"]),
        verdict=verdict)


def library_report(files: int, kernels_per_file: int, folders: int, launched_files: int, launches: int) -> Report:
    """A library of `files` files in `folders` folders; the command launched one kernel of each of the first
    `launched_files` files, `launches` distinct launches in all, with the three verdicts a library run gives."""
    names = [f"sub{index % folders}/ops_{index}.py" for index in range(files)]
    library = [LibraryFile(file=name, defined=[f"kernel_{k}_of_{i}" for k in range(kernels_per_file)],
                           launched=[], verdicts=Counter()) for i, name in enumerate(names)]
    verdicts = [KernelVerdict(PROVEN, "TileIR code proven correct with the Triton interpreter (max difference "
                                      "0.0e+00)", proven_on="Triton interpreter"),
                KernelVerdict(UNTUNED, NOT_TUNED, proven_on="Triton interpreter"),
                KernelVerdict(ATTENTION, "the TileIR code gives wrong results (Triton interpreter): BLOCK=64: max "
                                         "difference 1.0e+00")]
    sections = []
    for index in range(launches):
        entry = library[index % launched_files]
        kernel = entry.defined[0]
        if kernel not in entry.launched:
            entry.launched.append(kernel)
        verdict = verdicts[index % len(verdicts)]
        entry.verdicts[verdict.bucket] += 1
        sections.append(launch(entry.file, kernel, index // launched_files + 1, verdict))
    summary = LibrarySummary(folder="/lib/pkg", files=library, classes=Counter(norm=files * kernels_per_file))
    return Report(artifacts="/lib/.tileiropt", environment={}, run=None, kernels=sections, problems={},
                  library=summary)


@pytest.mark.parametrize(("files", "kernels_per_file", "folders", "launched_files", "launches", "most"), [
    (768, 2, 40, 20, 40, 300),  # a 1,536-kernel operator library, 40 captured launches
    (1100, 1, 60, 3, 3, 250),  # a package of 1,100 kernel modules, 3 kernels launched
])
def test_a_library_report_fits_its_line_budget(files: int, kernels_per_file: int, folders: int,
                                               launched_files: int, launches: int, most: int) -> None:
    report = library_report(files, kernels_per_file, folders, launched_files, launches)
    text = render_markdown(report, kernels_file="report-kernels.md")
    assert len(text.splitlines()) <= most
    never = files * kernels_per_file - launched_files
    assert f"{never} never launched." in text.splitlines()[2]
    assert "(0% of the library)" not in text  # 3 of 1,100: "less than 1%"
    assert f"Never launched by the command: {never} kernel(s)" in text
    assert text.count("\n- `sub") == folders  # their names folded, one line a folder
    assert text.index("Needs attention") < text.index("Never launched by the command")  # what to do, first
    assert "## TileIR Optimization" not in text  # each launch's sections: in the second file
    sections = render_kernels_file(report)
    assert sections.count("## TileIR Optimization: ") == launches


def test_a_reason_shared_by_many_launches_is_said_once() -> None:
    text = render_markdown(library_report(40, 1, 4, 10, 40), kernels_file="report-kernels.md")
    assert text.count(NOT_TUNED) == 1
    untuned = next(line for line in text.splitlines() if NOT_TUNED in line)
    assert untuned.startswith("- **kernel_0_of_1** (2 launches), **kernel_0_of_4** (2 launches), ")


def test_a_library_report_is_written_as_two_files(tmp_path: Path) -> None:
    path = tmp_path / "report.md"
    written = write_markdown(library_report(10, 1, 2, 4, 6), path)
    assert written == [path, kernels_path(path)] and kernels_path(path).name == "report-kernels.md"
    assert "[`report-kernels.md`](report-kernels.md)" in path.read_text()
    assert kernels_path(path).read_text().count("## TileIR Optimization: ") == 6
