"""tide's safetensors files against the `safetensors` package (from PyPI,
which scripts/setup.sh installs; skipped, saying so, where it is missing):
it reads what tide writes (numpy API, and torch's where python3-torch is
installed) and tide reads what it writes. With TIDE_TEST_TRAINER, the C++
trainer's checkpoint loads into the PyTorch model of the same widths.
Run by ctest's python.safetensors_interop:
  PYTHONPATH=build/python python3 -m pytest -q -rs tests/python/interop_safetensors.py"""
import os
import subprocess
import tempfile

import numpy as np
import pytest

safetensors = pytest.importorskip(
    "safetensors", reason="the safetensors package is not installed (scripts/setup.sh installs it from PyPI)")
from safetensors import safe_open  # noqa: E402
import safetensors.numpy as st_numpy  # noqa: E402

import tide  # noqa: E402

RT = tide.init() if not tide.initialized() else tide.runtime()

ARRAYS = {
    "w": np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32),
    "b": np.array([1e-300, -2.5, np.pi]),
    "n": np.array([[1, -7], [2**31 - 1, -2**31]], dtype=np.int32),
    "s": np.array(0.25, dtype=np.float32),
}


def test_the_package_reads_tides_files(tmp_path):
    path = str(tmp_path / "tide.safetensors")
    tide.save(path, {k: tide.from_numpy(v) for k, v in ARRAYS.items()}, metadata={"who": "tide", "step": "9"})
    back = st_numpy.load_file(path)
    assert sorted(back) == sorted(ARRAYS)
    for name, a in ARRAYS.items():
        assert back[name].dtype == a.dtype and back[name].shape == a.shape, name
        np.testing.assert_array_equal(back[name], a)
    with safe_open(path, framework="numpy") as f:
        assert f.metadata() == {"who": "tide", "step": "9"}


def test_tide_reads_the_packages_files_by_name(tmp_path):
    path = str(tmp_path / "numpy.safetensors")
    written = dict(ARRAYS, steps=np.array([3, -4, 2**40], dtype=np.int64))
    st_numpy.save_file(written, path, metadata={"format": "np"})
    back = tide.load(path)
    assert sorted(back) == sorted(written)
    for name, a in written.items():
        np.testing.assert_array_equal(back[name].numpy(), a)
    assert back["steps"].dtype == "i64"
    assert tide.load_metadata(path) == {"format": "np"}
    st_numpy.save_file({"h": np.ones(3, dtype=np.float16)}, path)
    with pytest.raises(tide.DTypeError, match="tensor 'h' is F16: tide has no f16 yet"):
        tide.load(path)


def test_torch_reads_tides_files_and_tide_reads_torchs(tmp_path):
    torch = pytest.importorskip("torch", reason="python3-torch is not installed")
    import safetensors.torch as st_torch
    path = str(tmp_path / "t.safetensors")
    tide.save(path, {k: tide.from_numpy(v) for k, v in ARRAYS.items()})
    back = st_torch.load_file(path)
    assert back["w"].dtype == torch.float32 and back["b"].dtype == torch.float64 and back["n"].dtype == torch.int32
    for name, a in ARRAYS.items():
        np.testing.assert_array_equal(back[name].numpy(), a)
    st_torch.save_file({"x": torch.arange(6, dtype=torch.float64).reshape(2, 3)}, path)
    np.testing.assert_array_equal(tide.load(path)["x"].numpy(), np.arange(6.0).reshape(2, 3))


def test_the_trainers_checkpoint_is_a_state_dict():
    trainer = os.environ.get("TIDE_TEST_TRAINER")
    if not trainer:
        pytest.skip("TIDE_TEST_TRAINER (the C++ trainer) not given")
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([trainer, "--max-steps", "2", "--hidden", "16,8", "--dtype", "f64", "--checkpoint", d,
                            "--progress", "lines"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        weights = st_numpy.load_file(os.path.join(d, "checkpoint.safetensors"))
        state = st_numpy.load_file(os.path.join(d, "optimizer.safetensors"))
    # nn.Sequential(Linear, ReLU, Linear, ReLU, Linear)'s names, in the model's dtype.
    assert sorted(weights) == ["0.bias", "0.weight", "2.bias", "2.weight", "4.bias", "4.weight"]
    assert weights["0.weight"].shape == (16, 64) and weights["4.weight"].shape == (10, 8)
    assert all(v.dtype == np.float64 for v in weights.values())
    assert "momentum.0.weight" in state and state["log.correct_counts"].dtype == np.int32
    try:
        import torch
    except ImportError:
        return
    model = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 10)).double()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items()})
    np.testing.assert_array_equal(model[4].bias.detach().numpy(), weights["4.bias"])
