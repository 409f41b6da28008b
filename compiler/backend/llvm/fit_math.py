#!/usr/bin/python3
# fit_math.py — the polynomial coefficients of the LLVM backend's float
# math (compiler/backend/llvm/llvm_math.c): exp, erf, tanh, log and log1p
# of an f32, evaluated in f64. Near-minimax fits (Chebyshev interpolation,
# mpmath's chebyfit at 40 digits) on each piece's interval, as a polynomial
# in the variable scaled to [-1, 1] (erf's pieces away from 0, where powers
# of x itself would be ill conditioned) or expanded in x (the pieces at or
# around 0); each coefficient is then rounded to the nearest double. Prints
# the C tables and each fit's error (relative, but absolute for erf's tail,
# whose values lie in [0.96, 1)), measured on 20,001 points with the
# doubles.
#
# Usage: /usr/bin/python3 compiler/backend/llvm/fit_math.py   (prints the tables)
# (needs mpmath: Debian's python3-mpmath).
import mpmath as mp

mp.mp.dps = 40


def fit(name, f, lo, hi, deg, rel, plain=False):
    """Coefficients c[0..deg] (c[0] the constant) of p(s), s = (x - mid) / half,
    or of p(x) itself when plain."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    c = list(reversed(mp.chebyfit(lambda s: f(mid + half * s), [-1, 1], deg + 1)))
    if plain:  # p(s) with s = (x - mid) / half, expanded in powers of x
        e = [mp.mpf(0)] * (deg + 1)
        for k, ck in enumerate(c):
            for j in range(k + 1):
                e[j] += ck * mp.binomial(k, j) * (-mid) ** (k - j) / half ** k
        c, mid, half = e, mp.mpf(0), mp.mpf(1)
    cd = [float(x) for x in c]
    worst = mp.mpf(0)
    for i in range(20001):
        x = lo + (hi - lo) * i / 20000
        s = float((x - mid) / half)
        p = 0.0
        for k in reversed(cd):
            p = p * s + k
        w = f(mid + half * mp.mpf(s))
        e = abs(mp.mpf(p) - w)
        worst = max(worst, e / abs(w) if rel else e)
    var = "x" if plain else "s = (x - %s) / %s" % (mp.nstr(mid, 8), mp.nstr(half, 8))
    print("// %s: x in [%s, %s], a polynomial in %s, degree %d, %s error %.2e" %
          (name, mp.nstr(lo, 8), mp.nstr(hi, 8), var, deg, "relative" if rel else "absolute", float(worst)))
    print("static const double %s[%d] = {" % (name, deg + 1))
    for i in range(0, deg + 1, 3):
        print("    " + ", ".join(x.hex() for x in cd[i:i + 3]) + ",")
    print("};")


# exp(r), |r| <= ln2 / 2 (a little more: the reduction's rounding).
fit("EXP_R", mp.exp, -0.35, 0.35, 11, True, plain=True)
# erf(x) / x as a polynomial in u = x^2, |x| <= 1.5; erf(x) itself on [1.5, 4]
# (erf rounds to 1 in f32 from 3.92 on).
fit("ERF_SMALL", lambda u: mp.erf(mp.sqrt(u)) / mp.sqrt(u) if u > 0 else 2 / mp.sqrt(mp.pi), 0, 2.25, 11, True,
    plain=True)
fit("ERF_TAIL", mp.erf, 1.5, 4, 19, False)
# tanh(x) / x as a polynomial in u = x^2, |x| <= 1/4.
fit("TANH_SMALL", lambda u: mp.tanh(mp.sqrt(u)) / mp.sqrt(u) if u > 0 else mp.mpf(1), 0, 0.0625, 6, True, plain=True)
# atanh(s) / s as a polynomial in z = s^2, s = (m - 1) / (m + 1) for m in
# [sqrt(1/2), sqrt(2)): z <= (3 - 2 sqrt(2))^2 = 0.02944 (log(m) = 2 atanh(s)).
fit("LOG_S", lambda z: mp.atanh(mp.sqrt(z)) / mp.sqrt(z) if z > 0 else mp.mpf(1), 0, 0.0295, 7, True, plain=True)
