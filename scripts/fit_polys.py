#!/usr/bin/env python3
"""Re-derives the minimax polynomials of `src/elementary.rs` (needs `pip install mpmath`).

`python3 scripts/fit_polys.py` prints, for each polynomial, its coefficients as the bits of
doubles (highest power first, the order of `EXP_COEFFS` and `ATANH_COEFFS`) and the worst
error of the polynomial with those rounded coefficients over its range, sampled densely in
100-digit arithmetic.

- exp: `e^r = 1 + r + r^2 Q(r)` for `|r| <= ln 2 / 2` (plus 2^-40 of slack for the rounding of
  the reduced argument). `Q` has degree 9 (so `e^r` degree 11); the fit minimises the
  largest `|r^2 (Q(r) - q(r))| / e^r`, the error relative to the result.
- exp tabled: `e^r = 1 + r + r^2 Q(r)` for `|r| <= ln 2 / 32` (plus the same slack), `Q` of
  degree 4, minimising the error relative to `e^r` (`EXP_TABLED_COEFFS`).
- ln: `2 atanh(s) = 2s + s z R(z)` with `z = s^2`, `s = f / (2 + f)`, `f` in
  `[sqrt(1/2) - 1, sqrt(2) - 1]`, so `z <= (3 - 2 sqrt 2)^2`. `R` has degree 6; the fit
  minimises the largest `|s z (R(z) - r(z))| / (2 atanh s)`, again relative to the result
  (`ln(1 + f)`; adding the exponent's `e ln 2` only makes the result larger).

The fit is Remez's exchange on a weighted error; the coefficients are then rounded to
doubles, and the reported error is that of the rounded polynomial.
"""

import mpmath as mp

mp.mp.dps = 100


def remez(f, w, lo, hi, n, iters=30):
    """Coefficients c_0..c_n (lowest first) of the polynomial p minimising max |w (p - f)|."""
    m = n + 2
    xs = [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (m - 1 - i) / (m - 1)) for i in range(m)]
    for _ in range(iters):
        # Solve w(x_i) (p(x_i) - f(x_i)) = (-1)^i E for c and E.
        a = mp.matrix(m, m)
        b = mp.matrix(m, 1)
        for i, x in enumerate(xs):
            for j in range(n + 1):
                a[i, j] = x**j
            a[i, n + 1] = (-1) ** i / w(x)
            b[i] = f(x)
        sol = mp.lu_solve(a, b)
        c = [sol[j] for j in range(n + 1)]
        err = lambda x: w(x) * (mp.polyval(c[::-1], x) - f(x))
        # New reference: the extremum of the error in each sign-alternating stretch.
        grid = [lo + (hi - lo) * k / 4000 for k in range(4001)]
        vals = [err(x) for x in grid]
        new = []
        start = 0
        for k in range(1, len(grid) + 1):
            if k == len(grid) or mp.sign(vals[k]) != mp.sign(vals[start]):
                best = max(range(start, k), key=lambda i: abs(vals[i]))
                new.append(grid[best])
                start = k
        if len(new) < m:
            break
        # Keep m consecutive extrema with the largest smallest error.
        best_i = max(range(len(new) - m + 1), key=lambda i: min(abs(err(x)) for x in new[i : i + m]))
        xs = new[best_i : best_i + m]
    return c


def to_double(x):
    return float(x)


def bits(x):
    import struct

    return "0x%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def worst(g, lo, hi, k=20000):
    return max(abs(g(lo + (hi - lo) * i / k)) for i in range(k + 1))


def show(name, c, rel_err, lo, hi):
    cd = [to_double(x) for x in c]
    e = worst(lambda x: rel_err(cd, x), lo, hi)
    print(f"{name}: degree {len(c) - 1} on [{mp.nstr(lo, 8)}, {mp.nstr(hi, 8)}],", end=" ")
    print(f"worst relative error {mp.nstr(e, 4)} = 2^{mp.nstr(mp.log(e, 2), 4)}")
    for x in cd[::-1]:
        print(f"    f64::from_bits({bits(x)}), // {x!r}")


def fit_exp(deg_q):
    h = mp.log(2) / 2 + mp.mpf(2) ** -40
    # The series, not (e^r - 1 - r) / r^2, which cancels catastrophically near 0.
    q = lambda r: mp.fsum(r**k / mp.factorial(k + 2) for k in range(80))
    c = remez(q, lambda r: 1, -h, h, deg_q)
    rel = lambda cd, r: r**2 * (mp.polyval([mp.mpf(x) for x in cd[::-1]], r) - q(r)) / mp.exp(r)
    show("exp Q", c, rel, -h, h)


def fit_exp_tabled(deg_q):
    """`e^r = 1 + r + r^2 Q(r)` on `|r| <= ln 2 / 32` (`exp_of_nonpositive_tabled`, after its
    table of sixteenths of `ln 2`), minimising the error relative to `e^r` itself."""
    h = mp.log(2) / 32 + mp.mpf(2) ** -40
    q = lambda r: mp.fsum(r**k / mp.factorial(k + 2) for k in range(80))
    c = remez(q, lambda r: r**2 / mp.exp(r), -h, h, deg_q)
    rel = lambda cd, r: r**2 * (mp.polyval([mp.mpf(x) for x in cd[::-1]], r) - q(r)) / mp.exp(r)
    show("exp tabled Q", c, rel, -h, h)


def fit_ln(deg_r):
    smax = (mp.sqrt(2) - 1) / (1 + mp.sqrt(2))
    zmax = smax**2 * (1 + mp.mpf(2) ** -40)
    big_r = lambda z: mp.fsum(2 * z ** (k - 1) / (2 * k + 1) for k in range(1, 80))
    # Error of s z R relative to 2 atanh(s): with s = sqrt(z), s z / (2 atanh s).
    w = lambda z: z / (2 * mp.atanh(mp.sqrt(z)) / mp.sqrt(z)) if z != 0 else mp.mpf(0)
    c = remez(big_r, lambda z: 1, mp.mpf(0), zmax, deg_r)
    rel = lambda cd, z: w(z) * (mp.polyval([mp.mpf(x) for x in cd[::-1]], z) - big_r(z))
    show("ln R", c, rel, mp.mpf(0), zmax)


if __name__ == "__main__":
    import sys

    dq = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    dr = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    fit_exp(dq)
    fit_ln(dr)
    fit_exp_tabled(4)
