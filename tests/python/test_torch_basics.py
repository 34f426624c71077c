"""What a PyTorch user writes first works as it does in torch: tensor
methods for reductions and math, operators, tide.tensor and *_like, and
tide.nn.functional, checked against numpy."""
import math

import numpy as np
import pytest

import tide
import tide.nn.functional as F


def test_a_linear_regression_as_in_a_torch_tutorial():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 3)).astype(np.float32)
    true_w = np.array([[2.0], [-3.0], [0.5]], dtype=np.float32)
    x, y = tide.tensor(xs), tide.tensor(xs @ true_w + 1.0)
    w = tide.zeros([3, 1], requires_grad=True)
    b = tide.zeros([1], requires_grad=True)
    first = None
    for _ in range(200):
        loss = ((x @ w + b - y) ** 2).mean()
        if first is None:
            first = loss.item()
        loss.backward()
        with tide.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad = None
        b.grad = None
    assert loss.item() < 1e-4 * first
    np.testing.assert_allclose(w.numpy(), true_w, atol=1e-2)
    np.testing.assert_allclose(b.numpy(), [1.0], atol=1e-2)


def test_reductions_as_methods_with_dim_and_keepdim():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
    t = tide.tensor(a)
    assert t.sum().item() == a.sum()
    np.testing.assert_allclose(t.sum(1).numpy(), a.sum(1))
    np.testing.assert_allclose(t.mean(dim=-1, keepdim=True).numpy(), a.mean(-1, keepdims=True))
    assert t.mean(keepdim=True).shape == (1, 1, 1)
    assert t.max().item() == a.max()
    values, indices = t.max(dim=1)
    np.testing.assert_array_equal(values.numpy(), a.max(1))
    np.testing.assert_array_equal(indices.numpy(), a.argmax(1))
    v, i = t.max(0, keepdim=True)
    assert v.shape == (1, 3, 4) and i.shape == (1, 3, 4)
    np.testing.assert_array_equal(t.argmax(-1).numpy(), a.argmax(-1))
    # min and argmin, as torch's (the first index on ties).
    r = np.random.default_rng(9).integers(-3, 3, size=(4, 5)).astype(np.float32)
    u = tide.tensor(r)
    assert u.min().item() == r.min() and tide.min(u).item() == r.min()
    values, indices = u.min(dim=1)
    np.testing.assert_array_equal(values.numpy(), r.min(1))
    np.testing.assert_array_equal(indices.numpy(), r.argmin(1))
    np.testing.assert_array_equal(u.argmin(0).numpy(), r.argmin(0))
    np.testing.assert_array_equal(tide.argmin(tide.tensor(r.astype(np.int32)), 1).numpy(), r.argmin(1))
    v, i = u.min(0, keepdim=True)
    assert v.shape == (1, 5) and i.shape == (1, 5) and i.dtype == "i64"
    g = tide.tensor([[1.0, -2.0], [-2.0, 5.0]], requires_grad=True)
    g.min().backward()  # shared between the tied minima, as max's
    assert g.grad.tolist() == [[0.0, 0.5], [0.5, 0.0]]
    with pytest.raises(IndexError, match="out of range"):
        t.sum(3)


def test_math_methods_operators_and_comparisons():
    a = np.array([[-2.0, -0.5, 0.0], [0.5, 1.0, 3.0]])
    t = tide.tensor(a, dtype="f64")
    np.testing.assert_allclose((t ** 2).numpy(), a ** 2)
    np.testing.assert_allclose(t.pow(3).numpy(), a ** 3)
    np.testing.assert_allclose((2.0 ** t).numpy(), 2.0 ** a)
    np.testing.assert_allclose(t.abs().sqrt().numpy(), np.sqrt(np.abs(a)))
    np.testing.assert_allclose(t.tanh().numpy(), np.tanh(a))
    np.testing.assert_allclose(tide.sigmoid(t).numpy(), 1 / (1 + np.exp(-a)))
    np.testing.assert_allclose(t.abs().pow(t).numpy(), np.abs(a) ** a)
    np.testing.assert_array_equal((t > 0).numpy(), (a > 0).astype(np.float64))
    np.testing.assert_array_equal((t <= 0.5).numpy(), (a <= 0.5).astype(np.float64))
    np.testing.assert_array_equal((t >= t).numpy(), np.ones_like(a))
    np.testing.assert_array_equal(tide.ne(t, 0.0).numpy(), (a != 0).astype(np.float64))
    np.testing.assert_array_equal(tide.lt(t, t.T.T).numpy(), np.zeros_like(a))
    assert (t > 0).requires_grad is False
    assert t.tolist() == a.tolist()
    assert t.size() == (2, 3) and t.size(-1) == 3 and t.dim() == 2
    np.testing.assert_allclose(t.mm(t.T).numpy(), a @ a.T)
    np.testing.assert_allclose(t.matmul(t.T).numpy(), a @ a.T)
    with pytest.raises(TypeError, match="a tide.Tensor or a number"):
        t ** "2"
    with pytest.raises(tide.DTypeError):
        tide.tensor([1, 2]) ** 2  # an integer tensor: pow takes floating dtypes


