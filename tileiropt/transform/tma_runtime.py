"""The TMA runtime block of a transformed file: a marker line, then the launch-time helpers of
`launch_runtime` (TMA dispatch, 2-CTA guard) copied from their source. `apply` writes it after the gate
into a file that has TMA twins or a 2-CTA guard (with its own `import triton as _tileiropt_triton`).
"""

from __future__ import annotations

from tileiropt.transform import launch_runtime
from tileiropt.transform.copied_source import copied_source

RUNTIME_MARKER = "# --- tileiropt: TMA dispatch"

RUNTIME_SOURCE = (f"\n{RUNTIME_MARKER} (standalone; acts only where the TileIR block below calls it) ---\n"
                  + copied_source(launch_runtime))
