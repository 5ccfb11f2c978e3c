"""The typed captured launch: what the recorder builds from real arguments, its JSON form (the wire format of the
launch files, capture.json and the workers' messages) read back to the same launch, and a damaged one refused in a
line naming what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tileiropt.capture.hook import _encode, _tensor
from tileiropt.capture.watch import ProgramWatch
from tileiropt.project.launch import (
    Argument,
    CapturedLaunch,
    LaunchFormatError,
    TensorArg,
    kernel_labels,
)
from tileiropt.validate.cases import Case


def _recorded() -> CapturedLaunch:
    """A launch as the recorder builds it from real arguments: floats, small integers, a buffer of addresses, an
    alias, a scalar, None, a dtype and an object it cannot rebuild."""
    import triton.language as tl

    x = torch.rand(4, 3)
    idx = torch.tensor([5, 7], dtype=torch.int32)
    big = torch.arange(5000, dtype=torch.int64)
    pointers = torch.tensor([x.data_ptr() + 8, 0], dtype=torch.int64)
    aliases: dict[int, str] = {}
    args = tuple(_encode(value, aliases, name) for name, value in [
        ("x", x), ("idx", idx), ("big", big), ("pointers", pointers), ("same_x", x), ("n", 12), ("bias", None),
        ("dtype", torch.float16), ("how", object())])
    constexprs = (_encode(128, aliases, "BLOCK"), _encode(tl.float32, aliases, "ACC"))
    return CapturedLaunch(kernel="k", file="/src/k.py", args=args, constexprs=constexprs,
                          options={"num_warps": 4}, grid=(3, 1, 1), module="k", ordinal=1)


def test_the_recorder_builds_typed_arguments_from_real_values() -> None:
    launch = _recorded()
    kinds = {a.name: a.kind for a in launch.arguments}
    assert kinds == {"x": "tensor", "idx": "tensor", "big": "tensor", "pointers": "tensor", "same_x": "tensor",
                     "n": "value", "bias": "value", "dtype": "torch_dtype", "how": "opaque", "BLOCK": "value",
                     "ACC": "tl_dtype"}
    tensors = launch.tensors()
    assert tensors["x"].shape == (4, 3) and tensors["x"].stride == (3, 1) and tensors["x"].nonnegative is True
    assert tensors["idx"].values == (5, 7) and tensors["big"].range == (0, 4999)
    assert tensors["pointers"].addresses is not None and tensors["pointers"].addresses.targets == ((0, 8), None)
    assert tensors["same_x"].alias == "x"
    assert launch.arguments[6].value is None  # a None argument is a value, not an absent one


def test_the_json_form_reads_back_to_the_same_launch_and_keeps_the_recorder_s_wire_format() -> None:
    launch = _recorded()
    data = json.loads(json.dumps(launch.to_json()))
    assert CapturedLaunch.from_json(data) == launch
    assert data["args"][0] == {"name": "x", "tensor": {"shape": [4, 3], "stride": [3, 1], "dtype": "float32",
                                                        "offset": 0, "extent": 12, "device": "cpu",
                                                        "nonnegative": True}}
    assert data["args"][1]["tensor"]["values"] == [5, 7] and "range" not in data["args"][1]["tensor"]
    assert data["args"][5:8] == [{"name": "n", "value": 12}, {"name": "bias", "value": None},
                                 {"name": "dtype", "torch_dtype": "float16"}]
    assert data["constexprs"] == {"BLOCK": {"value": 128}, "ACC": {"tl_dtype": "fp32"}}
    assert (data["grid"], data["launch"], "atomics" in data) == ([3, 1, 1], 1, False)
    assert launch.with_atomics(True).to_json()["atomics"] is True


def test_a_worker_message_carries_the_launch_in_its_json_form() -> None:
    case = Case(id=0, kernel="k#1", variant="original", path="k.py", entry="k", reference="original", shapes={},
                dtypes={}, atol=0.0, rtol=0.0, launch=_recorded())
    message = json.loads(json.dumps(case.to_json()))
    assert message["launch"]["args"][0]["name"] == "x"
    assert Case.from_json(message) == case


@pytest.mark.parametrize(("data", "says"), [
    ({"kernel": "k"}, "a captured launch has no 'args'"),
    ({"kernel": "k", "args": {}}, "args must be a list"),
    ({"kernel": "k", "args": [{"name": "x", "value": 1, "tensor": {}}]}, "argument 'x' must have one of"),
    ({"kernel": "k", "args": [{"name": "x", "tensor": {"shape": ["4"], "dtype": "float32"}}]},
     "a tensor's shape must be a list of integers"),
    ({"kernel": "k", "args": [{"value": 1}]}, "an argument has no 'name'"),
    ({"kernel": "k", "args": [], "grid": ["a"]}, "a launch's grid must be a list of integers"),
    ({"kernel": "k", "args": [], "constexprs": []}, "constexprs and options must be objects"),
    ([], "a captured launch must be an object"),
])
def test_a_damaged_launch_is_refused_naming_what_is_wrong(data: object, says: str) -> None:
    with pytest.raises(LaunchFormatError, match=says.replace("(", r"\(")):
        CapturedLaunch.from_json(data)


def test_a_damaged_line_in_a_launch_file_is_left_out_and_the_rest_is_read(tmp_path: Path) -> None:
    good = _recorded().to_json()
    lines = [json.dumps({**good, "signature": "s1"}), json.dumps({"kernel": "k", "file": "/src/k.py", "args": 3}),
             json.dumps({**good, "signature": "s2", "grid": [6, 1, 1]})]
    (tmp_path / "launches-11.jsonl").write_text("\n".join(lines) + "\n")
    watch = ProgramWatch(tmp_path, cap=3)
    watch.poll()
    assert [launch.grid for launch in watch.launches] == [(3, 1, 1), (6, 1, 1)]
    assert all(launch.signature is None for launch in watch.launches)  # merged: the distinctness key is dropped


def test_kernels_sharing_a_name_are_labelled_by_their_file() -> None:
    launches = [CapturedLaunch("norm", "/a/rms.py", ()), CapturedLaunch("norm", "/b/layer.py", ()),
                CapturedLaunch("add", "/a/rms.py", ())]
    assert kernel_labels(launches) == ["rms.norm", "layer.norm", "add"]


def test_a_descriptor_s_storage_is_its_base() -> None:
    from tileiropt.project.launch import Descriptor

    base = _tensor(torch.zeros(8, 8), {}, "d")
    argument = Argument("d", "descriptor", descriptor=Descriptor(base, (8, 8), (8, 1), (4, 4)))
    assert argument.storage == base and CapturedLaunch("k", "", (argument,)).tensors() == {"d": base}
    assert Argument.from_json("d", argument.to_json()) == argument
    assert TensorArg.from_json({"shape": [2, 3], "dtype": "int8"}).stride == (3, 1)  # a hand-written one: contiguous


def test_a_launch_passing_its_tensors_by_keyword_gives_its_spec_their_shapes_and_dtypes(tmp_path: Path) -> None:
    # liger's cross-entropy wrapper names every argument of its kernel: the record still says what ran, and the
    # tolerance of the TileIR code on follows the inputs' dtype
    from tileiropt.capture.capture import CaptureResult, capture_specs

    by_keyword = CapturedLaunch.from_json({"kernel": "k", "file": str(tmp_path / "k.py"), "args": [], "constexprs": {
        "X_ptr": {"tensor": {"shape": [4, 8], "stride": [8, 1], "dtype": "bfloat16"}}, "n_cols": {"value": 8}},
        "grid": [4, 1, 1]})
    (spec,) = capture_specs(CaptureResult(command=["python", "x.py"], launches=[by_keyword]), tmp_path,
                            tmp_path / ".tileiropt")
    assert spec.inputs == {"X_ptr": [4, 8]} and spec.dtypes == [{"X_ptr": "bfloat16"}]