def test_equality_is_element_by_element_and_hashing_by_identity():
    a = np.array([[1.0, 2.0, np.nan], [2.0, 0.0, -0.0]])
    t = tide.tensor(a, dtype="f64")
    np.testing.assert_array_equal((t == 2).numpy(), (a == 2).astype(np.float64))
    np.testing.assert_array_equal((t != 2).numpy(), (a != 2).astype(np.float64))
    np.testing.assert_array_equal((t == t).numpy(), (a == a).astype(np.float64))  # NaN equals nothing
    np.testing.assert_array_equal((t != t).numpy(), (a != a).astype(np.float64))
    i = tide.tensor([1, 2, 3])
    assert (i == 2).tolist() == [0, 1, 0]
    assert (i == 2.5).tolist() == [0, 0, 0]  # an integer tensor against the number's real value
    assert bool(tide.tensor([3.0]) == 3.0)
    # Not a tensor or a number: Python's own comparison (identity).
    assert (t == None) is False and (t != None) is True  # noqa: E711
    assert (t == "t") is False
    # An array is numpy's to compare, either way round.
    np.testing.assert_array_equal(t == a, a == a)
    np.testing.assert_array_equal(a == t, a == a)
    assert (t == np.float32(2)).numpy().tolist() == (a == 2).astype(np.float64).tolist()
    # Tensors stay usable as keys and in sets, by identity.
    u = tide.tensor(a, dtype="f64")
    d = {t: "t", u: "u"}
    assert d[t] == "t" and d[u] == "u" and len({t, u, t}) == 2
    assert hash(t) == hash(t) and hash(t) != hash(u)


def test_gradients_of_the_new_math():
    a = np.array([0.3, 0.7, 1.5, 2.0])
    x = tide.tensor(a, requires_grad=True, dtype="f64")
    y = (x ** 3).sum() + x.sqrt().sum() + x.tanh().sum() + tide.sigmoid(x).sum() + (x - 1).abs().sum()
    y.backward()
    s = 1 / (1 + np.exp(-a))
    want = 3 * a ** 2 + 0.5 / np.sqrt(a) + (1 - np.tanh(a) ** 2) + s * (1 - s) + np.sign(a - 1)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


def test_tensor_and_like_creators():
    assert tide.tensor([1.5, 2.0]).dtype == "f32"  # torch's defaults
    assert tide.tensor([1, 2]).dtype == "i64"
    assert tide.tensor(3.0).shape == ()
    assert tide.tensor([[1, 2]], dtype="f64").dtype == "f64"
    assert tide.tensor(np.arange(3, dtype=np.int32)).dtype == "i32"  # an array keeps its dtype
    assert tide.tensor(np.zeros(2)).dtype == "f64" and tide.tensor([np.float64(1.5)]).dtype == "f32"
    assert tide.tensor([1, 2], requires_grad=False).requires_grad is False
    assert tide.tensor([1.0], requires_grad=True).requires_grad
    flags = tide.tensor([True, False])  # Python and numpy booleans make a bool tensor, as in torch
    assert flags.dtype == "bool" and flags.tolist() == [True, False]
    assert tide.tensor(np.array([[0, 1]], dtype=bool)).dtype == "bool"
    with pytest.raises(tide.DTypeError, match="no tide dtype"):
        tide.tensor([1 + 2j])
    ints = tide.ones([2], dtype="i32")
    before = tide.runtime().stats().ops_pushed
    for make in (lambda: tide.tensor([1, 2], requires_grad=True), lambda: tide.zeros_like(ints, requires_grad=True),
                 lambda: tide.zeros([2], dtype="i64", requires_grad=True),
                 lambda: tide.from_numpy(np.arange(2), requires_grad=True)):
        with pytest.raises(tide.DTypeError, match="only floating tensors"):
            make()
    assert tide.runtime().stats().ops_pushed == before  # refused before anything was made
    with pytest.raises(tide.DTypeError, match="expected f32"):
        tide.tensor([1.0], dtype="f16")
    t = tide.tensor([[1.0, 2.0]], dtype="f64")
    z, o, f = tide.zeros_like(t), tide.ones_like(t, dtype="f32"), tide.full_like(t, 7)
    assert (z.shape, z.dtype, o.dtype, f.tolist()) == ((1, 2), "f64", "f32", [[7.0, 7.0]])
    c = t.clone()
    c += 1
    assert t.tolist() == [[1.0, 2.0]] and c.tolist() == [[2.0, 3.0]]


