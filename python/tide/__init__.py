"""tide from Python: ops are pushed to a C++ backend that runs them
asynchronously; Python waits only at barriers (wait_all, Tensor.wait_to_read)
and blockers (Tensor.item, Tensor.numpy, repr).

    import tide
    rt = tide.init()              # MPI under a launcher, one rank otherwise
                                  # (left out, the first op does the same)
    x = tide.ones([1, 2])
    z = x * x + 2                 # returns at once
    print(z)                      # a blocker: waits for z only
    with rt.step():               # a minibatch, for the sync policy
        ...
    tide.wait_all()

Autograd, modules and optimizers, as PyTorch's:

    model = tide.nn.Sequential(tide.nn.Linear(64, 128), tide.nn.ReLU(), tide.nn.Linear(128, 10))
    opt = tide.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss = tide.nn.CrossEntropyLoss()(model(x), labels)
    opt.zero_grad()
    loss.backward()               # queues the backward ops, returns at once
    opt.step()
"""
import atexit as _atexit
import os as _os
import sys as _sys

# Open MPI's components are shared objects that expect libmpi's symbols to
# be global: load the extension (and the libmpi it links) with RTLD_GLOBAL.
_flags = _sys.getdlopenflags()
_sys.setdlopenflags(_flags | _os.RTLD_GLOBAL)
try:
    from ._tide import *  # noqa: F401,F403
    from ._tide import __version__  # noqa: F401
    from ._tide import shutdown as _shutdown
finally:
    _sys.setdlopenflags(_flags)

from . import nn, optim  # noqa: E402,F401
from ._grad import enable_grad, no_grad  # noqa: E402,F401

# Finish queued work and MPI before the interpreter tears modules down.
_atexit.register(_shutdown)
