"""Type stubs of the Rust extension module ``dsgd._core`` (see its docstrings)."""

from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, TypedDict, Union
from os import PathLike

import numpy as np
import numpy.typing as npt

__version__: str
FIT_OPTIONS: List[str]

Array = npt.NDArray[np.float64]
Data = Dict[str, Union[float, Sequence[Any], Array]]
Plates = Literal["auto", "on", "off"]

class CompileError(Exception):
    """A model that does not compile; ``str(e)`` is the whole diagnostic."""

    file: str
    line: Optional[int]
    column: Optional[int]
    message: str
    expected: str

def models() -> Dict[str, str]:
    """The built-in models: name -> one-line description."""

class Latents(TypedDict):
    name: List[str]
    mean: Array
    sd: Array
    q05: Array
    q50: Array
    q95: Array
    guide_loc: Array
    guide_scale: Array
    transform: List[str]

class PreciseValue(TypedDict):
    value: float
    se: float
    samples: int

class Trajectory(TypedDict):
    iter: npt.NDArray[np.int64]
    value: Array
    value_se: Array
    var_component: Array
    var_norm: Array
    eta: Array
    smoothed: Array
    gap: Array
    gap_se: Array
    params: Array
    latent_loc: Array
    latent_scale: Array

class Fit:
    """The result of ``Model.fit``."""

    @property
    def final_value(self) -> float:
        """The last measured objective: the ELBO, or the user's ``E``."""
    @property
    def final_value_se(self) -> float: ...
    @property
    def kind(self) -> str:
        """``"elbo"`` or ``"objective"``."""
    @property
    def theta(self) -> Array:
        """The fitted vector (names in ``theta_names``), what ``Model.gradients`` takes."""
    @property
    def theta_names(self) -> List[str]: ...
    @property
    def params(self) -> Dict[str, float]:
        """The model's own parameters by name."""
    @property
    def latent_names(self) -> List[str]:
        """The fitted latents (fixed ones left out)."""
    @property
    def latents(self) -> Latents:
        """Per-latent mean, sd and 5/50/95 % quantiles of the fitted guide."""
    @property
    def trajectory(self) -> Trajectory:
        """The measurements during the run, as columns."""
    @property
    def final_precise(self) -> Optional[PreciseValue]:
        """The objective at the final parameters from many fresh samples (``fit(...,
        precise=True)``), or None when not asked for."""
    @property
    def eta(self) -> Union[float, str, None]:
        """The accuracy asked for: a number, ``"auto"``, or None when nothing is smoothed."""
    @property
    def converged(self) -> bool: ...
    @property
    def convergence(self) -> str:
        """Why the run is or is not judged converged."""
    @property
    def status(self) -> str:
        """``"completed"`` or ``"non_finite"``."""
    @property
    def message(self) -> Optional[str]: ...
    @property
    def bias_warning(self) -> Optional[str]:
        """Why the estimator is biased for this program, or None."""
    @property
    def smoothing_warning(self) -> Optional[str]:
        """The warning that the final smoothing gap exceeds its noise, or None."""
    @property
    def iterations(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def report(self) -> Dict[str, Any]:
        """Exactly what ``dsgd run --json`` prints."""
    def sample(self, n: int, seed: int = 0) -> Array:
        """``(n, len(latent_names))`` draws from the fitted guide."""
    def to_pandas(self) -> Any:
        """The trajectory as a pandas DataFrame."""
    def latents_to_pandas(self) -> Any:
        """The latent summaries as a pandas DataFrame indexed by name."""

class Model:
    """A compiled model."""

    @staticmethod
    def from_source(
        text: str,
        name: str = "model",
        base_dir: Optional[Union[str, PathLike[str]]] = None,
        data: Optional[Data] = None,
        plates: Plates = "auto",
    ) -> Model:
        """Compiles model text. ``plates`` says which ``for`` loops stay loops, as the
        command line's ``--plates``: ``"auto"`` (independent rows, at least 1,000 of them),
        ``"on"`` (every qualifying loop) or ``"off"`` (every loop unrolled); the model keeps
        it when data is bound and when it is pickled."""
    @staticmethod
    def from_file(
        path: Union[str, PathLike[str]],
        data: Optional[Data] = None,
        plates: Plates = "auto",
    ) -> Model: ...
    @staticmethod
    def builtin(name: str, data: Optional[Data] = None, plates: Plates = "auto") -> Model: ...
    def with_data(self, data: Data) -> Model:
        """The same model with ``data`` bound to its ``data`` declarations by name."""
    @property
    def plates(self) -> Plates:
        """The plate policy the model compiles with."""
    @property
    def data(self) -> Dict[str, Array]: ...
    @property
    def name(self) -> str: ...
    @property
    def mode(self) -> str:
        """``"variational"`` or ``"objective"``."""
    @property
    def source(self) -> str: ...
    @property
    def theta_names(self) -> List[str]: ...
    @property
    def init_theta(self) -> Array: ...
    @property
    def latent_names(self) -> List[str]: ...
    def check(self) -> Dict[str, Any]:
        """What ``dsgd check --json`` says."""
    def fit(
        self,
        *,
        estimator: Optional[str] = None,
        eta: Union[float, str, None] = None,
        eta_decay: Optional[float] = None,
        eta_scale: Optional[str] = None,
        iters: Optional[int] = None,
        batch: Optional[int] = None,
        optimizer: Optional[str] = None,
        lr: Optional[float] = None,
        sgd_power: Optional[float] = None,
        seed: Optional[int] = None,
        log_every: Optional[int] = None,
        log_samples: Optional[int] = None,
        on_nonfinite: Optional[str] = None,
        threads: Optional[int] = None,
        data: Optional[Data] = None,
        precise: bool = False,
        precise_rel_se: Optional[float] = None,
        precise_min_samples: Optional[int] = None,
        precise_max_samples: Optional[int] = None,
        subsample: Optional[int] = None,
    ) -> Fit:
        """Optimises the model with ``dsgd run``'s options; each one left out (None) takes
        ``dsgd run``'s default, and a built-in model its own recommended settings.

        ``subsample=M`` (``dsgd run --subsample M``): each step reads M rows of every loop
        kept as a plate, drawn afresh, the plate's sum scaled by rows / M (an unbiased
        gradient); the objective is then estimated on M rows per 16 samples, drawn
        afresh, its standard error including the rows' sampling.

        ``precise=True`` also measures the objective at the final parameters with many
        fresh samples (``dsgd run --precise``): until its standard error is at most
        ``precise_rel_se`` of the value, with at least ``precise_min_samples`` and at most
        ``precise_max_samples`` samples; the result is ``Fit.final_precise``. A setting
        beyond this machine's memory raises ``MemoryError`` before anything runs. An option
        the run does not read (``eta`` for ``estimator="score"``, ``lr`` for DoG, ...) gives a
        ``UserWarning``, as ``dsgd run`` warns."""
    def gradients(
        self,
        theta: Optional[Union[Sequence[float], Array]] = None,
        n: int = 1000,
        *,
        estimator: Optional[str] = None,
        eta: Optional[float] = None,
        eta_decay: Optional[float] = None,
        seed: Optional[int] = None,
        iteration: Optional[int] = None,
        data: Optional[Data] = None,
    ) -> Array:
        """``(n, len(theta_names))`` per-sample gradient estimates at ``theta``; by default
        at iteration 3999, where DSGD's eta_k is ``eta``. Computed in parts (the same
        numbers as one batch): Ctrl-C stops it with ``KeyboardInterrupt``. An option the
        estimator does not read gives a ``UserWarning``."""
    def _fit_many(self, options: List[Dict[str, Any]]) -> List[Fit]: ...
    def _compare(
        self,
        *,
        etas: Optional[List[float]] = None,
        seeds: Optional[int] = None,
        iters: Optional[int] = None,
        lr: Optional[float] = None,
        eta_decay: Optional[float] = None,
        log_every: Optional[int] = None,
        log_samples: Optional[int] = None,
        data: Optional[Data] = None,
    ) -> str: ...
    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]: ...

class FitOptions:
    """``Model.fit``'s keywords as one typed signature (every one optional)."""

    def __init__(
        self,
        *,
        estimator: Optional[str] = None,
        eta: Union[float, str, None] = None,
        eta_decay: Optional[float] = None,
        eta_scale: Optional[str] = None,
        iters: Optional[int] = None,
        batch: Optional[int] = None,
        optimizer: Optional[str] = None,
        lr: Optional[float] = None,
        sgd_power: Optional[float] = None,
        seed: Optional[int] = None,
        log_every: Optional[int] = None,
        log_samples: Optional[int] = None,
        on_nonfinite: Optional[str] = None,
        threads: Optional[int] = None,
        precise: bool = False,
        precise_rel_se: Optional[float] = None,
        precise_min_samples: Optional[int] = None,
        precise_max_samples: Optional[int] = None,
        subsample: Optional[int] = None,
    ) -> None: ...

def _restore_model(
    state: Tuple[Any, ...], data: Dict[str, Any], plates: Plates = "auto"
) -> Model: ...
