"""`plates=`: the plate policy a model compiles with, as the command line's `--plates`, kept
when data is bound and when the model is pickled."""

import json
import pickle

import numpy as np
import pytest

import dsgd
from conftest import without_seconds

# A threshold regression: one if-statement per row, affine in the latents at every row.
SOURCE = """
data x;
data y;
data n;
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n { observe y[i] ~ Bernoulli(if a + b * x[i] < 0 { 0.1 } else { 0.9 }); }
"""


def data_set(k=40):
    x = np.linspace(-2, 2, k)
    y = (np.sin(3 * x) > 0).astype(float)
    return {"x": x, "y": y, "n": k}


def plate_count(m):
    return len(m.check()["plates"])


def test_plates_choose_which_loops_stay_loops_as_on_the_command_line(cli, tmp_path):
    """`plates="on"` keeps a 40-row loop as a plate (as `--plates on`: the same report, for
    DSGD and LYY18), `"auto"` (the default) and `"off"` unroll it. Catches the keyword
    ignored or a policy mapped to another."""
    path = tmp_path / "thr.dsgd"
    path.write_text(SOURCE)
    (tmp_path / "d.json").write_text(
        json.dumps({k: np.asarray(v).tolist() for k, v in data_set().items()})
    )
    on = dsgd.Model.from_file(path, data=data_set(), plates="on")
    assert on.plates == "on" and plate_count(on) == 1
    assert dsgd.Model.from_file(path, data=data_set()).plates == "auto"
    assert plate_count(dsgd.Model.from_file(path, data=data_set())) == 0
    assert plate_count(dsgd.Model.from_source(SOURCE, data=data_set(), plates="off")) == 0
    assert plate_count(dsgd.Model.from_source(SOURCE, data=data_set(), plates="on")) == 1
    for estimator in ["dsgd", "lyy18"]:
        expected = cli(
            "run", path, "--data", tmp_path / "d.json", "--plates", "on",
            "--estimator", estimator, "--iters", "200", "--json",
        )
        got = on.fit(iters=200, estimator=estimator)
        assert without_seconds(got.report) == without_seconds(expected)


def test_the_policy_is_kept_when_data_is_bound_and_through_a_pickle():
    """Catches the policy lost on `with_data`, on a model waiting for data, or in a pickle."""
    m = dsgd.Model.from_source(SOURCE, data=data_set(), plates="on")
    assert plate_count(m.with_data(data_set(30))) == 1
    waiting = dsgd.Model.from_source(SOURCE, plates="on")
    assert waiting.plates == "on"
    assert plate_count(waiting.with_data(data_set())) == 1
    again = pickle.loads(pickle.dumps(m))
    assert again.plates == "on" and plate_count(again) == 1
    off = pickle.loads(pickle.dumps(dsgd.Model.from_source(SOURCE, data=data_set(), plates="off")))
    assert off.plates == "off" and plate_count(off) == 0
    assert np.array_equal(again.gradients(n=4, seed=1), m.gradients(n=4, seed=1))


def test_an_unknown_policy_is_refused_naming_the_keyword():
    with pytest.raises(ValueError, match="plates"):
        dsgd.Model.from_source(SOURCE, data=data_set(), plates="maybe")
    with pytest.raises(ValueError, match="plates"):
        dsgd.Model.builtin("example", plates="yes")
