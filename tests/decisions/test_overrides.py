"""Overrides: a project's atol/rtol (0 included), a user's release file over the bundled one.

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
GPU-only outcomes are built from records and stubs, so the CPU suite holds them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tileiropt.project.spec import KernelSpec
from tileiropt.project.tolerances import DEFAULT_TOLERANCES, tolerances

# --------------------------------------------------------------------------- overrides


@pytest.mark.parametrize(("atol", "rtol"), [(None, None), (0.0, None), (None, 0.0), (0.0, 0.0), (1e-3, 2e-3)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_project_tolerances_override_the_dtype_default(atol: float | None, rtol: float | None, dtype: str) -> None:
    spec = KernelSpec(name="k", path=Path("k.py"), entry="k", reference="original", inputs={"x": [4]},
                      dtypes=[{"x": dtype}], atol=atol, rtol=rtol)
    default_atol, default_rtol = DEFAULT_TOLERANCES[dtype]
    assert spec.tolerances({"x": dtype}) == (default_atol if atol is None else atol,
                                             default_rtol if rtol is None else rtol)


@pytest.mark.parametrize(("dtypes", "expected"), [
    ({"x": "float16", "y": "bfloat16"}, DEFAULT_TOLERANCES["bfloat16"]),  # the loosest float dtype
    ({"x": "float32", "i": "int32"}, DEFAULT_TOLERANCES["float32"]),
    ({"i": "int64"}, DEFAULT_TOLERANCES["float32"]),  # no float input: float32's
    ({"x": "float8_e5m2", "y": "float16"}, DEFAULT_TOLERANCES["float8_e5m2"]),
])
def test_default_tolerance_is_the_loosest_dtypes(dtypes: dict[str, str], expected: tuple[float, float]) -> None:
    assert tolerances(dtypes) == expected
    assert tolerances(dtypes, 0.0, 0.0) == (0.0, 0.0)


def test_project_atol_zero_survives_loading(tmp_path: Path) -> None:
    from tileiropt.project.spec import load_project

    (tmp_path / "k.py").write_text("def k(x):\n    return x\n", encoding="utf-8")
    (tmp_path / "tileiropt.toml").write_text(
        '[[kernel]]\nname = "k"\npath = "k.py"\nentry = "k"\nreference = "original"\ninputs = { x = [4] }\n'
        'dtypes = "bfloat16"\natol = 0\nrtol = 0\n', encoding="utf-8")
    spec = load_project(tmp_path / "tileiropt.toml").kernels[0]
    assert spec.tolerances({"x": "bfloat16"}) == (0.0, 0.0)


def test_a_users_release_file_wins_over_the_bundled_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.releases import RELEASES_ENV, get_release

    bundled = Path(__import__("tileiropt.releases", fromlist=["x"]).__file__).parent / "13.4.toml"
    text = bundled.read_text(encoding="utf-8")
    assert 'version = "13.4"' in text
    mine = text.replace('title = "', 'title = "my own ', 1)
    assert mine != text
    folder = tmp_path / "releases"
    folder.mkdir()
    (folder / "13.4.toml").write_text(mine, encoding="utf-8")
    assert get_release("13.4").path == str(bundled)
    monkeypatch.setenv(RELEASES_ENV, str(folder))
    chosen = get_release("13.4")
    assert chosen.path == str(folder / "13.4.toml") and chosen.title.startswith("my own ")


