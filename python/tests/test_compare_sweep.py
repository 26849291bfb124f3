"""`dsgd.compare` against `dsgd compare --json`, and `dsgd.sweep` on the local pool and on a
local Ray instance: the same numbers as single fits, whichever backend ran them."""

import numpy as np
import pytest

import dsgd
from conftest import without_seconds


def test_compare_is_what_the_cli_says(cli, tmp_path):
    m = dsgd.Model.builtin("example")
    got = dsgd.compare(m, etas=[0.1, 0.14], seeds=2, iters=300, log_samples=200)
    expected = cli(
        "compare", "example", "--etas", "0.1", "0.14", "--seeds", "2", "--iters", "300",
        "--log-samples", "200", "--json", "--out", tmp_path,
    )
    assert without_seconds(got.raw) == without_seconds(expected)
    # One row per cell, in the command line's order, as columns of equal length.
    cells = expected["cells"]
    assert got["estimator"] == [c["arm"]["estimator"] for c in cells]
    # DSGD at each eta and with eta auto, then Fixed at each eta, then the eta-free estimators.
    assert got["estimator"][:5] == ["dsgd", "dsgd", "dsgd", "fixed", "fixed"]
    assert {"score", "rloo", "reparam", "lyy18"} <= set(got["estimator"])
    assert got["eta"][:5] == [0.1, 0.14, "auto", 0.1, 0.14] and set(got["eta"][5:]) == {None}
    assert len({len(v) for v in got.values()}) == 1
    for i, cell in enumerate(expected["cells"]):
        assert got["mean"][i] == cell["summary"]["mean"]
        assert got["final_values"][i] == cell["final_elbo"]
    assert got.lyy18_note is None
    assert got.table.startswith("| estimator | η |")
    df = got.to_pandas()
    assert df.shape[0] == len(cells) and "mean" in df.columns


def test_compare_of_a_paper_model_carries_the_paper_column():
    got = dsgd.compare(dsgd.Model.builtin("xornet"), etas=[0.1], seeds=1, iters=50, log_samples=50)
    assert "lyy18" not in got["estimator"] and "not affine" in got.lyy18_note
    # The paper's xornet DSGD cell at eta 0.1 is -33 +- 7.
    i = got["estimator"].index("dsgd")
    assert (got["paper_mean"][i], got["paper_std"][i]) == (-33.0, 7.0)


def test_compare_rejects_bad_settings():
    m = dsgd.Model.builtin("example")
    with pytest.raises(ValueError, match="at least one eta"):
        dsgd.compare(m, etas=[], seeds=1, iters=10)
    with pytest.raises(ValueError, match="eta must be positive"):
        dsgd.compare(m, etas=[-0.1], seeds=1, iters=10)
    with pytest.raises(ValueError, match="seeds must be a whole number of at least 1"):
        dsgd.compare(m, seeds=0, iters=10)


GRID = {"estimator": ["dsgd", "score"], "eta": [0.1, 0.2]}


def test_sweep_rows_are_the_single_fits():
    m = dsgd.Model.builtin("example")
    res = dsgd.sweep(m, GRID, seeds=[0, 5], iters=200, log_samples=100)
    assert len(res["seed"]) == 8
    assert res["estimator"] == ["dsgd"] * 4 + ["score"] * 4
    assert res["eta"] == [0.1, 0.1, 0.2, 0.2] * 2
    assert res["seed"] == [0, 5] * 4
    assert res.theta_names == ["theta"]
    for i in range(8):
        fit = m.fit(estimator=res["estimator"][i], eta=res["eta"][i], seed=res["seed"][i],
                    iters=200, log_samples=100)
        assert res["final_value"][i] == fit.final_value
        assert np.array_equal(res["theta"][i], fit.theta)
        assert res["status"][i] == "completed" and res["iterations"][i] == 200
    df = res.to_pandas()
    assert df.shape == (8, len(res))


def test_sweep_takes_a_list_of_configurations():
    m = dsgd.Model.builtin("example")
    res = dsgd.sweep(m, [{"estimator": "lyy18"}, {"estimator": "fixed", "eta": 0.3}],
                     seeds=2, iters=100)
    assert res["estimator"] == ["lyy18", "lyy18", "fixed", "fixed"]
    assert res["eta"] == [None, None, 0.3, 0.3]


@pytest.mark.parametrize(
    "grid,kwargs,match",
    [
        ({"estimator": "dsgd"}, {}, "must be a list of values"),
        ({"iterz": [1]}, {}, "unknown fit option `iterz`"),
        ({"seed": [1, 2]}, {}, "give seeds with the `seeds` argument"),
        (GRID, {"backend": "spark"}, "backend must be 'local' or 'ray'"),
        (GRID, {"seeds": 0}, "seeds must be at least 1"),
        ({"eta": [-1.0]}, {}, "eta must be positive"),
    ],
)
def test_sweep_argument_errors(grid, kwargs, match):
    with pytest.raises(ValueError, match=match):
        dsgd.sweep(dsgd.Model.builtin("example"), grid, **{"iters": 10, **kwargs})


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_backend_gives_the_local_table(ray_local, tmp_path):
    # A file model with a data file: the Ray workers get it through the pickled model.
    (tmp_path / "obs.csv").write_text("y\n1.0\n2.0\n4.5\n")
    (tmp_path / "d.dsgd").write_text(
        'data y = csv("obs.csv", "y");\n'
        "let m = sample Normal(0, 10);\n"
        "for i in 0..3 { observe y[i] ~ Normal(m, 1); }\n"
        "factor if m < 2 { -0.5 } else { 0 };\n"
    )
    for m in [dsgd.Model.builtin("textmsg"), dsgd.Model.from_file(tmp_path / "d.dsgd")]:
        local = dsgd.sweep(m, GRID, seeds=2, iters=150, log_samples=100)
        remote = dsgd.sweep(m, GRID, seeds=2, iters=150, log_samples=100, backend="ray")
        assert remote.keys() == local.keys()
        for k in local:
            if k == "seconds":
                continue
            if k == "theta":
                assert all(np.array_equal(a, b) for a, b in zip(local[k], remote[k]))
            else:
                assert local[k] == remote[k], k