def test_functional_and_the_new_modules():
    x = tide.tensor([[1.0, -2.0], [0.5, 3.0]])
    target = tide.tensor([[0.0, 0.0], [1.0, 1.0]])
    want = np.mean((x.numpy() - target.numpy()) ** 2)
    assert math.isclose(F.mse_loss(x, target).item(), want, rel_tol=1e-6)
    assert math.isclose(tide.nn.MSELoss(reduction="sum")(x, target).item(), 4 * want, rel_tol=1e-6)
    with pytest.raises(ValueError, match="reduction"):
        tide.nn.MSELoss(reduction="none")
    np.testing.assert_allclose(tide.nn.Sigmoid()(x).numpy(), F.sigmoid(x).numpy())
    np.testing.assert_allclose(tide.nn.Tanh()(x).numpy(), np.tanh(x.numpy()), rtol=1e-6)
    np.testing.assert_array_equal(F.relu(x).numpy(), np.maximum(x.numpy(), 0))
    w, b = tide.ones([3, 2]), tide.zeros([3])
    np.testing.assert_allclose(F.linear(x, w).numpy(), F.linear(x, w, b).numpy())
    labels = tide.tensor([1, 0])
    assert math.isclose(F.cross_entropy(x, labels).item(), tide.nn.CrossEntropyLoss()(x, labels).item())


def test_cat_stack_softmax_clamp_and_dropout():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = -np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_array_equal(tide.cat([tide.tensor(a), tide.tensor(b)], dim=1).numpy(), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(tide.stack([tide.tensor(a), tide.tensor(a * 2)], 1).numpy(), np.stack([a, a * 2], 1))
    x = tide.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 1000.0]], dtype="f64")
    e = np.exp(x.numpy() - x.numpy().max(1, keepdims=True))
    np.testing.assert_allclose(x.softmax(1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-14)
    z = x.numpy() - x.numpy().max(1, keepdims=True)
    np.testing.assert_allclose(F.log_softmax(x, -1).numpy(), z - np.log(e.sum(1, keepdims=True)), rtol=1e-12)
    assert np.isfinite(tide.log_softmax(x, 1).numpy()).all()
    c = tide.tensor([-2.0, 0.5, 3.0])
    assert c.clamp(0, 1).tolist() == [0.0, 0.5, 1.0]
    assert tide.clamp(c, max=0).tolist() == [-2.0, 0.0, 0.0]
    assert tide.maximum(c, 0.0).tolist() == [0.0, 0.5, 3.0] and c.minimum(c * 0).tolist() == [-2.0, 0.0, 0.0]
    with pytest.raises(tide.ValueError, match="above max"):
        c.clamp(1, 0)
    np.testing.assert_allclose(tide.linspace(0, 1, 5).numpy(), [0, 0.25, 0.5, 0.75, 1.0])
    # Dropout: zeros about p of the elements while training, scales the rest; the identity in eval().
    tide.manual_seed(3)
    drop = tide.nn.Dropout(0.25)
    ones = tide.ones([10000])
    kept = drop(ones).numpy()
    assert set(np.unique(kept)) <= {0.0, np.float32(1 / 0.75)}
    assert 0.2 < (kept == 0).mean() < 0.3
    assert drop.eval()(ones) is ones
    with pytest.raises(ValueError):
        tide.nn.Dropout(1.5)
    # Gradients flow through cat and softmax.
    w = tide.tensor([0.5, -1.0], requires_grad=True)
    tide.cat([w, w * 2]).softmax(0).max().backward()
    assert w.grad is not None and w.grad.shape == (2,)


def test_where_as_torch_where():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    b = rng.normal(size=(4,)).astype(np.float32)
    cond = (rng.normal(size=(3, 1)) > 0).astype(np.float32)
    got = tide.where(tide.tensor(cond), tide.tensor(a), tide.tensor(b))
    assert got.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(got), np.where(cond != 0, a, b))
    # A comparison as the condition, a number on either side.
    x = tide.tensor(a)
    np.testing.assert_array_equal(np.asarray(tide.where(x > 0, x, 0.0)), np.where(a > 0, a, 0))
    np.testing.assert_array_equal(np.asarray(tide.where(x > 0, -1, x)), np.where(a > 0, -1, a))
    # Integer values keep their dtype; NaN in the condition counts as true.
    c = tide.tensor([np.nan, 0.0, 2.0])
    ints = tide.where(c, tide.tensor([1, 2, 3]), tide.tensor([7, 8, 9]))
    assert ints.dtype == "i64"
    assert ints.tolist() == [1, 8, 3]
    with pytest.raises(TypeError):
        tide.where(c, 1, 2)


