# %% [markdown]
# # dsgd from Python: a quick tour
#
# A notebook-style script (cells marked `# %%`, runnable as `python quickstart.py` or cell by
# cell in Jupyter/VS Code). It fits a model whose likelihood branches, looks at the result,
# draws from the fitted guide, compares estimators and runs a small sweep.

# %%
import math

import numpy as np

import dsgd

print(dsgd.models())

# %% [markdown]
# A model in the `.dsgd` language: a change point `tau` splits 20 days of counts into two
# rates. The if-statement makes the ELBO discontinuous in `tau`'s sample, which is what DSGD
# smooths (and tightens while it optimises).

# %%
SOURCE = """
let l1 = sample Normal(2, 1);
let l2 = sample Normal(2, 1);
let tau = sample Normal(0, 1);
const counts = [3, 5, 4, 6, 5, 4, 7, 5, 6, 4, 12, 14, 11, 13, 15, 12, 14, 13, 12, 16];
for d in 0..20 {
    let rate = if tau >= probit((d + 1) / 21) { exp(l1) } else { exp(l2) };
    observe counts[d] ~ Poisson(rate);
}
"""
model = dsgd.Model.from_source(SOURCE, name="changepoint")
print(model, model.check()["if_statements"], "if-statements")

# %%
fit = model.fit(estimator="dsgd", eta=0.1, iters=3000, seed=0)
print(fit)

# %% [markdown]
# Latent summaries in natural units, and draws from the fitted guide.

# %%
lat = fit.latents
for i, name in enumerate(lat["name"]):
    print(f"{name:>4}: mean {lat['mean'][i]:7.3f}  sd {lat['sd'][i]:6.3f}  "
          f"90% [{lat['q05'][i]:7.3f}, {lat['q95'][i]:7.3f}]")
draws = fit.sample(5000, seed=1)
rates = np.exp(draws[:, :2])
print("posterior mean rates:", rates.mean(axis=0))
# Day d uses the first rate while tau >= probit((d + 1) / 21), i.e. d + 1 <= 21 Phi(tau).
phi_tau = np.array([0.5 * (1 + math.erf(t / math.sqrt(2))) for t in draws[:, 2]])
print("last day of the first rate ~", (21 * phi_tau - 1).mean().round(2))

# %% [markdown]
# The trajectory (a DataFrame with pandas installed) and per-sample gradients, for those
# who bring their own optimiser.

# %%
traj = fit.trajectory
print("ELBO at", traj["iter"][[0, -1]], ":", traj["value"][[0, -1]])
print("converged:", fit.converged, "-", fit.convergence)
g = model.gradients(fit.theta, n=512, estimator="score", seed=2)
print("score-gradient mean", g.mean(axis=0).round(2), "sd", g.std(axis=0).round(2))

# %% [markdown]
# Every estimator, as `dsgd compare` runs them, and a sweep over estimators and eta
# (`backend="ray"` runs the same tasks on a Ray cluster, with the same numbers).

# %%
table = dsgd.compare(model, etas=[0.1, 0.2], seeds=2, iters=1000, log_samples=200)
for est, eta, mean, std in zip(table["estimator"], table["eta"], table["mean"], table["std"]):
    print(f"{est:>8} {'' if eta is None else eta:>5}  {mean:10.3f} ± {std:.3f}")

runs = dsgd.sweep(model, {"estimator": ["dsgd", "fixed"], "eta": [0.1, 0.3]}, seeds=2, iters=1000)
print(len(runs["final_value"]), "fits; best final ELBO", max(runs["final_value"]))
