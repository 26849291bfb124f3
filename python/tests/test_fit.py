"""Fits: the same numbers as `dsgd run --json` for the same seed, the Fit's views of them,
latent summaries, and bad options."""

import subprocess
import warnings

import numpy as np
import pytest

import dsgd
from conftest import without_seconds

CASES = [
    ("example", ["--estimator", "dsgd", "--eta", "0.14", "--iters", "700", "--seed", "3"],
     dict(estimator="dsgd", eta=0.14, iters=700, seed=3)),
    ("example", ["--estimator", "lyy18", "--iters", "500", "--optimizer", "sgd", "--lr", "0.3"],
     dict(estimator="lyy18", iters=500, optimizer="sgd", lr=0.3)),
    ("textmsg", ["--estimator", "score", "--iters", "400", "--batch", "32", "--seed", "7",
                 "--log-every", "50", "--log-samples", "300"],
     dict(estimator="score", iters=400, batch=32, seed=7, log_every=50, log_samples=300)),
    ("xornet", ["--estimator", "fixed", "--eta", "0.1", "--iters", "300", "--lr", "0.01"],
     dict(estimator="fixed", eta=0.1, iters=300, lr=0.01)),
    ("walk", ["--estimator", "reparam", "--iters", "300", "--seed", "11", "--threads", "1"],
     dict(estimator="reparam", iters=300, seed=11, threads=1)),
    # No optimiser named: lr given means Adam, a built-in's own step (temperature's) too.
    ("example", ["--iters", "300", "--lr", "0.01"], dict(iters=300, lr=0.01)),
    ("temperature", ["--iters", "200"], dict(iters=200)),
    ("temperature", ["--iters", "200", "--optimizer", "dog"], dict(iters=200, optimizer="dog")),
]


@pytest.mark.parametrize("kwargs,optimizer,lr", [
    (dict(), "dog", None),
    (dict(lr=0.01), "adam", 0.01),
    (dict(optimizer="DoG"), "dog", None),
    (dict(optimizer="sgd", lr=0.2), "sgd", 0.2),
])
def test_the_optimiser_is_dog_unless_a_step_size_is_given(kwargs, optimizer, lr):
    r = dsgd.Model.builtin("example").fit(iters=50, **kwargs).report
    assert (r["optimizer"], r["lr"]) == (optimizer, lr)


@pytest.mark.parametrize("name,args,kwargs", CASES)
def test_same_seed_same_numbers_as_the_cli(cli, name, args, kwargs):
    expected = cli("run", name, *args, "--json")
    fit = dsgd.Model.builtin(name).fit(**kwargs)
    assert without_seconds(fit.report) == without_seconds(expected)


def test_defaults_are_the_cli_defaults(cli):
    # Everything but the iteration count left at its default, on both sides.
    expected = cli("run", "example", "--iters", "200", "--json")
    got = dsgd.Model.builtin("example").fit(iters=200).report
    assert without_seconds(got) == without_seconds(expected)


