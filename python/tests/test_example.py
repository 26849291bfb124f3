"""The notebook-style example runs from start to end."""

import pathlib
import runpy

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


def test_quickstart_runs(capsys):
    scope = runpy.run_path(str(EXAMPLE), run_name="__main__")
    fit = scope["fit"]
    assert fit.status == "completed"
    # Ten low days then ten high ones: the guide puts the first rate well below the second.
    assert fit.latents["mean"][0] + 1.0 < fit.latents["mean"][1]
    assert len(scope["runs"]["final_value"]) == 8
    assert "fits; best final ELBO" in capsys.readouterr().out


def test_the_readme_fit_converges_at_example_1_1_s_optimum():
    # The README's Python snippet, as written: Example 1.1's optimum is 0.3722.
    import dsgd

    model = dsgd.Model.builtin("example")
    assert model.check()["if_statements"] == 1
    fit = model.fit(estimator="dsgd", eta=0.1, iters=5000, seed=0)
    assert fit.converged, fit.convergence
    assert abs(fit.theta[0] - 0.3722) < 0.01
    runs = dsgd.sweep(model, {"estimator": ["dsgd", "fixed"], "eta": [0.1, 0.14]},
                      seeds=3, iters=2000)
    assert all(runs["converged"])
