"""Modules, as torch.nn's: a Module holds parameters (leaf tensors that
require gradients) and sub-modules, found by assigning them as attributes.

    model = tide.nn.Sequential(tide.nn.Linear(64, 512), tide.nn.ReLU(), tide.nn.Linear(512, 10))
    loss = tide.nn.CrossEntropyLoss()(model(x), labels)
    loss.backward()

tide.nn.functional (import tide.nn.functional as F) has the same as functions.
"""
import collections as _collections
import math as _math
import weakref as _weakref

from .. import _tide
from . import functional

__all__ = ["Module", "Parameter", "Linear", "ReLU", "Sigmoid", "Tanh", "Dropout", "Sequential", "CrossEntropyLoss",
           "MSELoss", "DistributedDataParallel", "functional"]


def Parameter(tensor, requires_grad=True):
    """A leaf sharing tensor's values that requires a gradient."""
    t = tensor.detach()
    t.requires_grad = requires_grad
    return t


class Module:
    """The base of every module: subclasses set attributes in __init__ and
    define forward(); calling the module calls forward."""

    def __init__(self):
        object.__setattr__(self, "_parameters", _collections.OrderedDict())
        object.__setattr__(self, "_modules", _collections.OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("call Module.__init__() before assigning attributes of a tide.nn.Module")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, _tide.Tensor) and value.requires_grad and value.is_leaf:
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(type(self).__name__ + " does not define forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix=""):
        """(name, parameter) pairs, this module's first, then each
        sub-module's in the order they were assigned."""
        for name, p in self._parameters.items():
            yield prefix + name, p
        for name, m in self._modules.items():
            yield from m.named_parameters(prefix + name + ".")

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def children(self):
        return list(self._modules.values())

    def modules(self):
        yield self
        for m in self._modules.values():
            yield from m.modules()

    def train(self, mode=True):
        """Training mode (or evaluation, with mode=False) for this module and
        every sub-module; returns self."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self):
        """Clears every parameter's gradient (sets it to None)."""
        for p in self.parameters():
            p.grad = None

    def state_dict(self):
        """An ordered dict of name to parameter (the tensors themselves,
        detached: tide.save(model.state_dict(), path) writes them)."""
        return _collections.OrderedDict((n, p.detach()) for n, p in self.named_parameters())

    def load_state_dict(self, state_dict, strict=True):
        """Copies the values of state_dict into the parameters of the same
        names (shapes and dtypes must match). With strict, a missing or
        unexpected name is a KeyError, raised before anything is copied."""
        own = _collections.OrderedDict(self.named_parameters())
        missing = [n for n in own if n not in state_dict]
        unexpected = [n for n in state_dict if n not in own]
        if strict and (missing or unexpected):
            raise KeyError("load_state_dict: missing %s, unexpected %s" % (missing, unexpected))
        for name, p in own.items():
            if name not in state_dict:
                continue
            src = state_dict[name]
            if tuple(src.shape) != tuple(p.shape) or src.dtype != p.dtype:
                raise ValueError("load_state_dict: %s is %s %s here but %s %s in the state dict"
                                 % (name, list(p.shape), p.dtype, list(src.shape), src.dtype))
        was = _tide.is_grad_enabled()
        _tide.set_grad_enabled(False)
        try:
            for name, p in own.items():
                if name in state_dict:
                    _tide.copy_(p, _tide.copy_to(state_dict[name], p.device))
        finally:
            _tide.set_grad_enabled(was)

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [type(self).__name__ + "(" + self.extra_repr()]
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append("  (%s): %s" % (name, sub))
        if len(lines) == 1:
            return lines[0] + ")"
        return "\n".join(lines) + "\n)"


def _uniform(shape, bound, dtype, device, seed):
    """U(-bound, bound), from the engine's generator or a fixed seed."""
    r = _tide.rand(list(shape), dtype=dtype, device=device, seed=seed)
    return Parameter((r * 2.0 - 1.0) * bound)


class Linear(Module):
    """y = x w^T + b, x [N, in_features]: torch.nn.Linear, with its default
    initialisation (w and b uniform in +-1/sqrt(in_features)). With seed,
    w is drawn from Philox stream seed and b from seed + 1 (tide.rand's
    seed), so that a model is the same on every rank without a broadcast."""

    def __init__(self, in_features, out_features, bias=True, dtype="f32", device="cpu:0", seed=None):
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError("Linear: in_features and out_features must be at least 1")
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / _math.sqrt(in_features)
        self.weight = _uniform([out_features, in_features], bound, dtype, device, seed)
        if bias:
            self.bias = _uniform([out_features], bound, dtype, device, None if seed is None else seed + 1)
        else:
            object.__setattr__(self, "bias", None)

    def forward(self, x):
        if self.bias is None:
            return _tide.matmul(x, self.weight, trans_b=True)
        return _tide.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s" % (self.in_features, self.out_features,
                                                             self.bias is not None)


