"""Which CUDA Tile IR release a run follows: asked for, detected, or the newest known; releases described by
users; unknown releases.

Each decision users depend on, over every combination of its inputs (or at and around each threshold).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# --------------------------------------------------------------------------- which release a run follows


@pytest.mark.parametrize(("requested", "detected", "version", "origin"), [
    ("13.1", "13.4.0", "13.1", "requested"),  # asked for wins over detected
    (None, "13.4.1", "13.4", "detected 13.4.1"),
    (None, "13.3", "13.1", "detected 13.3, following 13.1"),  # the newest known not newer than it
    (None, "99.0", None, "detected 99.0, following {newest}"),  # newer than any known: the newest known
    (None, "12.0", None, "newest known; none detected"),  # older than every known
    (None, None, None, "newest known; none detected"),
])
def test_release_choice(requested: str | None, detected: str | None, version: str | None, origin: str) -> None:
    from tileiropt.releases import newest, resolve_release

    choice = resolve_release(requested, detected)
    assert choice.release.version == (version or newest().version)
    assert choice.origin == origin.format(newest=newest().version)


def test_users_releases_from_several_folders_and_the_newest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.releases import RELEASES_ENV, get_release, newest

    bundled = Path(get_release("13.4").path)
    folders = []
    for version in ("13.5", "13.6"):
        folder = tmp_path / version
        folder.mkdir()
        (folder / f"{version}.toml").write_text(bundled.read_text(encoding="utf-8").replace(
            'version = "13.4"', f'version = "{version}"', 1), encoding="utf-8")
        folders.append(str(folder))
    monkeypatch.setenv(RELEASES_ENV, os.pathsep.join(folders))
    assert get_release("13.5").version == "13.5" and newest().version == "13.6"


def test_unknown_release_and_bad_folder_are_one_line_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.errors import UserError
    from tileiropt.releases import RELEASES_ENV, get_release, known_releases

    with pytest.raises(UserError, match=r"unknown CUDA Tile IR release '9.9'; known: 13.1, 13.4, 13.5 \(fix: pick a "
                                        r"known release, or describe it in a TOML file in a folder named by "
                                        r"TILEIROPT_RELEASES\)"):
        get_release(" 9.9 ")
    assert get_release(" 13.4 ").version == "13.4"
    assert list(known_releases()) == sorted(known_releases(), key=lambda v: tuple(map(int, v.split("."))))
    monkeypatch.setenv(RELEASES_ENV, str(tmp_path / "missing"))
    with pytest.raises(UserError, match=r"TILEIROPT_RELEASES names .*missing, which is not a folder \(fix: point it "
                                        r"at a folder of release TOML files, or unset it\)"):
        get_release("13.4")
