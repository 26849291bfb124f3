"""The notebook-style example runs from start to end."""

import math
import pathlib
import runpy

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


def test_quickstart_runs(capsys):
    scope = runpy.run_path(str(EXAMPLE), run_name="__main__")
    fit = scope["fit"]
    assert fit.status == "completed"
    # Ten low days (mean count 4.9) then ten high ones (13.2): the guide's log-rates sit near
    # their logs (1.59 and 2.58; a posterior sd about 0.14 and 0.09), well apart.
    l1, l2 = fit.latents["mean"][0], fit.latents["mean"][1]
    assert abs(l1 - math.log(4.9)) < 0.25 and abs(l2 - math.log(13.2)) < 0.25, (l1, l2)
    assert l1 + 0.6 < l2
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