def test_where_gradients_go_where_each_input_was_taken():
    a = tide.tensor([[1.0, -2.0], [3.0, -4.0]], requires_grad=True)
    b = tide.tensor([10.0, 20.0], requires_grad=True)
    out = tide.where(a > 0, a, b)
    (out * tide.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert a.grad.tolist() == [[1.0, 0.0], [3.0, 0.0]]
    assert b.grad.tolist() == [0.0, 6.0]  # summed over the rows it stretched to


def test_masked_assignment_as_in_torch():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    x = tide.tensor(a)
    x[x < 0] = 0.0  # the idiom: a comparison as the mask
    np.testing.assert_array_equal(np.asarray(x), np.where(a < 0, 0, a))
    # A numpy boolean mask of rows, a tensor value broadcast along them, as
    # torch's y[mask] = row.
    y = tide.tensor(a)
    mask = np.array([True, False, True])
    y[mask] = tide.tensor([1.0, 2.0, 3.0, 4.0])
    want = a.copy()
    want[mask] = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(y), want)
    # Integers stay exact; a mask that is not t's leading extents is refused,
    # as in torch (and reading uses the same rule).
    z = tide.tensor([1, 2, 3])
    z[tide.tensor([False, True, True])] = 2 ** 40
    assert z.tolist() == [1, 2 ** 40, 2 ** 40]
    with pytest.raises(IndexError, match="leading extents"):
        z[tide.tensor([True, False])] = 0
    with pytest.raises(IndexError, match="leading extents"):
        y[np.array([True, False, True, False])] = 0.0
    # Indices are not a mask: refused rather than read as one.
    with pytest.raises(TypeError, match="index_add"):
        y[np.array([0, 2])] = 0.0
    with pytest.raises(TypeError, match="list of indices"):
        y[[0, 2]] = 0.0
    with pytest.raises(TypeError, match="index_add"):
        y[tide.tensor([0, 2])] = 0.0  # an integer tensor holds indices, not a mask
    with pytest.raises(TypeError, match="key != 0"):
        y[tide.ones([3])] = 0.0


