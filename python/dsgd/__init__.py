"""dsgd: gradient-based optimisation and variational inference for programs that branch.

Diagonalisation SGD (Wagner et al., AISTATS 2024) smooths every if-statement of a model with
a sigmoid of accuracy ``eta`` and tightens ``eta`` while it optimises. This package wraps the
Rust library: numpy arrays in and out, the same numbers as the ``dsgd`` command line for the
same seed, long runs without the GIL and stoppable with Ctrl-C.

>>> import dsgd
>>> model = dsgd.Model.builtin("example")
>>> fit = model.fit(iters=2000, seed=1)
>>> fit.params, fit.final_value          # doctest: +SKIP

``Model`` compiles a model (``from_source``, ``from_file``, ``builtin``); ``Model.fit`` runs an
estimator and returns a ``Fit``; ``Model.gradients`` gives per-sample gradient estimates;
``compare`` runs every estimator as ``dsgd compare`` does; ``sweep`` runs a grid of fits on a
local pool or as Ray tasks.
"""

from ._core import CompileError, Fit, Model, __version__, models
from ._compare import Comparison, compare
from ._sweep import sweep

__all__ = [
    "CompileError",
    "Comparison",
    "Fit",
    "Model",
    "__version__",
    "compare",
    "models",
    "sweep",
]
