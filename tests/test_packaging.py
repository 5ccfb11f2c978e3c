"""A non-editable install (`pip install <repo>`, a pre-commit hook's environment) ships every package."""

from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

from shared import ROOT


def test_every_package_is_listed_in_pyproject() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "tileiropt").rglob("__init__.py")}
    assert found - listed == set()
    assert listed - found == {"tileiropt.templates"}  # templates/, mapped by package-dir


def test_pre_commit_hook_definition() -> None:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "- id: tileiropt-classify\n" in text
    assert "  entry: tileiropt classify\n" in text and "  language: python\n" in text
    assert "  types: [python]\n" in text and "  args: [--strict, --quiet]\n" in text
