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
