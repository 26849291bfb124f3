#!/usr/bin/env python3
"""How far default runs end from exact answers, over many seeds, and the paper's models' finals.

    python3 scripts/answers_bias.py [--bin target/release/dsgd] [--seeds 40] [--cases a,b]
                                    [--paper-seeds 10] [-- extra run options]

For each model of known optimum (nested steps, a shifted step, a step likelihood, a positive
latent in a guard, the newsvendor, Example 1.1; their exact answers computed here as in
`tests/infer_smoothing_answer.rs` and `tests/infer_default_optimiser.rs`) it runs DSGD and
LYY18 (Example 1.1: DSGD and DSGD with `--eta auto`) with default options on seeds 0..N-1,
`--threads 1`, two at a time, and prints each fitted value's mean over the seeds with the
standard error of that mean, its distance to the exact answer in those standard errors, the
largest single-seed distance, and how many runs said converged and warned of a smoothing gap.
Then the final objective of the paper's models (mean and standard error over the paper seeds).
Options after `--` go to every run (`-- --eta-decay 1.0`).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from statistics import NormalDist

N = NormalDist()


def pattern(f, mu, s, h):
    """The maximum of f(mu, s) by a pattern search from (mu, s) with first step h."""
    while h > 1e-11:
        moved = True
        while moved:
            moved = False
            for dm, ds in [(h, 0), (-h, 0), (0, h), (0, -h)]:
                if s + ds > 0 and f(mu + dm, s + ds) > f(mu, s):
                    mu, s = mu + dm, s + ds
                    moved = True
        h /= 10
    return mu, s


def bisect(g, lo, hi):
    """The root of g in [lo, hi], g > 0 left of it."""
    for _ in range(200):
        m = (lo + hi) / 2
        lo, hi = (m, hi) if g(m) > 0 else (lo, m)
    return (lo + hi) / 2


def cases():
    """name -> (source or built-in name, estimators, [(kind, name, field, exact)])."""
    nm, ns = pattern(lambda m, s: -(m * m + s * s) / 0.02
                     - (N.cdf((0.05 - m) / s) - N.cdf((-0.1 - m) / s)) + math.log(s), 0, 0.1, 0.01)
    c = bisect(lambda c: 1 - c + N.pdf(1.5 - c), 1, 3)
    sm, ss = pattern(lambda m, s: -(m * m + s * s) / 2 - N.cdf((0.5 - m) / s) + math.log(s), 0, 1, 0.1)
    pm, ps = pattern(lambda m, s: 2 * m - math.exp(m + s * s / 2) - N.cdf(-m / s) + math.log(s),
                     0.5, 0.6, 0.1)
    th = bisect(lambda t: -(t - N.pdf(t)), 0, 1)
    both = ["dsgd", "lyy18"]
    return {
        "nested": ("let x = sample Normal(0, 0.1);\nif x < 0.05 { if x > -0.1 { factor -1; } }\n",
                   both, [("lat", "x", "mean", nm), ("lat", "x", "sd", ns)]),
        "shifted": ("param c = 0;\nlet z = sample Normal(c, 1);\n"
                    "maximize -0.5 * (z - 1)^2 + (if z < 1.5 { 0 } else { 1 });\n",
                    both, [("par", "c", None, c)]),
        "steplik": ("let x = sample Normal(0, 1);\nif x < 0.5 { factor -1; }\n",
                    both, [("lat", "x", "mean", sm), ("lat", "x", "sd", ss)]),
        "positive": ("let r = sample Gamma(2, 1);\nif r < 1 { factor -1; }\n",
                     both, [("lat", "r", "guide_loc", pm), ("lat", "r", "guide_scale", ps)]),
        "newsvendor": ("param q = 60;\nlet d = sample Normal(100, 20);\nmaximize 5 * min(q, d) - 3 * q;\n",
                       ["dsgd"], [("par", "q", None, 100 + 20 * N.inv_cdf(0.4))]),
        "example": (None, ["dsgd", "dsgd-auto"], [("par", "theta", None, th)]),
    }


PAPER = ["walk", "influenza", "textmsg", "cheating", "example", "temperature", "xornet"]


def run(binary, args):
    out = subprocess.run([binary, "run"] + args + ["--threads", "1", "--json"],
                         capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def value(d, q):
    kind, name, field, _ = q
    if kind == "par":
        return d["params"][name]
    return next(l[field] for l in d["latents"] if l["name"] == name)


def mean_se(xs):
    n = len(xs)
    m = sum(xs) / n
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1) / n)


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default="target/release/dsgd")
    p.add_argument("--seeds", type=int, default=40)
    p.add_argument("--cases", default="")
    p.add_argument("--paper-seeds", type=int, default=10)
    a = p.parse_args(argv)
    chosen = [c for c in a.cases.split(",") if c]
    tmp = tempfile.mkdtemp()
    jobs = []
    for name, (src, ests, qs) in cases().items():
        if chosen and name not in chosen:
            continue
        path = name
        if src is not None:
            path = os.path.join(tmp, name + ".dsgd")
            with open(path, "w") as f:
                f.write(src)
        for est in ests:
            for seed in range(a.seeds):
                args = [path, "--seed", str(seed)]
                args += ["--eta", "auto"] if est == "dsgd-auto" else ["--estimator", est]
                jobs.append((name, est, qs, args + extra))
    for model in PAPER if a.paper_seeds > 0 and not chosen else []:
        for seed in range(a.paper_seeds):
            jobs.append((model, "paper", None, [model, "--seed", str(seed)] + extra))
    with ThreadPoolExecutor(2) as ex:
        results = list(ex.map(lambda j: run(a.bin, j[3]), jobs))
    groups = {}
    for (name, est, qs, _), d in zip(jobs, results):
        groups.setdefault((name, est), (qs, []))[1].append(d)
    for (name, est), (qs, ds) in groups.items():
        ds = [d for d in ds if d]
        if qs is None:
            m, se = mean_se([d["final_value"] for d in ds])
            conv = sum(d["converged"] for d in ds)
            print(f"{name:11s} {ds[0]['optimizer']:5s} final {m:.4f} +- {se:.4f}  "
                  f"converged {conv}/{len(ds)}")
            continue
        for q in qs:
            xs = [value(d, q) for d in ds]
            m, se = mean_se(xs)
            far = max(abs(x - q[3]) for x in xs)
            conv = sum(d["converged"] for d in ds)
            warn = sum(1 for d in ds if d.get("smoothing_warning"))
            print(f"{name:11s} {est:9s} {q[1]}.{q[2] or 'value'}: {m:.5f} +- {se:.5f}  "
                  f"exact {q[3]:.5f}  off {m - q[3]:+.5f} ({(m - q[3]) / se:+.1f} SE)  "
                  f"farthest {far:.4f}  converged {conv}/{len(ds)}  warned {warn}", flush=True)


if __name__ == "__main__":
    main()
