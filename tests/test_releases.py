"""CUDA Tile IR releases as data, the lint and the IR check per release, apply per release, and the
fallback to PTX as a simulated TileIR backend of each release would show it."""

from __future__ import annotations

import os
import shutil
import textwrap
import types
from pathlib import Path

import pytest
import triton
import triton.language as tl

from tileiropt.classify.classify import classify_paths
from tileiropt.errors import UserError
from tileiropt.releases import BUNDLED, RELEASES_ENV, get_release, known_releases, resolve_release

from shared import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "releases"
R131, R134 = get_release("13.1"), get_release("13.4")


def _findings(path: Path, release, **options) -> dict[str, list]:
    """kernel -> [(code, severity, via)] of the release-dependent (TIR0xx) findings."""
    found: dict[str, list] = {}
    for result in classify_paths([path], release=release, **options):
        for kernel in result.kernels:
            found[kernel.kernel] = [(f.code, f.severity, f.via) for f in kernel.findings if f.code < "TIR100"]
    return found


# ----------------------------------------------------------------------------- the data


def test_bundled_releases() -> None:
    assert list(known_releases()) == ["13.1", "13.4", "13.5"]
    assert R131.occupancy == (1, 10) and R134.occupancy == (1, 32)
    assert R131.num_warps == "ignored" and R134.num_warps == "hint"
    assert R131.fallback_variable is None and R134.fallback_variable == "TRITON_TILEIR_RUNTIME_FALLBACK"
    assert not R131.targets("9.0") and R134.targets("9.0") and R131.targets("10.0")
    assert R131.status("block_pointer") == "unsupported" and R134.status("block_pointer") == "partial"
    assert "__nv_tanhf" in R131.feature("extern_elementwise").items("mapped_symbols")
    assert all(r.sources for r in known_releases().values())


def test_a_user_adds_a_release_without_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (BUNDLED / "13.4.toml").read_text().replace('version = "13.4"', 'version = "13.5"')
    text = text.replace('gather = { status = "supported", note = "slow on large tiles" }', 'gather = "unsupported"')
    (tmp_path / "13.5.toml").write_text(text)
    monkeypatch.setenv(RELEASES_ENV, str(tmp_path))
    assert list(known_releases()) == ["13.1", "13.4", "13.5"]
    assert resolve_release().release.version == "13.5"  # the newest known
    assert resolve_release(None, "13.6").origin == "detected 13.6, following 13.5"
    found = _findings(FIXTURES / "features.py", get_release("13.5"), ir=False)
    assert ("TIR002", "error", "syntax") in found["gather_rows"]


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('histogram = "unsupported"\n', ""), "features.histogram is missing"),
    (lambda t: t.replace('histogram = "unsupported"', 'histogram = "maybe"'), "features.histogram.status must be"),
    (lambda t: t.replace("occupancy = [1, 32]", "occupancy = [0, 32]"), "tuning.occupancy must be [low, high]"),
    (lambda t: t.replace('version = "13.4"', 'version = "latest"'), "version must look like 13.4"),
    (lambda t: t + "\n[features.teleport]\nstatus = \"supported\"\n", "unknown feature(s) teleport"),
    (lambda t: t + "\n[[[", "not valid TOML"),
])
def test_bad_release_files_are_one_line_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit,
                                               message: str) -> None:
    (tmp_path / "x.toml").write_text(edit((BUNDLED / "13.4.toml").read_text()))
    monkeypatch.setenv(RELEASES_ENV, str(tmp_path))
    with pytest.raises(UserError) as caught:
        known_releases()
    assert message in str(caught.value) and str(tmp_path / "x.toml") in str(caught.value)
    assert "\n" not in str(caught.value)


