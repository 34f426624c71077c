"""Autograd, tide.nn and tide.optim from Python: gradients against numpy,
the graph's rules, modules, optimizer updates against their formulas, and
DistributedDataParallel on one rank and on two under mpirun."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tide

RT = tide.init() if not tide.initialized() else tide.runtime()


def f64(a):
    return tide.from_numpy(np.asarray(a, dtype=np.float64))


def test_gradients_of_an_mlp_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 4))
    w1, b1 = rng.standard_normal((6, 4)), rng.standard_normal(6)
    w2 = rng.standard_normal((3, 6))
    labels = np.array([0, 2, 1, 1, 0], dtype=np.int32)
    tw1, tb1, tw2 = (tide.from_numpy(a, requires_grad=True) for a in (w1, b1, w2))
    h = tide.relu(f64(x) @ tw1.T + tb1)  # broadcasting add, transpose, matmul
    loss, _ = tide.softmax_cross_entropy(h @ tw2.T, tide.from_numpy(labels))
    loss.backward()
    # The same by hand in numpy.
    z = x @ w1.T + b1
    hh = np.maximum(z, 0)
    logits = hh @ w2.T
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    d = p.copy()
    d[np.arange(5), labels] -= 1
    d /= 5
    dz = (d @ w2) * (z > 0)
    np.testing.assert_allclose(tw2.grad.numpy(), d.T @ hh, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tw1.grad.numpy(), dz.T @ x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tb1.grad.numpy(), dz.sum(0), rtol=1e-10, atol=1e-12)


def test_indexing_views_and_reductions_carry_gradients():
    a = tide.from_numpy(np.arange(12.0).reshape(3, 4), requires_grad=True)
    y = tide.sum(a[1:, ::2] * 2) + tide.mean(a.reshape([12])) + tide.max(a, axis=0)[0]
    y.backward()
    want = np.full((3, 4), 1 / 12)
    want[1:, ::2] += 2
    want[2, 0] += 1  # column 0's maximum
    np.testing.assert_allclose(a.grad.numpy(), want)


def test_the_graph_rules():
    a = tide.ones([3], requires_grad=True)
    assert a.is_leaf and a.requires_grad and a.grad is None and a.grad_fn is None
    b = a * 2
    assert not b.is_leaf and b.grad_fn == "mul"
    assert not b.detach().requires_grad
    with tide.no_grad():
        assert not (a * 2).requires_grad
        with tide.enable_grad():
            assert (a * 2).requires_grad
    assert tide.is_grad_enabled()

    @tide.no_grad()
    def update():
        a.__iadd__(1.0)
        return (a * 2).requires_grad

    assert update() is False
    with pytest.raises(tide.UsageError, match="in-place"):
        a += 1.0
    y = tide.sum(a * a)
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(a.grad.numpy(), [8, 8, 8])
    with pytest.raises(tide.UsageError, match="retain_graph"):
        y.backward()
    with pytest.raises(tide.ShapeError):
        (a * 2).backward()
    (a * 2).backward(tide.ones([3]))
    a.grad = None
    assert a.grad is None
    with pytest.raises(tide.DTypeError):
        tide.zeros([2], dtype="i32", requires_grad=True)
    with pytest.raises(tide.UsageError):
        tide.ones([2]).backward()


def test_module_parameters_state_dict_and_modes():
    tide.manual_seed(5)
    model = tide.nn.Sequential(tide.nn.Linear(4, 8), tide.nn.ReLU(), tide.nn.Linear(8, 3, bias=False))
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight"]
    assert len(model) == 3 and isinstance(model[1], tide.nn.ReLU)
    assert "Linear(in_features=4, out_features=8, bias=True)" in repr(model)
    bound = 1 / np.sqrt(4)
    w = model[0].weight.numpy()
    assert w.shape == (8, 4) and np.all(np.abs(w) <= bound) and w.std() > bound / 4
    assert model.training and not model.eval().training and not model[0].training
    assert model.train().training

    other = tide.nn.Sequential(tide.nn.Linear(4, 8), tide.nn.ReLU(), tide.nn.Linear(8, 3, bias=False))
    other.load_state_dict(model.state_dict())
    for (_, p), (_, q) in zip(model.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    with pytest.raises(KeyError):
        other.load_state_dict({"0.weight": model[0].weight})
    with pytest.raises(ValueError):
        other.load_state_dict({**model.state_dict(), "0.bias": tide.zeros([9])})

    x = tide.randn([2, 4])
    tide.sum(model(x)).backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_sgd_and_adam_follow_their_formulas():
    p0 = np.array([1.0, -2.0, 3.0])
    g = np.array([0.5, 0.25, -1.0])
    # SGD with momentum and weight decay, two steps.
    p = tide.from_numpy(p0, requires_grad=True)
    opt = tide.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    want, v = p0.copy(), np.zeros(3)
    for _ in range(2):
        p.grad = f64(g)
        opt.step()
        v = 0.9 * v + g + 0.01 * want
        want = want - 0.1 * v
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-12)
    # Adam and AdamW, three steps.
    for cls, wd in ((tide.optim.Adam, 0.0), (tide.optim.AdamW, 0.1)):
        p = tide.from_numpy(p0, requires_grad=True)
        opt = cls([p], lr=0.01, weight_decay=wd)
        want, m, s = p0.copy(), np.zeros(3), np.zeros(3)
        for t in range(1, 4):
            p.grad = f64(g)
            opt.step()
            want = want * (1 - 0.01 * wd)
            m = 0.9 * m + 0.1 * g
            s = 0.999 * s + 0.001 * g * g
            want = want - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(s) / np.sqrt(1 - 0.999 ** t) + 1e-8)
        np.testing.assert_allclose(p.numpy(), want, rtol=1e-10)
    opt.zero_grad()
    assert p.grad is None
    with pytest.raises(TypeError):
        tide.optim.SGD([tide.ones([2])], lr=0.1)
    with pytest.raises(ValueError):
        tide.optim.SGD([p], lr=-1)


def test_training_lowers_the_loss():
    tide.manual_seed(7)
    rng = np.random.default_rng(7)
    x = tide.from_numpy(rng.standard_normal((64, 8)).astype(np.float32))
    y = tide.from_numpy(rng.integers(0, 3, 64).astype(np.int32))
    model = tide.nn.Sequential(tide.nn.Linear(8, 32), tide.nn.ReLU(), tide.nn.Linear(32, 3))
    opt = tide.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    loss_fn = tide.nn.CrossEntropyLoss()
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss)
    first, last = losses[0].item(), losses[-1].item()
    assert last < first * 0.5, (first, last)


def test_ddp_on_one_rank_gives_the_local_gradients_and_no_sync_sums():
    tide.manual_seed(9)
    net = tide.nn.Sequential(tide.nn.Linear(4, 6), tide.nn.ReLU(), tide.nn.Linear(6, 2))
    ref = tide.nn.Sequential(tide.nn.Linear(4, 6), tide.nn.ReLU(), tide.nn.Linear(6, 2))
    ref.load_state_dict(net.state_dict())
    model = tide.nn.DistributedDataParallel(net, first_bucket_mb=0.0001)
    xs = [tide.randn([3, 4]) for _ in range(3)]
    with model.no_sync():
        tide.sum(model(xs[0])).backward()
        tide.sum(model(xs[1])).backward()
    tide.sum(model(xs[2])).backward()
    for x in xs:
        tide.sum(ref(x)).backward()
    for p, q in zip(net.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not os.environ.get("TIDE_TEST_MPIEXEC") and subprocess.run(
    ["sh", "-c", "command -v mpirun"], capture_output=True).returncode != 0, reason="no mpirun")
def test_ddp_averages_across_two_ranks():
    mpirun = [os.environ.get("TIDE_TEST_MPIEXEC", "mpirun"), "--oversubscribe", "-np", "2"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    code = textwrap.dedent("""
        import numpy as np
        import tide
        rt = tide.init()
        tide.manual_seed(100 + rt.rank)   # different weights: DDP starts both from rank 0's
        net = tide.nn.Linear(3, 2)
        model = tide.nn.DistributedDataParallel(net)
        x = tide.full([1, 3], rt.rank + 1.0)
        tide.sum(model(x)).backward()
        w = net.weight.numpy()
        g = net.weight.grad.numpy()
        both = tide.all_gather(net.weight).numpy()
        assert np.array_equal(both[0], both[1]), both
        np.testing.assert_allclose(g, np.full((2, 3), 1.5))   # the mean of 1s and 2s
        rt.log("ddp ok")
    """)
    r = subprocess.run([*mpirun, sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ddp ok" in r.stdout, r.stdout + r.stderr


def test_int64_as_numpy_and_torch_give_it():
    labels = np.array([0, 2, 1, 1], dtype=np.int64)  # numpy's default integers
    t = tide.from_numpy(np.arange(5))
    assert t.dtype == "i64" and t.numpy().dtype == np.int64
    np.testing.assert_array_equal((t * 3 + 2**40).numpy(), np.arange(5) * 3 + 2**40)
    assert tide.sum(t).item() == 10 and isinstance(tide.sum(t).item(), int)
    np.testing.assert_array_equal(np.from_dlpack(t), np.arange(5))
    assert t.float().dtype == "f32" and t.to("f64").dtype == "f64" and t.int().dtype == "i32"
    assert tide.from_numpy(np.array([2.7, -2.7])).long().numpy().tolist() == [2, -2]
    logits = tide.from_numpy(np.random.default_rng(1).standard_normal((4, 3)), requires_grad=True)
    loss = tide.nn.CrossEntropyLoss()(logits, tide.from_numpy(labels))
    ref = tide.nn.CrossEntropyLoss()(logits, tide.from_numpy(labels.astype(np.int32)))
    assert loss.item() == ref.item()
    loss.backward()
    assert logits.grad is not None
    assert tide.zeros([2], dtype="int64").dtype == "i64"