def test_the_fit_views_agree_with_the_report():
    fit = dsgd.Model.builtin("textmsg").fit(iters=300, log_every=100, seed=2)
    r = fit.report
    assert fit.final_value == r["final_value"] == r["final_elbo"]
    assert fit.final_value_se == r["final_value_se"] and fit.kind == r["kind"] == "elbo"
    assert fit.theta.tolist() == r["theta"]
    assert fit.theta_names == r["theta_names"]
    assert fit.params == r["params"] == {}
    assert fit.status == "completed" and fit.message is None
    assert fit.converged == r["converged"] and fit.convergence == r["convergence"]
    assert fit.iterations == 300
    t = fit.trajectory
    assert t["iter"].tolist() == [0, 100, 200, 300]
    for key in ["value", "value_se", "var_component", "var_norm", "eta"]:
        assert t[key].tolist() == [row[key] for row in r["trajectory"]], key
    assert t["latent_loc"].tolist() == [row["latent_loc"] for row in r["trajectory"]]
    assert t["latent_scale"].shape == (4, 3) and t["params"].shape == (4, 0)
    df = fit.to_pandas()
    assert list(df.columns) == [
        "iter", "value", "value_se", "var_component", "var_norm", "eta", "smoothed", "gap",
        "gap_se", "u_loc[l1]", "u_scale[l1]", "u_loc[l2]", "u_scale[l2]", "u_loc[tau]",
        "u_scale[tau]",
    ]
    assert df["u_loc[tau]"].tolist() == t["latent_loc"][:, 2].tolist()
    assert df["u_scale[l1]"].tolist() == t["latent_scale"][:, 0].tolist()
    # The smoothing gap, logged by DSGD, is the smoothed value minus the crisp one.
    for key in ["smoothed", "gap", "gap_se"]:
        assert t[key].tolist() == [row[key] for row in r["trajectory"]], key
    assert np.allclose(t["gap"], t["smoothed"] - t["value"], rtol=1e-9, atol=1e-9)
    assert len(df) == 4 and df["value"].iloc[-1] == fit.final_value


def test_to_pandas_has_the_columns_and_numbers_of_trajectory_csv(cli, tmp_path):
    pd = pytest.importorskip("pandas")
    # A positive latent: its `u_` columns are on the log scale.
    text = """
    let a = sample Normal(0, 1);
    let s = sample Gamma(2, 1);
    observe 1.5 ~ Normal(a, s);
    """
    path = tmp_path / "m.dsgd"
    path.write_text(text)
    fit = dsgd.Model.from_file(path).fit(iters=300, seed=4)
    cli("run", path, "--iters", "300", "--seed", "4", "--json", "--out", tmp_path / "out")
    csv = pd.read_csv(tmp_path / "out" / "trajectory.csv")
    df = fit.to_pandas()
    assert list(df.columns) == list(csv.columns)
    assert list(df.columns)[-4:] == ["u_loc[a]", "u_scale[a]", "u_loc[s]", "u_scale[s]"]
    for col in df.columns:
        assert np.allclose(df[col], csv[col], rtol=1e-15, atol=0, equal_nan=True), col
    # `u_loc[s]` is the guide's location of log(s): the summary's median is its exp.
    assert fit.latents["q50"][1] == pytest.approx(np.exp(df["u_loc[s]"].iloc[-1]), rel=1e-12)


def test_bias_warning_says_when_the_estimator_is_biased_for_the_program():
    m = dsgd.Model.builtin("example")   # a jump on the latent: Reparam is biased, DSGD not
    biased = m.fit(estimator="reparam", iters=200)
    assert biased.bias_warning is not None and "reparam is biased" in biased.bias_warning
    assert biased.bias_warning == biased.report["bias_warning"]
    assert biased.convergence.startswith(("converged, but to the estimator's biased", "not"))
    fine = m.fit(estimator="dsgd", iters=200)
    assert fine.bias_warning is None and fine.report["bias_warning"] is None
    assert fine.smoothing_warning == fine.report["smoothing_warning"]


def test_eta_reads_as_asked_auto_included():
    m = dsgd.Model.builtin("example")
    assert m.fit(iters=100, eta=0.14).eta == 0.14
    auto = m.fit(iters=100, eta="auto")
    assert auto.eta == "auto" == auto.report["eta"] and auto.report["eta_auto"] is True
    assert "eta='auto'" in repr(auto)
    assert m.fit(iters=100, estimator="score").eta is None


def test_eta_is_nan_for_estimators_that_do_not_smooth():
    fit = dsgd.Model.builtin("example").fit(estimator="score", iters=100)
    for key in ["eta", "smoothed", "gap", "gap_se"]:
        assert np.isnan(fit.trajectory[key]).all(), key


def softplus(x):
    return np.log1p(np.exp(x))


