"""The lint's findings in the formats linters share: one line per finding (text), SARIF 2.1.0 for code
scanning, and GitHub Actions workflow annotations -- ruff's `--output-format` conventions.

A finding names a line; its column is that line's first non-blank character (the statement the
finding is about starts there). Paths are written as they were reached from the command line's
PATHs; SARIF turns them into relative URIs (absolute ones under the current folder become relative,
others `file://` URIs).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tileiropt import __version__
from tileiropt.classify.classify import FileResult
from tileiropt.classify.rule_pages import rule_page
from tileiropt.classify.rules import ALL_RULES, Finding, Rule
from tileiropt.errors import UserError
from tileiropt.releases import Choice

OUTPUT_FORMATS = ("text", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"error": "error", "warning": "warning", "perf": "note"}
GITHUB_LEVEL = {"error": "error", "warning": "warning", "perf": "notice"}
INFORMATION_URI = "https://github.com/triton-lang/Triton-to-tile-IR"


def output_format_of(output_format: str | None, json_flag: bool = False) -> str:
    """The format asked for: `--output-format`, or json for `--json` (an alias); text by default."""
    if output_format is None:
        return "json" if json_flag else "text"
    fmt = output_format.strip().lower()
    if fmt not in OUTPUT_FORMATS:
        raise UserError(f"unknown output format {output_format!r}; known: {', '.join(OUTPUT_FORMATS)}",
                        hint="--output-format text|json|sarif|github")
    if json_flag and fmt != "json":
        raise UserError(f"--json asks for json, --output-format for {fmt}", hint="give one of them")
    return fmt


@dataclass(frozen=True)
class Located:
    """One finding with where it is: file (as reached), kernel, line and column (1-based)."""

    file: str
    kernel: str
    column: int
    finding: Finding

    @property
    def line(self) -> int:
        return self.finding.line


def located_findings(results: list[FileResult]) -> list[Located]:
    """Every finding of every kernel, by file, line, column and code."""
    lines: dict[str, list[str]] = {}
    found = []
    for result in results:
        for kernel in result.kernels:
            for finding in kernel.findings:
                if result.file not in lines:
                    lines[result.file] = _read_lines(result.file)
                found.append(Located(result.file, kernel.kernel, _column(lines[result.file], finding.line), finding))
    return sorted(found, key=lambda f: (f.file, f.line, f.column, f.finding.code))


def grouped(items: list[Located]) -> list[tuple[Located, list[int], list[str]]]:
    """One entry per kernel and rule with one fix: its first finding, the lines of all of them (each once, in order)
    and the kernels it holds for. A rule that fires on many lines of a kernel with the same fix reads as one finding
    with its lines listed, and a finding in a helper several kernels call (the same lines, the same message) reads
    once, naming them (the plain, SARIF and GitHub formats keep one line per finding, for editors and CI)."""
    found: dict[tuple[str, str, str, str], tuple[Located, list[int]]] = {}
    for item in items:
        key = (item.file, item.kernel, item.finding.code, item.finding.hint)
        if key in found:
            if item.line not in found[key][1]:
                found[key][1].append(item.line)
        else:
            found[key] = (item, [item.line])
    merged: dict[tuple[str, str, str, str, tuple[int, ...]], tuple[Located, list[int], list[str]]] = {}
    for item, lines in found.values():
        same = (item.file, item.finding.code, item.finding.hint, item.finding.message, tuple(lines))
        if same in merged:
            merged[same][2].append(item.kernel)
        else:
            merged[same] = (item, lines, [item.kernel])
    return list(merged.values())


def lines_text(lines: list[int]) -> str:
    """`L12`, or `L12, L30 and L44` (the first ten, then how many more)."""
    shown = [f"L{n}" for n in sorted(set(lines))]
    if len(shown) > 10:
        return ", ".join(shown[:10]) + f" and {len(shown) - 10} more lines"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" and {shown[-1]}"


def names_text(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c` (the first five, then how many more)."""
    if len(names) > 5:
        return ", ".join(names[:5]) + f" and {len(names) - 5} more"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def _read_lines(path: str) -> list[str]:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _column(lines: list[str], line: int) -> int:
    if not 1 <= line <= len(lines):
        return 1
    text = lines[line - 1]
    return len(text) - len(text.lstrip()) + 1 if text.strip() else 1


# --------------------------------------------------------------------------- text


def text_line(item: Located) -> str:
    """`path:line:col: CODE severity message (fix: hint)`, the line editors and CI logs link."""
    f = item.finding
    return f"{item.file}:{item.line}:{item.column}: {f.code} {f.severity} {f.message} (fix: {f.hint})"


# --------------------------------------------------------------------------- GitHub annotations


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(item: Located) -> str:
    """`::error file=…,line=…,col=…,title=TIR006::…`; warnings and perf findings as warning and notice."""
    f = item.finding
    level = GITHUB_LEVEL[f.severity]
    properties = (f"file={_escape_property(item.file)},line={item.line},col={item.column},"
                  f"title={_escape_property(f.code)}")
    return f"::{level} {properties}::{_escape_data(f'{f.code} {f.message} (fix: {f.hint})')}"


# --------------------------------------------------------------------------- SARIF 2.1.0


def artifact_uri(path: str, base: str | None = None) -> str:
    """A SARIF artifactLocation.uri: relative paths as they are (forward slashes, percent-encoded), absolute
    ones relative to `base` (default: the current folder) when under it, else a file:// URI."""
    base = base or os.getcwd()
    if os.path.isabs(path):
        try:
            relative = os.path.relpath(path, base)
        except ValueError:  # another drive
            relative = None
        if relative is None or relative == ".." or relative.startswith(".." + os.sep):
            return Path(path).as_uri()
        path = relative
    return quote(Path(path).as_posix())


def sarif_rule(rule: Rule) -> dict[str, Any]:
    """A reportingDescriptor: the rule's texts and page, from the same metadata as `tileiropt rule`."""
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": rule.why},
        "help": {"text": f"Fix: {rule.hint}", "markdown": rule_page(rule)},
        "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity]},
        "properties": {"tags": ["tileir", rule.severity]},
    }


def sarif_document(results: list[FileResult], choice: Choice | None = None) -> dict[str, Any]:
    """The SARIF 2.1.0 log of one run: every rule's metadata and every finding with its location."""
    index = {rule.code: i for i, rule in enumerate(ALL_RULES)}
    sarif_results = []
    for item in located_findings(results):
        f = item.finding
        sarif_results.append({
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": SARIF_LEVEL[f.severity],
            "message": {"text": f"{f.message} (fix: {f.hint})"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(item.file)},
                "region": {"startLine": item.line, "startColumn": item.column},
            }}],
            "properties": {"kernel": item.kernel, "severity": f.severity, "via": f.via},
        })
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "tileiropt", "version": __version__, "informationUri": INFORMATION_URI,
                            "rules": [sarif_rule(rule) for rule in ALL_RULES]}},
        "results": sarif_results,
        "columnKind": "unicodeCodePoints",
    }
    if choice is not None:
        run["properties"] = {"tileirRelease": choice.release.version, "releaseOrigin": choice.origin}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