def test_reading_with_a_mask_or_indices_as_in_torch():
    rng = np.random.default_rng(6)
    a = rng.normal(size=(3, 4)).astype(np.float32)
    x = tide.tensor(a)
    # A comparison as the mask: the elements where it holds, in order.
    np.testing.assert_array_equal(np.asarray(x[x > 0]), a[a > 0])
    # A mask of the leading axis picks rows; a numpy boolean mask too.
    rows = np.array([True, False, True])
    np.testing.assert_array_equal(np.asarray(x[tide.tensor(rows)]), a[rows])
    assert (x > 0).dtype == "bool"
    np.testing.assert_array_equal(np.asarray(x[rows]), a[rows])
    assert x[x > 10].shape == (0,)
    # Lists and integer arrays pick rows by index, negative ones from the end,
    # and repeat; the result has the index's shape, then the rest of t's.
    np.testing.assert_array_equal(np.asarray(x[[2, 0, -1]]), a[[2, 0, -1]])
    idx = np.array([[1, 1], [0, 2]])
    got = x[idx]
    assert got.shape == (2, 2, 4)
    np.testing.assert_array_equal(np.asarray(got), a[idx])
    assert x[[]].shape == (0, 4)
    # Integers stay exact.
    big = tide.tensor([1, 2 ** 40, 3])
    assert big[[1, 1]].tolist() == [2 ** 40, 2 ** 40]
    # Refusals: a mask of the wrong shape, an index out of range, floats.
    with pytest.raises(IndexError, match="leading extents"):
        x[tide.tensor([True, False])]
    with pytest.raises(IndexError, match="key != 0"):
        x[tide.tensor([1.0, 0.0, 1.0])]  # torch refuses float keys too
    with pytest.raises(IndexError, match="out of range"):
        x[[3]]
    with pytest.raises(TypeError, match="integers or booleans"):
        x[np.array([0.5])]
    with pytest.raises(TypeError, match="whole key"):
        x[[0, 1], 0]
    with pytest.raises(IndexError, match="out of range"):
        x[[-4]]
    with pytest.raises(IndexError, match="out of range"):
        x[np.array([2 ** 63], dtype=np.uint64)]
    # A list of booleans is a mask, as in numpy; an integer tide tensor holds
    # indices, as in torch (negative ones too), whatever its values.
    np.testing.assert_array_equal(np.asarray(x[[True, False, True]]), a[[True, False, True]])
    np.testing.assert_array_equal(np.asarray(x[tide.tensor([0, 1, 1])]), a[[0, 1, 1]])
    np.testing.assert_array_equal(np.asarray(x[tide.tensor([[2, -3]])]), a[[[2, -3]]])
    with pytest.raises(IndexError, match="out of range"):
        x[tide.tensor([3])]


def test_a_mask_and_indices_carry_gradients():
    a = tide.tensor([[1.0, -2.0], [3.0, -4.0], [5.0, 6.0]], requires_grad=True)
    (a[a > 0] * 2.0).sum().backward()
    assert a.grad.tolist() == [[2.0, 0.0], [2.0, 0.0], [2.0, 2.0]]
    b = tide.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b[[1, 1, 0]].sum().backward()
    assert b.grad.tolist() == [[1.0, 1.0], [2.0, 2.0]]


def test_index_select_and_index_add_as_in_torch():
    a = tide.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    i = tide.tensor([2, 0, 2])
    assert tide.index_select(a, 1, i).tolist() == [[3.0, 1.0, 3.0], [6.0, 4.0, 6.0]]
    src = tide.ones([2, 3])
    assert tide.index_add(a, 1, i, src).tolist() == [[2.0, 2.0, 5.0], [5.0, 5.0, 8.0]]
    assert a.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]  # a itself unchanged
    with pytest.raises(tide.DTypeError):
        tide.index_select(a, 1, tide.tensor([0.0]))


