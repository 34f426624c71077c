"""tide.save and tide.load from Python: dicts of tensors round trip in their
own dtypes with their metadata, and a damaged or bf16 file raises tide's
errors naming the file. Run by ctest's python.pytest."""
import pathlib
import struct

import numpy as np
import pytest

import tide

RT = tide.init() if not tide.initialized() else tide.runtime()


def _file(path, header, data=b""):
    path.write_bytes(struct.pack("<Q", len(header)) + header.encode() + data)
    return path


def test_a_dict_of_tensors_round_trips(tmp_path):
    arrays = {
        "layer.weight": np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32),
        "layer.bias": np.array([0.5, -0.25], dtype=np.float64),
        "labels": np.array([1, -2, 2**31 - 1], dtype=np.int32),
        "scalar": np.array(7.0, dtype=np.float64),
    }
    path = tmp_path / "model.safetensors"
    tide.save(path, {k: tide.from_numpy(v) for k, v in arrays.items()}, metadata={"epoch": "3"})
    back = tide.load(str(path))
    assert sorted(back) == sorted(arrays)
    for name, a in arrays.items():
        t = back[name]
        assert t.dtype == {"float32": "f32", "float64": "f64", "int32": "i32"}[str(a.dtype)], name
        assert t.shape == a.shape, name
        np.testing.assert_array_equal(t.numpy(), a)
    assert tide.load_metadata(path) == {"epoch": "3"}
    tide.save(path, {"x": tide.ones([2])})
    assert tide.load_metadata(path) == {}, "no metadata given: none kept"


def test_refusals_raise_tides_errors_naming_the_file(tmp_path):
    bf16 = _file(tmp_path / "bf16.safetensors", '{"emb":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}', b"\0" * 4)
    with pytest.raises(tide.DTypeError, match="tensor 'emb' is BF16: tide has no bf16 yet"):
        tide.load(bf16)
    cut = _file(tmp_path / "cut.safetensors", '{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}', b"\0" * 9)
    with pytest.raises(tide.FileError, match=r"cut\.safetensors: tensor 'w' ends at byte 16.*truncated"):
        tide.load(cut)
    with pytest.raises(tide.FileError, match="No such file"):
        tide.load(tmp_path / "missing.safetensors")
    with pytest.raises(tide.ValueError, match="__metadata__"):
        tide.save(tmp_path / "x.safetensors", {"__metadata__": tide.ones([1])})
    assert not (tmp_path / "x.safetensors").exists()
    assert isinstance(tide.FileError("x"), tide.Error)


def test_loaded_tensors_are_on_the_device_asked_for(tmp_path):
    path = pathlib.Path(tmp_path) / "d.safetensors"
    tide.save(path, {"a": tide.arange(4.0)})
    t = tide.load(path, device="cpu:0")["a"]
    assert t.device == "cpu:0"
    np.testing.assert_array_equal((t * 2).numpy(), np.arange(4.0, dtype=np.float32) * 2)