class ReLU(Module):
    def forward(self, x):
        return _tide.relu(x)


class Sigmoid(Module):
    def forward(self, x):
        return _tide.sigmoid(x)


class Tanh(Module):
    def forward(self, x):
        return _tide.tanh(x)


class Dropout(Module):
    """Zeroes each element with probability p while training (scaling the
    rest by 1 / (1 - p)); the identity in eval()."""

    def __init__(self, p=0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError("Dropout: p must lie in [0, 1], got %r" % (p,))
        object.__setattr__(self, "p", p)

    def forward(self, x):
        return functional.dropout(x, self.p, self.training)


class Sequential(Module):
    """Modules applied in order; indexable and iterable like torch's."""

    def __init__(self, *modules):
        super().__init__()
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError("Sequential: argument %d is a %s, not a tide.nn.Module" % (i, type(m).__name__))
            setattr(self, str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class CrossEntropyLoss(Module):
    """The mean over rows of -log softmax(logits)[label]; logits [N, C],
    labels an int64 or int32 tensor [N] of classes in [0, C)."""

    def forward(self, logits, labels):
        return functional.cross_entropy(logits, labels)


class MSELoss(Module):
    """The mean (reduction="mean") or sum of (input - target) ** 2."""

    def __init__(self, reduction="mean"):
        super().__init__()
        functional.check_reduction(reduction)
        object.__setattr__(self, "reduction", reduction)

    def forward(self, input, target):
        return functional.mse_loss(input, target, reduction=self.reduction)


class DistributedDataParallel(Module):
    """torch's DDP for tide: wraps a module whose parameters every rank
    holds, starts them all from rank 0's (a broadcast), and averages the
    gradients across ranks during backward. Each parameter's gradient is
    handed to a tide.GradientReducer as soon as backward has summed it (a
    post-accumulate hook), so each bucket's all-reduce starts while the
    backward of the layers below is still being queued; once the last one
    is in, every parameter's .grad is the average. Every parameter must get
    a gradient in every backward (as torch's find_unused_parameters=False).

        model = tide.nn.DistributedDataParallel(net)
        loss_fn(model(x), y).backward()   # .grad averaged across ranks
        opt.step()
    """

    def __init__(self, module, bucket_mb=25.0, first_bucket_mb=1.0, broadcast=True):
        super().__init__()
        self.module = module
        params = module.parameters()
        if not params:
            raise ValueError("DistributedDataParallel: the module has no parameters")
        if broadcast:
            _tide.broadcast_params_(params)
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "reducer", _tide.GradientReducer(params, bucket_mb=bucket_mb,
                                                                  first_bucket_mb=first_bucket_mb))
        object.__setattr__(self, "_waiting", len(params))
        for i, p in enumerate(params):
            p.register_post_accumulate_grad_hook(self._hook(i))

    def _hook(self, i):
        # A weak reference: the hook lives in the parameter (C++), where
        # Python's collector cannot see a cycle back to this object.
        ref = _weakref.ref(self)

        def hook(grad):
            self = ref()
            if self is None:
                return
            self.reducer.push_gradient(i, grad)
            if not self.reducer.syncing:
                # The reducer sums micro-batches itself: start .grad afresh.
                self._params[i].grad = None
            object.__setattr__(self, "_waiting", self._waiting - 1)
            if self._waiting == 0:
                object.__setattr__(self, "_waiting", len(self._params))
                if self.reducer.syncing:
                    for j, p in enumerate(self._params):
                        p.grad = self.reducer.reduced(j)
                self.reducer.finish_step()

        return hook

    def no_sync(self):
        """A context manager: backward passes inside it sum gradients on this
        rank only; the next one outside it averages the sums across ranks."""
        return self.reducer.no_sync()

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)