def test_latent_summaries_are_the_fitted_guide():
    fit = dsgd.Model.builtin("textmsg").fit(iters=300, seed=0)
    theta = dict(zip(fit.theta_names, fit.theta))
    lat = fit.latents
    assert lat["name"] == fit.latent_names == ["l1", "l2", "tau"]
    for i, name in enumerate(lat["name"]):
        mu, sd = theta[f"mu[{name}]"], softplus(theta[f"rho[{name}]"])
        assert lat["mean"][i] == pytest.approx(mu, rel=1e-12)
        assert lat["sd"][i] == pytest.approx(sd, rel=1e-12)
        # Normal quantiles: mu + sd * Phi^-1(q), Phi^-1(0.95) = 1.6448536269514722.
        assert lat["q05"][i] == pytest.approx(mu - 1.6448536269514722 * sd, rel=1e-12)
        assert lat["q50"][i] == pytest.approx(mu, rel=1e-12)
        assert lat["q95"][i] == pytest.approx(mu + 1.6448536269514722 * sd, rel=1e-12)
    assert lat["transform"] == ["identity"] * 3
    assert lat["guide_loc"].tolist() == lat["mean"].tolist()
    df = fit.latents_to_pandas()
    assert list(df.index) == ["l1", "l2", "tau"]


def test_objective_models_summarise_their_sample_distribution():
    # Example 1.1: z ~ N(theta, 1), so the latent's mean is theta and its sd 1.
    fit = dsgd.Model.builtin("example").fit(iters=200)
    assert fit.kind == "objective"
    assert fit.params == {"theta": fit.theta[0]}
    assert fit.latents["mean"][0] == pytest.approx(fit.theta[0], rel=1e-12)
    assert fit.latents["sd"][0] == 1.0
    df = fit.to_pandas()
    assert df["theta"].tolist() == fit.trajectory["params"][:, 0].tolist()


def test_a_non_finite_run_reports_its_status_and_message():
    text = """
    let z = sample Normal(0, 1);
    factor log(z - 100);
    """
    fit = dsgd.Model.from_source(text).fit(iters=50)
    assert fit.status == "non_finite"
    assert "iteration 0" in fit.message


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(eta=-1.0), "eta must be positive"),
        (dict(eta=float("nan")), "eta must be positive"),
        (dict(iters=0), "iters must be a whole number of at least 1"),
        (dict(iters=-5), "iters must be a whole number of at least 1"),
        (dict(batch=0), "batch must be a whole number of at least 1"),
        (dict(log_samples=1), "log_samples must be a whole number of at least 2"),
        (dict(seed=-1), "seed must be a whole number of at least 0"),
        (dict(estimator="sgld"), "unknown estimator `sgld`"),
        (dict(optimizer="rmsprop"), "optimizer must be one of dog, adam, sgd, got `rmsprop`"),
        (dict(on_nonfinite="ignore"), "on_nonfinite must be stop or continue"),
        (dict(lr=0.0), "lr must be positive"),
        (dict(eta_decay=1e308), "eta_decay must be at least 0 and at most 10"),
        (dict(threads=5000), "threads must be at most"),
        (dict(eta="big"), "eta must be a number"),
        (dict(threads=0), "threads must be a whole number of at least 1"),
    ],
)
def test_bad_options_are_value_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dsgd.Model.builtin("example").fit(**kwargs)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(iters=2.5), "iters"),
        (dict(itres=10), "unexpected keyword argument 'itres'"),
        (dict(precise=1), "precise"),
        (dict(eta=[0.1]), "eta"),
    ],
)
def test_options_of_the_wrong_kind_are_type_errors(kwargs, match):
    with pytest.raises(TypeError, match=match):
        dsgd.Model.builtin("example").fit(**kwargs)