def test_unknown_release_and_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"unknown CUDA Tile IR release '12.9'; known: 13.1, 13.4, 13.5"):
        get_release("12.9")
    monkeypatch.setenv(RELEASES_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(UserError, match="which is not a folder"):
        known_releases()


# ----------------------------------------------------------------------------- one fixture file, two releases

# kernel -> (expected under 13.1, expected under 13.4): (code, severity, via) or None. The IR check runs.
TABLE = {
    # the source spelling decides (a Triton 3.8 front end emulates them before the TTIR); 13.4: emulated, slow
    "block_pointer": (("TIR013", "error", "syntax"), ("TIR013", "perf", "syntax")),
    "bf16_atomic_add": (("TIR007", "warning", "ir"), None),  # the pointer's dtype decides: the caller's
    "gather_rows": (("TIR002", "error", "ir"), None),
    "gelu_erf": (("TIR006", "error", "ir"), ("TIR006", "error", "ir")),
    "mapped_tanh": (None, None),
    "unmapped_log1p": (("TIR004", "error", "ir"), ("TIR004", "error", "ir")),
    "early_return": (("TIR014", "error", "ir"), None),
    "counts": (("TIR015", "error", "ir"), ("TIR015", "error", "ir")),
    "wide_offsets": (None, None),  # i64 pointer offsets are fine on every release
    "mapped": (("TIR005", "error", "ir"), None),
    "lock_then_add": (None, None),  # an int32 lock word
}


@pytest.fixture(scope="module")
def both() -> tuple[dict, dict]:
    return _findings(FIXTURES / "features.py", R131), _findings(FIXTURES / "features.py", R134)


@pytest.mark.parametrize("kernel", sorted(TABLE))
def test_same_fixtures_under_both_releases(both, kernel: str) -> None:
    for found, expected in zip(both, TABLE[kernel]):
        if expected is None:
            assert found[kernel] == [], found[kernel]
        else:
            assert expected in found[kernel], found[kernel]


def test_release_named_in_every_message() -> None:
    for result in classify_paths([FIXTURES / "features.py"], release=R134):
        for kernel in result.kernels:
            for finding in kernel.findings:
                if finding.code < "TIR100":
                    assert "CUDA Tile IR 13.4" in finding.message, finding.message


# ----------------------------------------------------------------------------- what only the IR check sees


def test_helper_in_another_module_is_seen_at_the_call() -> None:
    ops = FIXTURES / "pkg" / "ops.py"
    syntax = _findings(ops, R134, ir=False)
    # the erf is in pkg/helpers.py: the syntax-level lint sees it through the import, at the call
    assert syntax["smooth_kernel"] == [("TIR006", "error", "syntax")]
    (result,) = classify_paths([ops], release=R134)
    kernel = next(k for k in result.kernels if k.kernel == "smooth_kernel")
    (finding,) = [f for f in kernel.findings if f.code == "TIR006"]
    assert (finding.via, finding.line, finding.severity) == ("ir", 12, "error")
    assert "helpers.py:7" in finding.message


def test_project_dtypes_make_the_ir_verdict_exact() -> None:
    ops = FIXTURES / "pkg" / "ops.py"
    assumed = _findings(ops, R134)["swap_kernel"]
    assert ("TIR008", "warning", "ir") in assumed  # fp32 lowered; a 16-bit caller would break it
    exact = _findings(ops, R134, dtypes=["fp16"])["swap_kernel"]
    assert ("TIR008", "error", "ir") in exact  # the project says fp16: compare-and-swap on f16 fails


def test_the_ir_check_never_runs_the_file(tmp_path: Path) -> None:
    copy = tmp_path / "hostile.py"
    shutil.copy(FIXTURES / "hostile.py", copy)
    (result,) = classify_paths([copy], release=R134)
    assert not list(tmp_path.glob("RAN_*"))  # the module body and the defaults never ran
    status = {k.kernel: (k.ir["status"], k.ir["reason"], k.ir["needed"]) for k in result.kernels}
    assert status["escapes"][0] == "not-run" and "`.__class__`" in status["escapes"][1]
    assert "outside triton.language" in status["reaches_out"][1]
    assert "`__file__`" in status["scaled"][1]
    assert status["unrolled"][0] == "not-run" and status["unrolled"][2] is False  # not needed
    codes = {k.kernel: [f.code for f in k.findings] for k in result.kernels}
    assert "TIR006" in codes["escapes"]  # not lowered: the syntax findings stand


def test_ir_check_times_out_instead_of_hanging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.classify.ir import lowering

    monkeypatch.setattr(lowering, "TIMEOUT_S", 0.2)
    path = tmp_path / "big.py"
    path.write_text(textwrap.dedent("""
        import triton
        import triton.language as tl

        @triton.jit
        def big(x_ptr):
            for i in tl.static_range(1000000):
                tl.atomic_add(x_ptr + i, 1.0)
        """))
    (result,) = classify_paths([path], release=R131)
    (kernel,) = result.kernels
    assert kernel.ir["status"] == "not-run" and "longer than 0.2 s" in kernel.ir["reason"]


# ----------------------------------------------------------------------------- apply per release


EXP_KERNEL = textwrap.dedent("""
    import triton
    import triton.language as tl

    @triton.jit
    def softplus_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(y_ptr + offs, tl.log(1 + tl.exp(x)), mask=mask)

    def softplus(x, y):
        n = x.numel()
        softplus_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    """)


def test_apply_bounds_occupancy_by_release() -> None:
    from tileiropt.apply.apply import transform_source

    old = transform_source(EXP_KERNEL, "k.py", release=R131, hint_autotune=("all",)).new_source
    new = transform_source(EXP_KERNEL, "k.py", release=R134, hint_autotune=("all",)).new_source
    assert "for occupancy in [1, 2, 4, 8]\n" in old and "for occupancy in [1, 2, 4, 8]\n" not in new
    assert "for occupancy in [1, 2, 4, 8, 16]\n" in new
    assert "tl.exp2(" in old and "tl.exp2(" in new  # neither release documents its own exp rewrite


# ----------------------------------------------------------------------------- fallback, per release


def _simulated_tileir(release: str, fallback: bool):
    """A JIT function whose launch behaves as nvtriton's TileIR backend of `release` does for a kernel
    TileIR cannot compile: 13.1 fails; 13.4 with TRITON_TILEIR_RUNTIME_FALLBACK=1 reruns it on PTX and
    returns the kernel PTX compiled (its kept stages say so)."""

    @triton.jit
    def k(x_ptr):
        tl.store(x_ptr, 1.0)

    def run(*args, **kwargs):
        if get_release(release).fallback_variable and fallback:
            return types.SimpleNamespace(metadata=types.SimpleNamespace(target=None),
                                         asm={"ttir": "", "ttgir": "", "llir": "", "ptx": "", "cubin": b""})
        raise RuntimeError("Triton ttir to tileir ir failed. Some ttir ops cannot be converted to tileir.")

    k.run = run
    return k


@pytest.mark.parametrize("release", ["13.1", "13.4"])
def test_simulated_tileir_backend_fallback(release: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.engine.worker_io import base_provenance
    from tileiropt.harness.backends import TILEIR
    from tileiropt.harness.launches import LaunchRecorder
    from tileiropt.validate.cases import Case
    from tileiropt.validate.worker import CaseRunner

    monkeypatch.setenv("TRITON_TILEIR_RUNTIME_FALLBACK", "1")
    module = types.ModuleType("simulated")
    module.k = _simulated_tileir(release, fallback=True)
    base = base_provenance(TILEIR, release=release)  # the release the run's set-up line names
    assert base.tileir_release == f"CUDA Tile IR {release}"
    assert base.fallback_enabled is (release == "13.4")
    case = Case(id=0, kernel="k", variant="optimized", path="k_tileir.py", entry="k", reference="original",
                shapes={"x": [1]}, dtypes={"x": "float32"}, atol=1e-4, rtol=1e-4)
    if release == "13.1":  # no runtime fallback in this release: the variable is not read, nothing reruns on PTX
        assert get_release(release).fallback_variable is None and base.fallback_enabled is False
        return
    with LaunchRecorder(module) as launches:
        module.k[(1,)](None)
    provenance = CaseRunner(case, TILEIR, False, base, None).provenance(launches)
    assert release == "13.4" and provenance.compiled_backend == "cuda" and provenance.fallback
    from tileiropt.harness.provenance import fallback_note

    note = fallback_note(provenance.compiled_backend, "tileir", provenance)
    assert note.startswith("fallback: compiled by cuda, not tileir (runtime fallback is on: CUDA Tile IR 13.4")


def test_backend_from_kept_stages_and_cache_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tileiropt.harness import launches

    assert launches.compiled_backend(types.SimpleNamespace(asm={"ttir": "", "tileIR": "", "cubin": b""})) == "tileir"
    assert launches.compiled_backend(types.SimpleNamespace(asm={"ttir": "", "ttgir": "", "ptx": ""})) == "cuda"
    (tmp_path / "k.tileIR").write_text("")
    (tmp_path / "k.json").write_text("{}")
    import triton.runtime.cache as cache

    monkeypatch.setattr(cache, "get_cache_manager", lambda key: types.SimpleNamespace(cache_dir=str(tmp_path)))
    assert launches.compiled_backend(types.SimpleNamespace(hash="abc", asm={})) == "tileir"
    os.remove(tmp_path / "k.tileIR")
    (tmp_path / "k.ttgir").write_text("")
    assert launches.compiled_backend(types.SimpleNamespace(hash="abc", asm={})) == "cuda"
