"""``dsgd.compare``: every applicable estimator on one model, as ``dsgd compare`` runs them."""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from ._core import Model


class Comparison(dict):
    """The table of ``dsgd compare`` as columns (a dict of equal-length lists), so that
    ``pandas.DataFrame(comparison)`` is the table. One row per cell: an estimator, with its
    eta for DSGD and Fixed.

    Columns: ``estimator``, ``eta`` (None when unused), ``mean`` and ``std`` of the final
    objective over seeds (finite runs; population std), ``n`` (finite runs), ``non_finite``,
    ``final_values`` (per seed, in seed order), ``mean_var_component`` and ``mean_var_norm``
    (the estimator's gradient variances averaged over every logged iterate), ``late_std``
    (the spread of the last ten measurements of a run, averaged over seeds), ``paper_mean``
    and ``paper_std`` (the paper's published cell, for its built-in models), ``in_band``
    (whether ours lies in the reproduction's tolerance band, where it is checked),
    ``problems`` and ``seconds`` (mean wall time of a run).

    Attributes: ``model``, ``lyy18_note`` (why LYY18 was left out, or None), ``table`` (the
    command line's markdown table) and ``raw`` (what ``dsgd compare --json`` prints).
    """

    model: str
    lyy18_note: Optional[str]
    table: str
    raw: dict

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame (needs pandas)."""
        import pandas

        return pandas.DataFrame(dict(self))


def compare(
    model: Model,
    etas: Optional[Sequence[float]] = None,
    seeds: Optional[int] = None,
    iters: Optional[int] = None,
    lr: Optional[float] = None,
    eta_decay: Optional[float] = None,
    log_every: Optional[int] = None,
    log_samples: Optional[int] = None,
    data: Optional[dict] = None,
) -> Comparison:
    """Runs every applicable estimator on ``model`` with seeds ``0..seeds``: DSGD and Fixed
    once per eta (default: the paper's 0.06, 0.1, 0.14, 0.18, 0.22), then Score, Reparam and,
    where its guards are affine, LYY18. The settings are ``dsgd compare``'s (Adam with the
    paper's step for the built-in models, a model's text with DoG, which needs no step size;
    Adam at ``lr`` when it is given; 5 seeds, and each setting left out as ``dsgd compare``
    has it), and so are the numbers.
    ``data`` binds the model's ``data`` declarations as ``Model.with_data`` does. Runs in
    parallel across runs without the GIL; Ctrl-C stops it."""
    if data is not None:
        model = model.with_data(data)
    options: dict = dict(
        seeds=seeds,
        iters=iters,
        lr=lr,
        eta_decay=eta_decay,
        log_every=log_every,
        log_samples=log_samples,
    )
    if etas is not None:
        options["etas"] = [float(e) for e in etas]
    out = json.loads(model._compare(**options))
    raw = out["comparison"]
    cells = raw["cells"]
    columns = {
        "estimator": [c["arm"]["estimator"] for c in cells],
        "eta": [c["arm"]["eta"] for c in cells],
        "mean": [c["summary"]["mean"] for c in cells],
        "std": [c["summary"]["std"] for c in cells],
        "n": [c["summary"]["n"] for c in cells],
        "non_finite": [c["summary"]["non_finite"] for c in cells],
        "final_values": [c["final_elbo"] for c in cells],
        "mean_var_component": [c["mean_var_component"] for c in cells],
        "mean_var_norm": [c["mean_var_norm"] for c in cells],
        "late_std": [c["late_elbo_std"] for c in cells],
        "paper_mean": [p["mean"] if p else None for p in out["paper"]],
        "paper_std": [p["std"] if p else None for p in out["paper"]],
        "in_band": out["band"],
        "problems": [c["problems"] for c in cells],
        "seconds": [c["seconds"] for c in cells],
    }
    result = Comparison(columns)
    result.model = raw["model"]
    result.lyy18_note = raw["lyy18_note"]
    result.table = out["table"]
    result.raw = raw
    return result