def test_lyy18_on_a_model_without_affine_guards_says_where():
    with pytest.raises(ValueError, match="LYY18 does not apply"):
        dsgd.Model.builtin("xornet").fit(estimator="lyy18", iters=10)


def test_thread_count_does_not_change_the_numbers():
    m = dsgd.Model.builtin("cheating")
    one = m.fit(iters=100, threads=1, seed=5)
    two = m.fit(iters=100, threads=2, seed=5)
    assert without_seconds(one.report) == without_seconds(two.report)


def test_precise_final_value_is_the_cli_s(cli):
    expected = cli(
        "run", "example", "--iters", "300", "--seed", "3", "--precise",
        "--precise-min-samples", "20000", "--precise-max-samples", "40000", "--json",
    )
    fit = dsgd.Model.builtin("example").fit(
        iters=300, seed=3, precise=True,
        precise_min_samples=20000, precise_max_samples=40000,
    )
    assert fit.final_precise == expected["final_precise"]
    assert without_seconds(fit.report) == without_seconds(expected)
    p = fit.final_precise
    # Samples are drawn in blocks of 4,096, so the cap is met to within one block.
    assert 20000 <= p["samples"] <= 40000 + 4096
    # The precise value and the 1,000-sample value estimate the same mean.
    gap = abs(p["value"] - fit.final_value)
    assert gap < 5 * (p["se"] ** 2 + fit.final_value_se**2) ** 0.5


def test_precise_is_off_by_default_and_its_settings_need_it():
    fit = dsgd.Model.builtin("example").fit(iters=50)
    assert fit.final_precise is None
    assert "final_precise" not in fit.report
    with pytest.raises(ValueError, match="precise_rel_se needs precise=True"):
        dsgd.Model.builtin("example").fit(iters=50, precise_rel_se=0.01)
    with pytest.raises(TypeError, match="precise"):
        dsgd.Model.builtin("example").fit(iters=50, precise=1)


def test_options_a_run_does_not_read_are_user_warnings():
    # The command line's `warning: ...; ignored`, in keyword spelling.
    m = dsgd.Model.builtin("example")
    with pytest.warns(UserWarning, match=r"^eta does not apply to estimator=score \(only dsgd and fixed smooth\); ignored$"):
        m.fit(iters=10, estimator="score", eta=0.3)
    with pytest.warns(UserWarning, match=r"^lr does not apply to optimizer=dog \(it has no step size\); ignored$"):
        m.fit(iters=10, optimizer="dog", lr=0.1)
    with pytest.warns(UserWarning, match=r"^eta_decay does not apply to estimator=reparam"):
        m.gradients(n=2, estimator="reparam", eta_decay=0.5)
    # Options that are read give no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.fit(iters=10, estimator="fixed", eta=0.3)
        m.gradients(n=2, eta=0.2, eta_decay=0.5)


def test_ignored_options_warn_as_the_command_line_does(cli_exe):
    m = dsgd.Model.builtin("example")
    with pytest.warns(UserWarning) as record:
        m.fit(iters=10, estimator="lyy18", eta=0.3, eta_decay=0.5)
    python = [str(w.message) for w in record]
    out = subprocess.run(
        [cli_exe, "run", "example", "--iters", "10", "--estimator", "lyy18", "--eta", "0.3",
         "--eta-decay", "0.5", "--json"],
        capture_output=True, text=True, check=True,
    )
    command_line = [l for l in out.stderr.splitlines() if l.startswith("warning: ")]
    # The same warnings, each in its front end's spelling of options.
    assert command_line == [
        "warning: --eta does not apply to --estimator lyy18 (only dsgd and fixed smooth); ignored",
        "warning: --eta-decay does not apply to --estimator lyy18 (only dsgd tightens eta); ignored",
    ]
    assert python == [
        "eta does not apply to estimator=lyy18 (only dsgd and fixed smooth); ignored",
        "eta_decay does not apply to estimator=lyy18 (only dsgd tightens eta); ignored",
    ]
