"""Data bound from Python: numbers and numpy arrays for `data` declarations, the same numbers
as `dsgd run --data file.json`, pickling with the data, and errors."""

import json
import pickle

import numpy as np
import pytest

import dsgd
from conftest import without_seconds

# A regression with a step: y ~ N(a x + b [x > c], 1), with data declared but not given.
SOURCE = """
data x;
data y;
data n;
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n { observe y[i] ~ Normal(a * x[i] + (if x[i] > 0.5 { b } else { 0 }), 1); }
"""


def data_set(k=8):
    x = np.linspace(0, 1, k)
    y = 2.0 * x + np.where(x > 0.5, 3.0, 0.0)
    return {"x": x, "y": y, "n": k}


def test_fit_with_data_is_the_cli_with_the_same_json(cli, tmp_path):
    path = tmp_path / "reg.dsgd"
    path.write_text(SOURCE)
    d = data_set()
    (tmp_path / "d.json").write_text(json.dumps({k: np.asarray(v).tolist() for k, v in d.items()}))
    expected = cli("run", path, "--data", tmp_path / "d.json", "--iters", "400", "--seed", "2", "--json")
    m = dsgd.Model.from_file(path, data=d)
    a = m.fit(iters=400, seed=2)
    other = dsgd.Model.from_file(path, data=data_set(5))
    b = other.fit(iters=400, seed=2, data=d)
    assert without_seconds(a.report) == without_seconds(expected)
    assert without_seconds(b.report) == without_seconds(expected)


def test_bound_data_is_kept_and_pickled():
    m = dsgd.Model.from_source(SOURCE, data=data_set(6))
    assert sorted(m.data) == ["n", "x", "y"] and m.data["x"].shape == (6,)
    again = pickle.loads(pickle.dumps(m))
    assert np.array_equal(again.data["y"], m.data["y"])
    assert without_seconds(again.fit(iters=200).report) == without_seconds(m.fit(iters=200).report)


def test_data_changes_the_fit():
    m = dsgd.Model.from_source(SOURCE, data=data_set())
    shifted = {**data_set(), "y": data_set()["y"] + 10.0}
    a = m.fit(iters=300, seed=1)
    b = m.fit(iters=300, seed=1, data=shifted)
    # The same seed and initial guide: only the data differ, and with it the ELBO at the start.
    assert a.trajectory["value"][0] != b.trajectory["value"][0]
    assert m.with_data(shifted).data["y"].tolist() == shifted["y"].tolist()
    # fit(data=...) does not change the model it was called on.
    assert np.array_equal(m.data["y"], data_set()["y"])


def test_builtin_data_can_be_replaced(cli, tmp_path):
    counts = np.arange(74) % 7 + 10
    (tmp_path / "c.json").write_text(json.dumps({"counts": counts.tolist()}))
    expected = cli("run", "textmsg", "--data", tmp_path / "c.json", "--iters", "200", "--json")
    got = dsgd.Model.builtin("textmsg", data={"counts": counts}).fit(iters=200)
    assert without_seconds(got.report) == without_seconds(expected)


def test_gradients_compare_and_sweep_take_data():
    d = data_set()
    m = dsgd.Model.from_source(SOURCE, data=data_set(5))
    g = m.gradients(n=8, data=d, seed=1)
    assert np.array_equal(g, m.with_data(d).gradients(n=8, seed=1))
    c = dsgd.compare(m, etas=[0.1], seeds=1, iters=50, log_samples=50, data=d)
    assert c["estimator"][0] == "dsgd"
    s = dsgd.sweep(m, {"estimator": ["dsgd"]}, seeds=1, iters=50, data=d)
    assert s["final_value"][0] == m.with_data(d).fit(iters=50, threads=1).final_value
    with pytest.raises(ValueError, match="data cannot vary in a grid"):
        dsgd.sweep(m, {"data": [d]}, seeds=1, iters=50)


