"""Posterior draws from a fitted guide, and per-sample gradient estimates against closed
forms (tolerances from the standard error of the mean)."""

import math

import numpy as np
import pytest

import dsgd


@pytest.fixture(scope="module")
def textmsg_fit():
    return dsgd.Model.builtin("textmsg").fit(iters=500, seed=4)


def test_sample_shape_and_determinism(textmsg_fit):
    a = textmsg_fit.sample(1000, seed=9)
    assert a.shape == (1000, 3) and a.dtype == np.float64
    assert np.array_equal(a, textmsg_fit.sample(1000, seed=9))
    assert not np.array_equal(a, textmsg_fit.sample(1000, seed=10))
    # The first rows do not depend on how many are asked for.
    assert np.array_equal(a[:10], textmsg_fit.sample(10, seed=9))
    assert textmsg_fit.sample(0).shape == (0, 3)


def test_sample_moments_match_the_guide(textmsg_fit):
    n = 40_000
    z = textmsg_fit.sample(n, seed=1)
    lat = textmsg_fit.latents
    for i in range(3):
        mean, sd = lat["mean"][i], lat["sd"][i]
        assert abs(z[:, i].mean() - mean) < 4 * sd / math.sqrt(n)
        # The sample sd's standard error is about sd / sqrt(2 n).
        assert abs(z[:, i].std(ddof=1) - sd) < 4 * sd / math.sqrt(2 * n)
    # Mean field: the latents are drawn independently.
    c = np.corrcoef(z.T)
    assert np.all(np.abs(c[np.triu_indices(3, 1)]) < 4 / math.sqrt(n))


def test_sample_rejects_negative_counts(textmsg_fit):
    with pytest.raises(ValueError, match="n must be a whole number of at least 0"):
        textmsg_fit.sample(-1)


def phi(x):
    return math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def mean_within(g, target, k=4.0):
    """Whether the column means of `g` lie within `k` standard errors of `target`."""
    n = g.shape[0]
    se = g.std(axis=0, ddof=1) / math.sqrt(n)
    return np.all(np.abs(g.mean(axis=0) - target) <= k * se), g.mean(axis=0), se


THETA = 0.5
# Example 1.1: d/dtheta E[-z^2/2 + [z >= 0]], z ~ N(theta, 1), is -theta + phi(theta).
TRUE_GRADIENT = -THETA + phi(THETA)


@pytest.mark.parametrize("estimator", ["score", "lyy18"])
def test_unbiased_estimators_average_to_the_true_gradient(estimator):
    g = dsgd.Model.builtin("example").gradients([THETA], n=20_000, estimator=estimator, seed=3)
    assert g.shape == (20_000, 1)
    ok, mean, se = mean_within(g, TRUE_GRADIENT)
    assert ok, (mean, se, TRUE_GRADIENT)


def test_reparam_misses_the_jump():
    # The reparameterisation gradient ignores [z >= 0]: it averages to -theta, not the truth.
    g = dsgd.Model.builtin("example").gradients([THETA], n=20_000, estimator="reparam", seed=3)
    ok, mean, se = mean_within(g, -THETA)
    assert ok, (mean, se)
    assert abs(mean[0] - TRUE_GRADIENT) > 20 * se[0]


def smoothed_gradient(theta, eta):
    """d/dtheta E[-z^2/2 + sigmoid(z / eta)] by quadrature over z ~ N(theta, 1)."""
    z = np.linspace(theta - 12, theta + 12, 400_001)
    w = np.exp(-0.5 * (z - theta) ** 2) / math.sqrt(2 * math.pi)
    s = 1 / (1 + np.exp(-z / eta))
    integrand = w * s * (1 - s) / eta
    return -theta + np.trapezoid(integrand, z)


@pytest.mark.parametrize("iteration,eta_used", [(3999, 0.05), (0, 0.05 * 4000**0.5)])
def test_dsgd_gradients_follow_the_schedule(iteration, eta_used):
    # Example 1.1 has nesting depth 1, so DSGD's decay is 1/2: eta_k = eta (4000/(k+1))^(1/2).
    g = dsgd.Model.builtin("example").gradients(
        [THETA], n=20_000, estimator="dsgd", eta=0.05, iteration=iteration, seed=8
    )
    ok, mean, se = mean_within(g, smoothed_gradient(THETA, eta_used))
    assert ok, (mean, se, smoothed_gradient(THETA, eta_used))


def test_gradients_are_deterministic_and_default_to_the_initial_params():
    m = dsgd.Model.builtin("textmsg")
    a = m.gradients(n=64, estimator="dsgd", seed=1)
    assert a.shape == (64, len(m.theta_names))
    assert np.array_equal(a, m.gradients(m.init_theta, n=64, estimator="dsgd", seed=1))
    assert not np.array_equal(a, m.gradients(n=64, estimator="dsgd", seed=2))


def test_gradient_argument_errors():
    m = dsgd.Model.builtin("textmsg")
    with pytest.raises(ValueError, match="theta has 2 entries; this model's theta has 6"):
        m.gradients([0.0, 1.0], n=4)
    with pytest.raises(ValueError, match="n must be a whole number of at least 1"):
        m.gradients(n=0)
    with pytest.raises(ValueError, match="unknown estimator"):
        m.gradients(n=4, estimator="nope")
    with pytest.raises(TypeError, match="unexpected keyword argument 'iters'"):
        m.gradients(n=4, iters=3)
    with pytest.raises(ValueError, match="eta must be positive"):
        m.gradients(n=4, eta=0.0)
