"""Grad mode: tide.no_grad() and tide.enable_grad(), as context managers
or decorators (recording is per thread, like torch's)."""
import functools as _functools

from ._tide import is_grad_enabled as _is_enabled
from ._tide import set_grad_enabled as _set_enabled

__all__ = ["no_grad", "enable_grad"]


class _GradMode:
    _mode = True

    def __enter__(self):
        self._prev = _is_enabled()
        _set_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False

    def __call__(self, fn):
        @_functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)

        return wrapped


class no_grad(_GradMode):
    """Ops in this block (or this function) record no graph: for
    evaluation, and for updates of parameters in place."""

    _mode = False


class enable_grad(_GradMode):
    """Recording on again inside a no_grad block."""

    _mode = True
