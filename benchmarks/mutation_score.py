"""The mutation score of the decision code, from mutmut's results (`make mutation` runs both).

Reads `mutmut results --all true` and counts, per decision module, the mutants of the functions that make the
decisions users depend on: killed, survived, and never reached by a test. A survivor is either killed by a new
test or explained as equivalent in docs/mutation.md.

    python benchmarks/mutation_score.py [--survivors]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

# module -> the functions that decide (None: every function of the module)
DECISIONS: dict[str, set[str] | None] = {
    "tileiropt.harness.tileir_surface": {"tileir_code_on", "is_stand_in", "tileir_configs"},  # the gate's answer
    "tileiropt.bench.records": {"paired_ratio", "_order_statistic", "judged"},  # the paired verdict
    "tileiropt.errors": None,  # exit codes, one-line errors, durations
    "tileiropt.report.verdict": None,  # each kernel's one verdict: the report's decisions
    "tileiropt.project.tolerances": None,  # the tolerances a record is held to
    "tileiropt.releases": {"version_key", "known_releases", "newest", "get_release", "nearest_release",
                           "resolve_release", "_folders", "_load"},  # which release a run follows
}
_NAME = re.compile(r"^\s*(?P<module>[\w.]+?)\.x(?:_|ǁ(?P<cls>\w+)ǁ)(?P<function>\w+?)__mutmut_\d+: (?P<status>.+)$")


def results(mutmut: str) -> list[tuple[str, str, str]]:
    """(module, function, status) of every mutant mutmut knows."""
    out = subprocess.run([mutmut, "results", "--all", "true"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        match = _NAME.match(line)
        if match:
            function = f"{match['cls']}.{match['function']}" if match["cls"] else match["function"]
            found.append((match["module"], function, match["status"].strip()))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--survivors", action="store_true", help="list the mutants not killed")
    parser.add_argument("--mutmut", default=str(Path(sys.executable).with_name("mutmut")))
    options = parser.parse_args()
    counts: dict[str, Counter] = defaultdict(Counter)
    survivors = []
    for module, function, status in results(options.mutmut):
        wanted = DECISIONS.get(module, set())
        if wanted is not None and function.split(".")[-1] not in wanted:
            continue
        counts[module][status] += 1
        if status != "killed":
            survivors.append(f"{module}.{function}: {status}")
    print(f"{'module':40} {'mutants':>8} {'killed':>7} {'survived':>9} {'no tests':>9} {'score':>6}")
    total = Counter()
    for module in DECISIONS:
        c = counts.get(module, Counter())
        n = sum(c.values())
        total.update(c)
        score = f"{100 * c['killed'] / n:.0f}%" if n else "-"
        print(f"{module:40} {n:8} {c['killed']:7} {c['survived']:9} {c['no tests']:9} {score:>6}")
    n = sum(total.values())
    print(f"{'all decision code':40} {n:8} {total['killed']:7} {total['survived']:9} {total['no tests']:9} "
          f"{100 * total['killed'] / max(n, 1):5.0f}%")
    if options.survivors:
        print("\n".join(["", "not killed:", *survivors]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