def test_bool_tensors_as_in_torch():
    a = np.array([[1.5, -2.0, 0.0], [3.0, np.nan, -1.0]], dtype=np.float32)
    x = tide.tensor(a)
    m = x > 0
    assert m.dtype == "bool" and m.shape == (2, 3)
    np.testing.assert_array_equal(m.numpy(), a > 0)
    assert m.numpy().dtype == np.bool_
    assert m.tolist() == [[True, False, False], [True, False, False]]
    assert all(type(v) is bool for row in m.tolist() for v in row)
    assert "True" in repr(m) and "dtype=bool" in repr(m)
    # A bool operand beside a number tensor is taken as that tensor's dtype.
    np.testing.assert_array_equal((x * m).numpy(), a * (a > 0))  # NaN * False is NaN, in numpy too
    assert (m * 2.0).dtype == "f32"
    # sum counts the true values, in int64; item() and bool() give Python bools.
    assert m.sum().item() == 2 and m.sum().dtype == "i64"
    assert (x > 100).sum().item() == 0
    assert tide.tensor([True]).item() is True and bool(tide.tensor([False])) is False
    # Conversions both ways: nonzero (NaN too) is True.
    assert x.bool().numpy().dtype == np.bool_
    np.testing.assert_array_equal(x.bool().numpy(), np.array(a, dtype=bool))
    assert x.to("bool").dtype == "bool" and m.float().dtype == "f32" and m.long().tolist()[0] == [1, 0, 0]
    assert tide.zeros([2], dtype="bool").tolist() == [False, False]
    assert [type(v) for v in tide.zeros([2], dtype="bool").tolist()] == [bool, bool]
    # Writing into a bool tensor: a Python bool or number (nonzero is True).
    w = tide.zeros([2, 3], dtype="bool")
    w[0] = True
    w[1, 1:] = 1
    assert w.tolist() == [[True, True, True], [False, True, True]]
    w[tide.tensor([True, False])] = 0
    assert w.tolist() == [[False, False, False], [False, True, True]]
    # From numpy and back, through DLPack too.
    flags = np.array([True, False, True])
    t = tide.from_numpy(flags)
    assert t.dtype == "bool" and t.numpy().tolist() == [True, False, True]
    try:  # DLPack's bool (code 6) came to numpy with 1.25
        np.from_dlpack(np.array([True]))
    except (RuntimeError, BufferError, TypeError):
        pass
    else:
        np.testing.assert_array_equal(np.from_dlpack(t), flags)
        assert tide.from_dlpack(t).tolist() == [True, False, True]  # through DLPack, a tide tensor as the source
    back = tide.from_dlpack(flags)  # a numpy bool array: read as it is, on any numpy
    assert back.dtype == "bool" and back.tolist() == [True, False, True]
    # Masks, and where with a bool condition.
    np.testing.assert_array_equal(x[m].numpy(), a[a > 0])
    np.testing.assert_array_equal(tide.where(m, x, 0.0).numpy(), np.where(a > 0, a, 0))
    # Arithmetic on bools and reductions other than sum refuse, naming bool.
    with pytest.raises(tide.DTypeError, match="bool"):
        m + m
    with pytest.raises(tide.DTypeError, match="bool"):
        -m
    with pytest.raises(tide.DTypeError, match="bool"):
        m.max()


def test_logical_ops_any_and_all_as_in_torch():
    a = np.array([[0.5, -1.0, 2.0], [0.0, 3.0, -4.0]], dtype=np.float32)
    x = tide.tensor(a)
    inside = (x > -2) & (x < 1)
    assert inside.dtype == "bool"
    np.testing.assert_array_equal(inside.numpy(), (a > -2) & (a < 1))
    np.testing.assert_array_equal(((x < 0) | (x > 2)).numpy(), (a < 0) | (a > 2))
    np.testing.assert_array_equal(((x > 0) ^ (x > 1)).numpy(), (a > 0) ^ (a > 1))
    np.testing.assert_array_equal((~(x > 0)).numpy(), ~(a > 0))
    np.testing.assert_array_equal(((x > 0) & True).numpy(), a > 0)
    np.testing.assert_array_equal((False | (x > 0)).numpy(), a > 0)
    x[(x < 0) & (x > -2)] = 0.0  # a compound mask in an assignment
    np.testing.assert_array_equal(x.numpy(), np.where((a < 0) & (a > -2), 0, a))
    np.testing.assert_array_equal(tide.logical_and(tide.tensor(a), tide.tensor(a)).numpy(), np.logical_and(a, a))
    np.testing.assert_array_equal(tide.logical_not(tide.tensor(a)).numpy(), np.logical_not(a))
    # any and all, as torch's: bool results, whole or along dim.
    t = tide.tensor(a)
    assert (t > 2).any().item() is True and (t > 5).any().item() is False
    assert (t > -5).all().item() is True and t.all().item() is False  # a zero is in it
    np.testing.assert_array_equal(t.any(dim=1).numpy(), a.any(axis=1))
    np.testing.assert_array_equal(tide.all(t, dim=0, keepdim=True).numpy(), a.all(axis=0, keepdims=True))
    # & of integers is bitwise in torch: refused here, naming the logical ops.
    with pytest.raises(tide.DTypeError, match="logical_and"):
        tide.tensor([1, 2]) & tide.tensor([3, 4])
    with pytest.raises(tide.DTypeError, match="logical"):
        ~tide.tensor([1, 2])
    with pytest.raises(TypeError, match="bool tensors"):
        (t > 0) & 1