def test_data_errors():
    # x, y, n declared without a value and not bound: the model waits for data, and any
    # use that needs it says which is missing.
    waiting = dsgd.Model.from_source(SOURCE)
    with pytest.raises(dsgd.CompileError, match="`x` has no value") as info:
        waiting.fit(iters=5)
    assert (info.value.line, info.value.column) == (2, 6)
    with pytest.raises(dsgd.CompileError, match="`x` has no value"):
        waiting.theta_names
    m = dsgd.Model.from_source(SOURCE, data=data_set())
    with pytest.raises(Exception, match="`z`"):
        m.with_data({**data_set(), "z": [1.0]})
    with pytest.raises(ValueError, match="data `x` is not numbers"):
        m.with_data({**data_set(), "x": ["a", "b"]})
    with pytest.raises(ValueError, match="data must be a dict"):
        m.with_data([1, 2])
    with pytest.raises(ValueError, match="(?i)finite|nan"):
        m.with_data({**data_set(), "y": np.full(8, np.nan)})


def test_a_file_whose_data_has_no_value_binds_at_fit_time(tmp_path):
    path = tmp_path / "step.dsgd"
    path.write_text(SOURCE)
    m = dsgd.Model.from_file(path)
    assert m.name == "step" and m.data == {}
    d = data_set()
    got = m.fit(data=d, iters=50, seed=2, threads=1)
    want = dsgd.Model.from_source(SOURCE, data=d).fit(iters=50, seed=2, threads=1)
    assert got.final_value == want.final_value
    assert np.array_equal(m.gradients(n=4, data=d), m.with_data(d).gradients(n=4))
    # A model that cannot compile for another reason is still refused at once.
    bad = tmp_path / "bad.dsgd"
    bad.write_text("data y;\nlet z = ;")
    with pytest.raises(dsgd.CompileError):
        dsgd.Model.from_file(bad)


SUMS = """
data x;
data w;
let a = sample Normal(0, 1);
observe sum(x) + w[1][2] + len(w) ~ Normal(a, 1);
"""


def test_arrays_of_every_numeric_dtype_bind_as_their_float64_values():
    # Catches a conversion that reads the memory as the wrong type or order (float32 read
    # as float64, a transposed or strided view read as if contiguous).
    base = np.arange(12, dtype=np.float64).reshape(3, 4) - 5.5
    want = dsgd.Model.from_source(SUMS, data={"x": base.ravel(), "w": base})
    for dtype in [np.float32, np.int64, np.int32, np.uint8]:
        x = (base.ravel() + 6).astype(dtype)
        w = (base + 6).astype(dtype)
        m = dsgd.Model.from_source(SUMS, data={"x": x, "w": w})
        expected = dsgd.Model.from_source(SUMS, data={"x": x.astype(np.float64), "w": w.astype(np.float64)})
        assert m.data["w"].dtype == np.float64 and m.data["w"].shape == (3, 4)
        assert np.array_equal(m.data["w"], w.astype(np.float64))
        assert np.array_equal(m.gradients(n=4, seed=1), expected.gradients(n=4, seed=1))
    # A transposed (Fortran-ordered) view and a strided slice are read by their values.
    wt = np.asfortranarray(base)
    m = dsgd.Model.from_source(SUMS, data={"x": base.ravel()[::1], "w": wt})
    assert np.array_equal(m.data["w"], base)
    assert np.array_equal(m.gradients(n=4, seed=1), want.gradients(n=4, seed=1))
    strided = np.repeat(base.ravel(), 2)[::2]
    m = dsgd.Model.from_source(SUMS, data={"x": strided, "w": base})
    assert np.array_equal(m.gradients(n=4, seed=1), want.gradients(n=4, seed=1))
    # Python lists and booleans are numbers too.
    m = dsgd.Model.from_source(SUMS, data={"x": base.ravel().tolist(), "w": base.tolist()})
    assert np.array_equal(m.gradients(n=4, seed=1), want.gradients(n=4, seed=1))
    m = dsgd.Model.from_source(SUMS, data={"x": [True, False], "w": base})
    assert m.data["x"].tolist() == [1.0, 0.0]


