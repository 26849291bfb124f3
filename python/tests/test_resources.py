"""Settings that cannot fit in this machine are refused up front, as on the command line:
`MemoryError` (or `ValueError` for a value out of range) naming the option, never an abort
of the interpreter; and the interpreter goes on working afterwards."""

import numpy as np
import pytest

import dsgd


@pytest.fixture(scope="module")
def example():
    return dsgd.Model.builtin("example")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(batch=10**11), "batch=100000000000 with"),
        (dict(batch=2**62), "batch=4611686018427387904 with"),
        (dict(log_samples=10**12), "log_samples=1000000000000"),
        (dict(iters=2**64 - 1, log_every=1), "iters=18446744073709551615 with log_every=1"),
    ],
)
def test_fits_beyond_memory_are_memory_errors(example, kwargs, match):
    with pytest.raises(MemoryError, match=match):
        example.fit(**kwargs)
    assert example.fit(iters=10).iterations == 10


def test_values_beyond_a_machine_word_or_the_thread_cap_are_value_errors(example):
    with pytest.raises(ValueError, match="batch must be a whole number of at most"):
        example.fit(batch=2**70)
    with pytest.raises(ValueError, match="threads must be at most"):
        example.fit(threads=5000)
    with pytest.raises(ValueError, match="eta_decay must be at least 0 and at most 10"):
        example.fit(eta_decay=1e308)


def test_draws_and_gradients_beyond_memory_are_memory_errors(example):
    fit = example.fit(iters=10)
    for n in [10**12, 2**62]:
        with pytest.raises(MemoryError, match=f"n={n} would need about"):
            fit.sample(n)
    with pytest.raises(MemoryError, match="n=1000000000000 would need about"):
        example.gradients(n=10**12)
    # Small ones still work, with the shapes asked for.
    assert fit.sample(5).shape == (5, 1)
    assert example.gradients(n=3).shape == (3, len(example.theta_names))


def test_a_comparison_beyond_memory_is_a_memory_error(example):
    with pytest.raises(MemoryError, match="seeds=1000000000 with log_samples=1000"):
        dsgd.compare(example, seeds=10**9)
    c = dsgd.compare(example, etas=[0.1], seeds=1, iters=20, log_samples=20)
    assert np.isfinite(c["mean"][0])
