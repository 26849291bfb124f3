"""Ctrl-C: a long fit, comparison, sweep or gradients call releases the GIL and stops with
KeyboardInterrupt within a fraction of a second of SIGINT, and the interpreter goes on; a panic
in the work becomes a RuntimeError."""

import os
import signal
import threading
import time

import pytest

import dsgd

# Long enough (seconds to minutes) that finishing before the signal would fail the test, and
# bounded, so that a failure to stop ends the test instead of hanging it.
LONG = dict(iters=300_000, log_every=1000)
DELAY = 0.5
LIMIT = 1.0


def interrupt_after(delay):
    """Sends SIGINT to this process after `delay` seconds; returns when it was sent."""
    sent = {}

    def fire():
        sent["at"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Timer(delay, fire)
    t.start()
    return t, sent


def assert_interrupted(call):
    timer, sent = interrupt_after(DELAY)
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        timer.cancel()
    ended = time.monotonic()
    assert "at" in sent, "the call returned before the signal was sent"
    assert ended - sent["at"] < LIMIT, f"took {ended - sent['at']:.2f} s to stop"
    assert ended - start >= DELAY


def test_fit_stops_on_ctrl_c():
    m = dsgd.Model.builtin("cheating")
    assert_interrupted(lambda: m.fit(**LONG))
    # The interpreter and the package still work.
    assert m.fit(iters=20).iterations == 20


def test_a_single_threaded_fit_stops_on_ctrl_c():
    m = dsgd.Model.builtin("temperature")
    assert_interrupted(lambda: m.fit(threads=1, **LONG))


def test_compare_stops_on_ctrl_c():
    m = dsgd.Model.builtin("textmsg")
    assert_interrupted(lambda: dsgd.compare(m, seeds=2, iters=300_000, log_every=1000))


def test_local_sweep_stops_on_ctrl_c():
    m = dsgd.Model.builtin("walk")
    assert_interrupted(
        lambda: dsgd.sweep(m, {"estimator": ["dsgd", "score", "lyy18"]}, seeds=3, **LONG)
    )


def test_other_threads_run_while_a_fit_runs():
    # The GIL is released: a Python thread makes progress during the fit.
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    m = dsgd.Model.builtin("cheating")
    t = threading.Thread(target=count)
    t.start()
    try:
        before = len(ticks)
        m.fit(iters=3000)
        during = len(ticks) - before
    finally:
        stop.set()
        t.join()
    # Holding the GIL for the fit (about a second) would allow one tick at most.
    assert during >= 20, during


def test_eta_auto_s_starting_race_stops_on_ctrl_c():
    # The race runs before the first step: 10 % of the run for each of its candidates.
    m = dsgd.Model.builtin("temperature")
    assert_interrupted(lambda: m.fit(eta="auto", **LONG))


def test_the_precise_measurement_stops_on_ctrl_c():
    m = dsgd.Model.builtin("cheating")
    assert_interrupted(
        lambda: m.fit(
            iters=10,
            precise=True,
            precise_rel_se=1e-12,
            precise_min_samples=10**9,
            precise_max_samples=10**9,
        )
    )


def test_drawing_from_a_fit_stops_on_ctrl_c():
    fit = dsgd.Model.builtin("walk").fit(iters=10)
    assert_interrupted(lambda: fit.sample(10**7))
    assert fit.sample(3).shape == (3, len(fit.latent_names))


# Only a test build has it (`maturin develop --features test-hooks`; `.ci/run` builds so):
# no input makes the work panic on purpose, and a released package has no such function.
PANIC_IN_WORK = getattr(dsgd._core, "_panic_in_work", None)


@pytest.mark.skipif(PANIC_IN_WORK is None, reason="a build without the test-hooks feature")
def test_a_panic_in_the_work_becomes_a_runtime_error_and_the_interpreter_goes_on():
    with pytest.raises(RuntimeError, match="internal error: a panic: boom .please report."):
        PANIC_IN_WORK("boom")
    # Again: the first panic left nothing behind that breaks the next call.
    with pytest.raises(RuntimeError, match="a panic: again"):
        PANIC_IN_WORK("again")
    m = dsgd.Model.builtin("example")
    assert m.fit(iters=10).iterations == 10
    assert m.gradients(n=3).shape == (3, len(m.theta_names))


def test_gradients_stop_on_ctrl_c():
    # Computed in parts with a look at the flag between them. 3e6 samples of `temperature`
    # (41 latents): tens of seconds of work however warm the caches (3e7 samples of the
    # one-latent `example` could finish before the signal), and about 2 GB by the up-front
    # estimate (within any test machine's memory; the samples' own arrays are filled only as
    # far as the parts go).
    m = dsgd.Model.builtin("temperature")
    assert_interrupted(lambda: m.gradients(n=3 * 10**6))
    assert m.gradients(n=3).shape == (3, len(m.theta_names))


def test_a_measurement_over_many_rows_stops_on_ctrl_c():
    # A loop over 2e5 rows kept as a plate: a measurement of 20,000 samples reads 4e9
    # row-samples (many seconds), and Ctrl-C during it stops the fit promptly.
    import numpy as np

    n = 200_000
    x = np.linspace(-2.0, 2.0, n)
    source = """
data x;
data y;
data n;
let a = sample Normal(0, 5);
let b = sample Normal(0, 5);
for i in 0..n { observe y[i] ~ Normal(a * x[i] + b, 1); }
"""
    m = dsgd.Model.from_source(source, data={"x": x, "y": 2.0 * x + 1.0, "n": n})
    assert m.check()["plates"]
    assert_interrupted(lambda: m.fit(iters=1000, log_every=500, log_samples=20_000))