def test_assignment_through_columns_and_steps_as_in_numpy():
    rng = np.random.default_rng(8)
    a = rng.normal(size=(5, 6)).astype(np.float32)
    x = tide.tensor(a)
    keys = [(slice(None), 0), (slice(None), slice(1, 5, 2)), (slice(None, None, 2),), (slice(None, None, -2), -1),
            (slice(1, 4), slice(None, None, -1)), (Ellipsis, 3)]
    for i, key in enumerate(keys):
        value = rng.normal(size=a[key].shape).astype(np.float32)
        x[key] = tide.tensor(value)
        a[key] = value
        np.testing.assert_array_equal(x.numpy(), a, err_msg=str(key))
        x[key] = float(i)  # a number, broadcast
        a[key] = float(i)
        np.testing.assert_array_equal(x.numpy(), a, err_msg=str(key))
    x[:, 2] += 100  # through a mirror of the column
    a[:, 2] += 100
    x[:, 3] = x[:, 4]  # a value read from t itself
    a[:, 3] = a[:, 4]
    x[:, :2] = tide.tensor(a[0, :2])  # broadcast along the rows
    a[:, :2] = a[0, :2]
    np.testing.assert_array_equal(x.numpy(), a)
    m = tide.zeros([3, 3], dtype="bool")  # bool and integer tensors too
    m[:, 1] = True
    assert m.tolist() == [[False, True, False]] * 3
    n = tide.zeros([4], dtype="i64")
    n[::3] = 2 ** 40
    assert n.tolist() == [2 ** 40, 0, 0, 2 ** 40]


def test_method_forms_and_in_place_methods_as_in_torch():
    a = np.array([[1.5, -2.0, 0.0], [3.0, -4.0, 0.5]], dtype=np.float32)
    t = tide.tensor(a)
    np.testing.assert_array_equal(t.add(1).numpy(), a + 1)
    np.testing.assert_array_equal(t.sub(t).numpy(), a - a)
    np.testing.assert_array_equal(t.mul(2.5).numpy(), a * 2.5)
    np.testing.assert_array_equal(t.div(tide.tensor(a[1])).numpy(), a / a[1])
    numpy_name = {"eq": "equal", "ne": "not_equal", "gt": "greater", "ge": "greater_equal", "lt": "less",
                  "le": "less_equal"}
    for name, np_name in numpy_name.items():
        got = getattr(t, name)(0.5)
        assert got.dtype == "bool"
        np.testing.assert_array_equal(got.numpy(), getattr(np, np_name)(a, 0.5))
    u = t.clone()
    assert u.add_(1).mul_(2) is u  # chained, each returning the tensor itself
    np.testing.assert_array_equal(u.numpy(), (a + 1) * 2)
    u.sub_(tide.tensor(a)).div_(2)
    np.testing.assert_array_equal(u.numpy(), ((a + 1) * 2 - a) / 2)
    u /= 4
    np.testing.assert_array_equal(u.numpy(), ((a + 1) * 2 - a) / 8)
    assert u.zero_().tolist() == [[0.0] * 3] * 2 and u.fill_(7).tolist() == [[7.0] * 3] * 2
    u.copy_(t)
    np.testing.assert_array_equal(u.numpy(), a)
    row = t[0]  # a view: in-place methods write through it
    row.mul_(0)
    np.testing.assert_array_equal(t.numpy()[0], [0, -0.0, 0])
    t = tide.tensor(a)
    np.testing.assert_array_equal(t.masked_fill(t < 0, 0.0).numpy(), np.where(a < 0, 0, a))
    m = t.clone()
    m.masked_fill_(tide.tensor([True, False, True]), -1.0)  # a mask broadcast along the rows
    np.testing.assert_array_equal(m.numpy(), np.where([True, False, True], -1, a))
    np.testing.assert_array_equal(t.where(t > 0, 0.0).numpy(), np.where(a > 0, a, 0))
    assert t.type_as(tide.ones([1], dtype="f64")).dtype == "f64" and t.contiguous() is t
    i = tide.tensor([7, 9])
    i.div_(2)  # integer division truncates, as tide's integer / does
    assert i.tolist() == [3, 4]
    # Refusals queue nothing: a leaf that needs a gradient, a mask that does not fit.
    leaf = tide.zeros([3], requires_grad=True)
    row_mask, square = tide.tensor([True, False, True]), tide.ones([2, 2], dtype="bool")
    before = tide.runtime().stats().ops_pushed
    for call in (lambda: leaf.fill_(1.0), lambda: leaf.zero_(), lambda: leaf.add_(1.0),
                 lambda: leaf.masked_fill_(row_mask, 1.0), lambda: m.masked_fill_(square, 0.0), lambda: i.div_(0)):
        with pytest.raises((tide.UsageError, tide.ShapeError, tide.ValueError)):
            call()
    assert tide.runtime().stats().ops_pushed == before
    with tide.no_grad():
        leaf.fill_(2.0)
    assert leaf.tolist() == [2.0, 2.0, 2.0]


