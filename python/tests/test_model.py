"""Building models: built-ins, text, files with data; `check`; pickling; errors."""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import dsgd
from conftest import without_seconds

SIMPLE = """
// a Normal mean with a step in the likelihood
let mu = sample Normal(0, 1);
observe 1.5 ~ Normal(mu, 1);
factor if mu < 0 { -1 } else { 0 };
"""


def test_models_lists_the_builtins_with_descriptions():
    m = dsgd.models()
    assert list(m) == [
        "example",
        "temperature",
        "xornet",
        "walk",
        "cheating",
        "textmsg",
        "influenza",
    ]
    assert all(isinstance(d, str) and d for d in m.values())


def test_builtin_layout():
    m = dsgd.Model.builtin("textmsg")
    assert m.name == "textmsg"
    assert m.mode == "variational"
    assert m.latent_names == ["l1", "l2", "tau"]
    assert m.theta_names == [
        "mu[l1]",
        "rho[l1]",
        "mu[l2]",
        "rho[l2]",
        "mu[tau]",
        "rho[tau]",
    ]
    init = m.init_theta
    assert init.shape == (6,) and init.dtype == np.float64
    # textmsg's guide starts at mean m = 2.63624 with std sqrt(log 2) (rho = softplus^-1).
    assert init[0] == pytest.approx(2.63624, abs=1e-5)
    assert np.log1p(np.exp(init[1])) == pytest.approx(np.sqrt(np.log(2)), rel=1e-12)


@pytest.mark.parametrize("name", ["example", "temperature", "xornet", "cheating"])
def test_check_is_what_the_cli_says(cli, name):
    assert dsgd.Model.builtin(name).check() == cli("check", name, "--json")


def test_check_of_a_file_names_it(cli, tmp_path):
    path = tmp_path / "simple.dsgd"
    path.write_text(SIMPLE)
    m = dsgd.Model.from_file(path)
    assert m.name == "simple"
    assert m.check() == cli("check", path, "--json")
    assert m.check()["if_statements"] == 1


def test_from_source_and_from_file_agree(tmp_path):
    path = tmp_path / "simple.dsgd"
    path.write_text(SIMPLE)
    a = dsgd.Model.from_source(SIMPLE, name="simple")
    b = dsgd.Model.from_file(str(path))
    assert a.theta_names == b.theta_names == ["mu[mu]", "rho[mu]"]
    fa, fb = a.fit(iters=300, seed=3), b.fit(iters=300, seed=3)
    assert without_seconds(fa.report) == without_seconds(fb.report)


DATA_MODEL = """
data y = csv("obs.csv", "y");
let m = sample Normal(0, 10);
for i in 0..3 { observe y[i] ~ Normal(m, 1); }
"""


def test_a_file_model_reads_csv_beside_it_and_pickles_with_its_data(tmp_path):
    (tmp_path / "obs.csv").write_text("y\n1.0\n2.0\n4.5\n")
    path = tmp_path / "d.dsgd"
    path.write_text(DATA_MODEL)
    m = dsgd.Model.from_file(path)
    before = m.fit(iters=500, seed=1)
    blob = pickle.dumps(m)
    # Elsewhere (a Ray worker) the data file does not exist: the pickle carries it.
    (tmp_path / "obs.csv").unlink()
    again = pickle.loads(blob)
    assert again.source == m.source
    after = again.fit(iters=500, seed=1)
    assert without_seconds(after.report) == without_seconds(before.report)


def test_builtin_pickles_by_name():
    m = pickle.loads(pickle.dumps(dsgd.Model.builtin("walk")))
    assert m.name == "walk" and len(m.latent_names) == 16


def test_compile_error_carries_file_line_column_and_message():
    text = "param t = 1;\nlet z = sample Normal(t, 1);\nmaximize z +;\n"
    with pytest.raises(dsgd.CompileError) as info:
        dsgd.Model.from_source(text, name="bad.dsgd")
    e = info.value
    assert (e.file, e.line, e.column) == ("bad.dsgd", 3, 13)
    assert "unexpected" in e.message and e.expected.startswith("an expression")
    text_of_error = str(e)
    assert "bad.dsgd:3:13" in text_of_error and "maximize z +;" in text_of_error
    assert isinstance(e, Exception)


def test_compile_error_of_a_missing_data_file_names_it(tmp_path):
    path = tmp_path / "d.dsgd"
    path.write_text(DATA_MODEL)
    with pytest.raises(dsgd.CompileError) as info:
        dsgd.Model.from_file(path)
    assert "obs.csv" in str(info.value)
    assert info.value.line == 2


def test_unknown_builtin_and_missing_file():
    with pytest.raises(ValueError, match="no built-in model `nope`"):
        dsgd.Model.builtin("nope")
    with pytest.raises(FileNotFoundError, match="no_such.dsgd"):
        dsgd.Model.from_file("/nonexistent/no_such.dsgd")


def test_a_hostile_input_is_an_exception_not_a_crash():
    with pytest.raises(dsgd.CompileError):
        dsgd.Model.from_source("(" * 100_000)
    with pytest.raises(dsgd.CompileError):
        dsgd.Model.from_source("\x00\xff let = ;")


# A child interpreter, so that a read that hangs fails the test (by the timeout) instead of
# hanging the whole run.
SPECIAL_FILE = """
import sys, dsgd
try:
    dsgd.Model.from_file(sys.argv[1])
except OSError as e:
    print(type(e).__name__, e)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and /dev/zero")
def test_from_file_refuses_a_device_or_a_fifo_without_reading_it(tmp_path):
    fifo = tmp_path / "pipe.dsgd"
    os.mkfifo(fifo)
    for path in ["/dev/zero", str(fifo)]:
        out = subprocess.run(
            [sys.executable, "-c", SPECIAL_FILE, path],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("OSError"), out.stdout + out.stderr
        assert "is not a regular file" in out.stdout and path in out.stdout, out.stdout
