"""Optimizers, as torch.optim's: each keeps its state per parameter and
updates the parameters in place with one op for all of them (per device and
dtype: tide.sgd_step_ and tide.adam_step_ over lists, as torch's foreach
form), so step() only queues work. Parameters whose .grad is None are
skipped, as in torch."""
from . import _tide

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


class Optimizer:
    def __init__(self, params, defaults):
        self.params = list(params)
        if not self.params:
            raise ValueError("%s: got an empty parameter list" % type(self).__name__)
        for i, p in enumerate(self.params):
            if not isinstance(p, _tide.Tensor) or not p.requires_grad or not p.is_leaf:
                raise TypeError("%s: parameter %d is not a leaf tensor that requires a gradient"
                                % (type(self).__name__, i))
        self.defaults = dict(defaults)
        self.state = [dict() for _ in self.params]

    def zero_grad(self, set_to_none=True):
        """Clears the gradients (to None; set_to_none=False is not offered,
        since gradients are not written in place here)."""
        if not set_to_none:
            raise ValueError("zero_grad: only set_to_none=True is supported")
        for p in self.params:
            p.grad = None

    def state_dict(self):
        """The hyperparameters and each parameter's state tensors."""
        return {"defaults": dict(self.defaults), "state": [dict(s) for s in self.state]}

    def _zeros_like(self, p):
        return _tide.zeros(list(p.shape), dtype=p.dtype, device=p.device)

    def step(self):
        raise NotImplementedError


def _check(name, **values):
    for k, v in values.items():
        if not v >= 0:
            raise ValueError("%s: %s must be a non-negative number, got %r" % (name, k, v))


class SGD(Optimizer):
    """torch.optim.SGD (dampening 0, no Nesterov): with momentum, a velocity
    per parameter, velocity = momentum * velocity + grad + weight_decay * p;
    p -= lr * velocity."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        _check("SGD", lr=lr, momentum=momentum, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay))

    def step(self):
        d = self.defaults
        params, grads, velocities = [], [], []
        for p, s in zip(self.params, self.state):
            if p.grad is None:
                continue
            if "velocity" not in s:
                s["velocity"] = self._zeros_like(p)
            params.append(p)
            grads.append(p.grad)
            velocities.append(s["velocity"])
        if params:
            _tide.sgd_step_(params, grads, velocities, lr=d["lr"], momentum=d["momentum"],
                            weight_decay=d["weight_decay"])


class Adam(Optimizer):
    """torch.optim.Adam (not AMSGrad); weight_decay adds an L2 term to the gradient."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        _check(type(self).__name__, lr=lr, eps=eps, weight_decay=weight_decay)
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError("%s: betas must lie in [0, 1), got %r" % (type(self).__name__, betas))
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def _l2(self):
        return self.defaults["weight_decay"]

    def step(self):
        d = self.defaults
        groups = {}  # step count -> (params, grads, m, v): one list op each
        for p, s in zip(self.params, self.state):
            if p.grad is None:
                continue
            if "step" not in s:
                s.update(step=0, m=self._zeros_like(p), v=self._zeros_like(p))
            s["step"] += 1
            self._before(p)
            g = groups.setdefault(s["step"], ([], [], [], []))
            for lst, t in zip(g, (p, p.grad, s["m"], s["v"])):
                lst.append(t)
        for step, (params, grads, m, v) in groups.items():
            _tide.adam_step_(params, grads, m, v, step, lr=d["lr"], beta1=d["betas"][0],
                             beta2=d["betas"][1], eps=d["eps"], weight_decay=self._l2())

    def _before(self, p):
        pass


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (p *= 1 - lr *
    weight_decay before each update), weight_decay 0.01 by default."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    def _l2(self):
        return 0.0

    def _before(self, p):
        decay = self.defaults["lr"] * self.defaults["weight_decay"]
        if decay:
            was = _tide.is_grad_enabled()
            _tide.set_grad_enabled(False)
            try:
                p *= 1.0 - decay
            finally:
                _tide.set_grad_enabled(was)