def test_object_and_text_arrays_are_refused_naming_the_data():
    m = dsgd.Model.from_source(SUMS, data={"x": [1.0], "w": np.ones((2, 3))})
    with pytest.raises(ValueError, match=r"data `x` is not numbers: .*dtype object"):
        m.with_data({"x": np.array([1.0, 2.0], dtype=object), "w": np.ones((2, 3))})
    with pytest.raises(ValueError, match=r"data `x` is not numbers: .*dtype object"):
        m.with_data({"x": [1.0, None], "w": np.ones((2, 3))})
    with pytest.raises(ValueError, match=r"data `w` is not numbers: its dtype is complex128"):
        m.with_data({"x": [1.0], "w": np.ones((2, 3), dtype=complex)})


def test_nan_and_inf_in_arrays_are_refused_with_the_index():
    m = dsgd.Model.from_source(SUMS, data={"x": [1.0], "w": np.ones((2, 3))})
    w = np.ones((2, 3))
    w[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"`w\[1\]\[2\]` is inf"):
        m.with_data({"x": [1.0], "w": w})
    with pytest.raises(ValueError, match=r"`x\[2\]` is NaN"):
        m.with_data({"x": np.array([0.0, 1.0, np.nan], dtype=np.float32), "w": np.ones((2, 3))})


def test_a_million_rows_bind_and_pickle_with_their_values():
    # Catches rows lost or reordered on the way in or through a pickle (the binding's speed
    # is measured, not tested).
    rng = np.random.default_rng(3)
    x = rng.standard_normal(1_000_000)
    w = rng.standard_normal((500_000, 3)).astype(np.float32)
    m = dsgd.Model.from_source(SUMS, data={"x": x, "w": w})
    assert np.array_equal(m.data["x"], x)
    assert np.array_equal(m.data["w"], w.astype(np.float64))
    again = pickle.loads(pickle.dumps(m))
    assert np.array_equal(again.data["x"], x)
    assert np.array_equal(again.gradients(n=4, seed=1), m.gradients(n=4, seed=1))
    # The model saw the whole of x: its sum, added left to right.
    total = 0.0
    for v in x.tolist():
        total += v
    other = dsgd.Model.from_source(
        "data s;\ndata w;\nlet a = sample Normal(0, 1);\nobserve s + w[1][2] + len(w) ~ Normal(a, 1);",
        data={"s": total, "w": w},
    )
    assert np.array_equal(other.gradients(n=4, seed=1), m.gradients(n=4, seed=1))


def test_a_loop_over_many_rows_is_a_plate_and_runs_subsampled(cli, tmp_path):
    """A loop of independent iterations over at least a thousand rows is kept as a loop, as on
    the command line (same report), and `subsample=` makes each step read a few rows."""
    source = """
data x;
data y;
data n;
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n { observe y[i] ~ Normal(a * x[i] + b, 1); }
"""
    k = 1500
    d = data_set(k)
    path = tmp_path / "reg.dsgd"
    path.write_text(source)
    (tmp_path / "d.json").write_text(json.dumps({key: np.asarray(v).tolist() for key, v in d.items()}))
    checked = cli("check", path, "--data", tmp_path / "d.json", "--json")
    assert len(checked["plates"]) == 1
    expected = cli("run", path, "--data", tmp_path / "d.json", "--iters", "300", "--json")
    m = dsgd.Model.from_file(path, data=d)
    assert without_seconds(m.fit(iters=300).report) == without_seconds(expected)
    sub = m.fit(iters=300, subsample=64)
    assert sub.report["subsample"] == 64
    # Measured on every row: a finite full-data ELBO.
    assert np.isfinite(sub.report["final_value"])
    again = pickle.loads(pickle.dumps(m))
    assert again.fit(iters=300).report["final_value"] == expected["final_value"]
