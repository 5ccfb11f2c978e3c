"""Every file `apply` writes for real kernels -- liger-kernel's ops (installed as a dev dependency), our
examples and the package fixtures -- imports with the TileIR code on and with it off wherever the original
imports, no kernel object ends up with two autotuners in its chain, and no autotuner is keyed on a
parameter the kernel uses as an address. Imports run under the interpreter with the tool's stand-ins,
in one subprocess per gate setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from tileiropt.apply.apply import transform_source
from tileiropt.apply.audit import bad_keys, hint_autotunes, import_check
from tileiropt.classify.modules import package_name_for
from tileiropt.errors import UserError

from shared import ROOT, TEST_FIXTURES, write_rewrite

FIXTURE_PACKAGES = TEST_FIXTURES / "real" / "pkgs"


def _sources() -> list[Path]:
    files = sorted((ROOT / "examples").glob("*.py")) + sorted((FIXTURE_PACKAGES / "tuned").glob("*.py"))
    try:
        import liger_kernel
    except ImportError:
        return files
    return files + sorted(p for p in (Path(liger_kernel.__file__).parent / "ops").rglob("*.py")
                          if "_ascend" not in p.parts)  # Ascend NPU kernels: not importable with CUDA Triton


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("generated")
    items = []
    for path in _sources():
        source = path.read_text(encoding="utf-8")
        try:
            result = transform_source(source, str(path))
        except UserError:  # no Triton kernel in the file
            continue
        if not result.changed:
            continue
        dotted, _ = package_name_for(path)
        target = out / f"{len(items)}_{path.stem}_tileir.py"
        write_rewrite(target, result.new_source)
        items.append({"generated": str(target), "original": str(path), "module": dotted,
                      "source": source, "new_source": result.new_source})
    assert len(items) > 20
    return items


@pytest.mark.parametrize("gate", ["1", "0"])
def test_generated_files_import_with_the_gate_on_and_off(generated, gate: str) -> None:
    rows = import_check(generated, gate)
    imported = [row for row in rows if "original_fails" not in row]
    assert len(imported) > 20, rows
    assert [row for row in imported if "error" in row] == []
    assert [(row["original"], row["twice"]) for row in imported if row["twice"]] == []


def test_no_autotuner_is_added_where_the_author_chose_none_unless_asked(generated) -> None:
    assert sum(len(hint_autotunes(item["new_source"])) for item in generated) == 0
    assert sum(item["new_source"].count("if TILEIR else {})") for item in generated) > 20  # launch hints


def test_an_asked_autotuner_is_never_keyed_on_a_pointer_or_wrapped_twice(generated) -> None:
    asked = [(item, transform_source(item["source"], item["original"], hint_autotune=("all",)).new_source)
             for item in generated]
    assert sum(len(hint_autotunes(new_source)) for _, new_source in asked) > 20
    assert [p for item, new_source in asked for p in bad_keys(item["source"], new_source, item["original"])] == []


def test_a_top_level_call_that_raises_only_in_the_generated_file_is_an_import_error(tmp_path: Path) -> None:
    """Workers import scripts with bare top-level calls guarded; the audit still catches a generated file whose
    own module-level code fails where the original's does not."""
    head = "import triton\n\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\n\n"
    (tmp_path / "orig.py").write_text(head + "int('1')\nint('bad')\n")
    (tmp_path / "gen.py").write_text(head + "int(1 / 0)\nint('bad')\n")
    (row,) = import_check([{"generated": str(tmp_path / "gen.py"), "original": str(tmp_path / "orig.py"),
                            "module": None}], "1")
    assert row["error"] == "a top-level call raised only in the generated file: ZeroDivisionError: division by zero"
