"""``dsgd.sweep``: a grid of fits (estimators x eta x seeds x options) run as independent
tasks, on a local pool or as Ray tasks on whatever cluster ``ray.init()`` connected to.

Each fit is a pure function of its model, options and seed, so the table is the same
whichever backend ran it (only ``seconds`` differs). There is no scheduler here: the local
backend is the Rust thread pool of ``Model.fit``, the Ray backend is plain Ray tasks.
"""

from __future__ import annotations

import itertools
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Union

from ._core import FIT_OPTIONS, Fit, Model

Grid = Union[Mapping[str, Sequence[Any]], Sequence[Mapping[str, Any]]]


class SweepResult(dict):
    """The sweep's table as columns (a dict of equal-length lists, one row per fit, in grid
    order then seed order), so that ``pandas.DataFrame(result)`` is the table.

    Columns: every option the grid varies, ``seed``, ``final_value`` and ``final_value_se``,
    ``converged``, ``status``, ``message``, ``iterations``, ``params`` (the model's own
    parameters by name, a dict per row), ``theta`` (the fitted vector, a numpy array per row;
    names in ``theta_names``) and ``seconds`` (wall time, the one column that depends on the
    machine).
    """

    theta_names: List[str]

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame (needs pandas)."""
        import pandas

        return pandas.DataFrame(dict(self))


def _configs(grid: Grid) -> List[Dict[str, Any]]:
    """The grid as a list of option dicts: the Cartesian product of a dict of lists, or an
    explicit list of dicts."""
    if isinstance(grid, Mapping):
        keys = list(grid)
        for k in keys:
            v = grid[k]
            if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
                raise ValueError(
                    f"grid[{k!r}] must be a list of values, got {v!r}"
                )
        values = [list(grid[k]) for k in keys]
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    configs = [dict(c) for c in grid]
    for c in configs:
        if not isinstance(c, dict):
            raise ValueError("grid must be a dict of lists or a list of dicts")
    return configs


def _seeds(seeds: Union[int, Iterable[int]]) -> List[int]:
    if isinstance(seeds, bool):
        raise ValueError(f"seeds must be a count or a list of seeds, got {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 1:
            raise ValueError(f"seeds must be at least 1, got {seeds}")
        return list(range(seeds))
    out = list(seeds)
    if not out:
        raise ValueError("seeds is empty")
    return out


def _row(fit: Fit) -> Dict[str, Any]:
    """What a sweep keeps of one fit (plain values: they travel back from Ray workers)."""
    return {
        "final_value": fit.final_value,
        "final_value_se": fit.final_value_se,
        "converged": fit.converged,
        "status": fit.status,
        "message": fit.message,
        "iterations": fit.iterations,
        "params": fit.params,
        "theta": fit.theta,
        "seconds": fit.seconds,
    }

_ROW_KEYS = [
    "final_value",
    "final_value_se",
    "converged",
    "status",
    "message",
    "iterations",
    "params",
    "theta",
    "seconds",
]


def _fit_row(model: Model, options: Dict[str, Any]) -> Dict[str, Any]:
    """One task: a fit and its row (the Ray backend's remote function)."""
    return _row(model.fit(**options))


def _run_local(model: Model, tasks: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [_row(f) for f in model._fit_many(tasks)]


def _run_ray(model: Model, tasks: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "backend='ray' needs Ray: pip install 'ray' (and call ray.init(...) to choose "
            "the cluster; without it Ray starts a local one)"
        ) from e
    remote = ray.remote(num_cpus=1)(_fit_row)
    model_ref = ray.put(model)
    refs = [remote.remote(model_ref, t) for t in tasks]
    try:
        return ray.get(refs)
    except KeyboardInterrupt:
        for r in refs:
            ray.cancel(r, force=True)
        raise


def sweep(
    model: Model,
    grid: Grid,
    seeds: Union[int, Iterable[int]] = 1,
    backend: str = "local",
    **options: Any,
) -> SweepResult:
    """Fits ``model`` once per grid point and seed, as independent tasks, and returns one
    table (a ``SweepResult``).

    ``grid`` is a dict from a ``Model.fit`` option to the values to try (the Cartesian
    product is run, e.g. ``{"estimator": ["dsgd", "fixed"], "eta": [0.1, 0.14]}``) or an
    explicit list of option dicts. ``seeds`` is a count (seeds ``0..seeds``) or a list of
    seeds. Further keyword ``options`` apply to every fit (e.g. ``iters=2000``, or
    ``data={...}`` as in ``Model.with_data``).

    ``backend="local"`` runs the fits in parallel on this machine (the Rust thread pool,
    GIL released, Ctrl-C stops it); ``backend="ray"`` submits one Ray task per fit to the
    cluster ``ray.init(...)`` connected to (``ray.init(address="auto")`` on a cluster node,
    or ``ray.init("ray://head:10001")`` from outside; without ``ray.init`` Ray starts a local
    instance). Every Ray worker needs this package installed. Each fit uses one thread
    unless ``threads`` says otherwise; the results do not depend on it, nor on the backend.
    """
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
    if "data" in options:
        data = options.pop("data")
        if data is not None:
            model = model.with_data(data)
    configs = _configs(grid)
    if any("data" in c for c in configs):
        raise ValueError(
            "data cannot vary in a grid: sweep each data set separately (data=...)"
        )
    seed_list = _seeds(seeds)
    for key in list(options) + [k for c in configs for k in c]:
        if key not in FIT_OPTIONS:
            raise ValueError(
                f"unknown fit option `{key}` (expected one of {', '.join(FIT_OPTIONS)})"
            )
        if key == "seed":
            raise ValueError("give seeds with the `seeds` argument, not as an option")
    varied: List[str] = []
    for c in configs:
        for k in c:
            if k not in varied:
                varied.append(k)
    tasks = []
    for c in configs:
        for s in seed_list:
            t = {"threads": 1, **options, **c, "seed": s}
            tasks.append(t)
    rows = _run_local(model, tasks) if backend == "local" else _run_ray(model, tasks)
    columns: Dict[str, List[Any]] = {k: [] for k in varied}
    columns["seed"] = []
    for k in _ROW_KEYS:
        columns[k] = []
    for t, r in zip(tasks, rows):
        for k in varied:
            columns[k].append(t.get(k))
        columns["seed"].append(t["seed"])
        for k, v in r.items():
            columns[k].append(v)
    result = SweepResult(columns)
    result.theta_names = model.theta_names
    return result
