"""The modules of tide.nn as functions, as torch.nn.functional's:

    import tide.nn.functional as F
    loss = F.mse_loss(F.relu(F.linear(x, w, b)), target)
"""
from .. import _tide

__all__ = ["linear", "relu", "sigmoid", "tanh", "softmax", "log_softmax", "dropout", "cross_entropy", "mse_loss"]


def linear(input, weight, bias=None):
    """input @ weight.T + bias, weight [out, in], as torch's."""
    if bias is None:
        return _tide.matmul(input, weight, trans_b=True)
    return _tide.linear(input, weight, bias)


def relu(input):
    return _tide.relu(input)


def sigmoid(input):
    return _tide.sigmoid(input)


def tanh(input):
    return _tide.tanh(input)


def softmax(input, dim):
    return _tide.softmax(input, dim)


def log_softmax(input, dim):
    return _tide.log_softmax(input, dim)


def dropout(input, p=0.5, training=True):
    """Each element zeroed with probability p and the rest scaled by
    1 / (1 - p) while training (the mask from tide.rand, the engine's
    seeded generator); input itself otherwise."""
    if not 0.0 <= p <= 1.0:
        raise ValueError("dropout probability must lie in [0, 1], got %r" % (p,))
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = _tide.ge(_tide.rand(list(input.shape), dtype=input.dtype, device=input.device), p)
    return input * keep * (1.0 / (1.0 - p))


def cross_entropy(input, target):
    """The mean over rows of -log softmax(input)[target]; input [N, C],
    target an int64 or int32 tensor [N] of classes in [0, C)."""
    loss, _ = _tide.softmax_cross_entropy(input, target)
    return loss


def check_reduction(reduction):
    if reduction not in ("mean", "sum"):
        raise ValueError("reduction must be 'mean' or 'sum', got %r" % (reduction,))


def mse_loss(input, target, reduction="mean"):
    """The mean (or sum) of (input - target) ** 2 over every element;
    target broadcasts to input's shape as in any tide op."""
    check_reduction(reduction)
    d = input - target
    sq = d * d
    return _tide.mean(sq) if reduction == "mean" else _tide.sum(sq)