def test_bool_tensors_with_torch_and_safetensors(tmp_path):
    m = tide.tensor([[True, False], [False, True]])
    tide.save(str(tmp_path / "m.safetensors"), {"m": m})
    back = tide.load(str(tmp_path / "m.safetensors"))["m"]
    assert back.dtype == "bool" and back.tolist() == [[True, False], [False, True]]
    assert [type(v) for v in back.tolist()[0]] == [bool, bool]
    torch = pytest.importorskip("torch")
    try:  # PyTorch's DLPack took bool (code 6) after 2.0
        torch.from_dlpack(torch.tensor([True]).__dlpack__())
    except (RuntimeError, BufferError, TypeError):
        pytest.skip("PyTorch %s has no DLPack bool" % torch.__version__)
    pt = torch.from_dlpack(m)
    assert pt.dtype == torch.bool and pt.tolist() == [[True, False], [False, True]]
    assert tide.from_dlpack(torch.tensor([False, True])).tolist() == [False, True]


def test_columns_steps_and_transposes_are_views_both_ways():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    t = tide.tensor(a)
    col, steps, tt = t[:, 1], t[::2], t.T
    assert not col.is_contiguous() and not tt.is_contiguous() and t.is_contiguous() and t[1].is_contiguous()
    col.zero_()  # an in-place method on a column reaches t, as in torch
    a[:, 1] = 0
    np.testing.assert_array_equal(t.numpy(), a)
    t += 1  # and a write to t reaches every view of it
    a += 1
    np.testing.assert_array_equal(col.numpy(), a[:, 1])
    np.testing.assert_array_equal(steps.numpy(), a[::2])
    np.testing.assert_array_equal(tt.numpy(), a.T)
    tt[0].mul_(-1)  # a row of the transpose: row 0 of tt is column 0 of t
    a[:, 0] *= -1
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(col.numpy(), a[:, 1])
    steps[:, ::-2] += 10  # a mirror of a mirror
    a[::2][:, ::-2] += 10
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(tt.numpy(), a.T)
    p = t.permute(1, 0)
    p.copy_(tide.tensor(np.ones((5, 4), dtype=np.float32)))
    a[:] = 1
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(t.transpose(0, 1).numpy(), a.T)
    exported = np.from_dlpack(t[:, 2])  # a mirror is exported as a copy
    t.fill_(4)
    assert exported.tolist() == [1, 1, 1, 1]
    with pytest.raises(BufferError, match="mirror"):
        t[:, 2].__dlpack__(copy=False)
    c = t[:, 2].contiguous()  # a copy that follows nothing
    assert c.is_contiguous()
    c.fill_(7)
    t.fill_(3)
    assert c.tolist() == [7, 7, 7, 7] and col.tolist() == [3, 3, 3, 3]
    # Gradients flow through them as through a copy; in place on one that
    # needs a gradient is refused, as on any tensor.
    w = tide.tensor(np.arange(6, dtype=np.float64).reshape(2, 3), requires_grad=True)
    (w.T * w.T).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), 2 * np.arange(6).reshape(2, 3))
    with pytest.raises(tide.UsageError, match="in-place"):
        w.T.add_(1)
    with tide.no_grad():
        w[:, 0].zero_()
    np.testing.assert_array_equal(w.detach().numpy(), [[0, 1, 2], [0, 4, 5]])
