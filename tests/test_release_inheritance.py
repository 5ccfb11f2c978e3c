"""CUDA Tile IR 13.5 as a release file that inherits 13.4, and block pointers as a performance finding."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tileiropt.classify.classify import classify_paths, classify_source
from tileiropt.errors import UserError
from tileiropt.releases import BUNDLED, RELEASES_ENV, get_release, known_releases

HEADER = "import triton\nimport triton.language as tl\n\n"
BLOCKS = HEADER + textwrap.dedent("""\
    @triton.jit
    def blocks(x_ptr, M, N):
        p = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (0, 0), (16, 16), (1, 0))
        tl.store(p, tl.load(p) + 1)
    """)


def test_13_5_inherits_13_4_and_lists_what_it_adds() -> None:
    r134, r135 = get_release("13.4"), get_release("13.5")
    assert r135.inherits == "13.4" and r134.inherits is None
    assert r135.features == r134.features
    assert (r135.occupancy, r135.num_warps, r135.architectures, r135.fallback_variable) == \
        (r134.occupancy, r134.num_warps, r134.architectures, r134.fallback_variable)
    assert [c.what.split(" ")[0] for c in r135.changes] == ["FP8", "calls", "NVLink", "nothing"]
    assert all(c.source == "NVIDIA/cuda-tile v13.5.0 release notes" for c in r135.changes)
    assert r135.sources[0].startswith("NVIDIA/cuda-tile tag v13.5.0") and r135.sources != r134.sources
    assert r135.title.startswith("CUDA Tile IR 13.5")


def test_block_pointers_by_release() -> None:
    found = {version: [(f.code, f.severity, f.message) for f in
                       classify_source(BLOCKS, "k.py", release=get_release(version), ir=None).kernels[0].findings
                       if f.code == "TIR013"]
             for version in ("13.1", "13.4", "13.5")}
    assert found["13.1"] == [("TIR013", "error", "tl.make_block_ptr: block pointers are not supported by "
                                                 "CUDA Tile IR 13.1")]
    for version in ("13.4", "13.5"):
        assert found[version] == [("TIR013", "perf", "tl.make_block_ptr: block pointers are emulated through plain "
                                                     "pointers: correct but slow; tensor descriptors (TMA) are the "
                                                     f"fast path on CUDA Tile IR {version}")]


def test_block_pointers_with_the_ir_check_keep_the_syntax_finding(tmp_path: Path) -> None:
    """The IR check sees tt.make_tensor_ptr on the fork's Triton (3.6 / 3.7) but not on Triton 3.8, whose front end
    emulates block pointers: the syntax finding stands either way, and the IR adds no second one on its line."""
    (tmp_path / "k.py").write_text(BLOCKS, encoding="utf-8")
    (result,) = classify_paths([tmp_path / "k.py"], release=get_release("13.4"), ir=True)
    assert [(f.code, f.severity, f.via, f.line) for f in result.kernels[0].findings if f.code == "TIR013"] == [
        ("TIR013", "perf", "syntax", 6)]


def _user_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    (tmp_path / "mine.toml").write_text(text, encoding="utf-8")
    monkeypatch.setenv(RELEASES_ENV, str(tmp_path))


def test_a_user_release_inherits_and_overrides_one_feature(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _user_release(tmp_path, monkeypatch, 'version = "13.6"\ninherits = "13.5"\nsources = ["mine"]\n'
                                         '[features]\nerf = "supported"\n[tuning]\noccupancy = [1, 16]\n')
    mine = known_releases()["13.6"]
    assert mine.status("erf") == "supported" and get_release("13.5").status("erf") == "unsupported"
    assert mine.occupancy == (1, 16) and mine.num_warps == "hint"  # one key of [tuning] replaced, the rest kept
    assert mine.status("block_pointer") == "partial" and mine.changes == () and mine.sources == ["mine"]


@pytest.mark.parametrize("text, message", [
    ('version = "13.6"\ninherits = "12.0"\nsources = []\n', "inherits '12.0', which is not a known release; "
                                                            "known: 13.1, 13.4, 13.5, 13.6"),
    ('version = "13.6"\ninherits = "13.6"\nsources = []\n', "inherits '13.6' in a loop"),
    ('version = "13.6"\ninherits = "13.5"\nsources = []\n[[changes]]\nwhat = "x"\n',
     "changes[0] must be a table with `what` and `source` strings"),
    ('version = "13.6"\ninherits = "13.5"\nsources = []\n[features.gather]\nstatus = "partial"\nseverity = "fatal"\n',
     "features.gather.severity must be one of error, warning, perf, got 'fatal'"),
])
def test_bad_inheritance_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str,
                                             message: str) -> None:
    _user_release(tmp_path, monkeypatch, text)
    with pytest.raises(UserError) as caught:
        known_releases()
    assert message in str(caught.value) and str(tmp_path / "mine.toml") in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_bundled_13_5_file_writes_only_what_it_adds() -> None:
    text = (BUNDLED / "13.5.toml").read_text(encoding="utf-8")
    assert 'inherits = "13.4"' in text and "[features" not in text and "[tuning]" not in text
