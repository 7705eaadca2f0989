"""Independent computation of the golden values of stats.PairedClustered.

Written from the formulas, not from the Go code: Δ = Σw(b−a)/Σw, the
cluster-robust (CR1) variance G/(G−1)·Σ_c(Σ_{i∈c} w_i(d_i − Δ))²/(Σw)² (what
statsmodels' WLS(d, 1, weights=w).fit(cov_type="cluster") reports for an
intercept-only model, whose extra (N−1)/(N−K) factor is 1 at K = 1), a t
interval on G − 1 degrees of freedom, and the sign-flip test by brute-force
enumeration of every sign pattern. Run with python3 (needs mpmath):

    python3 stats/testdata/clustered_paired.py
"""
import itertools
import mpmath as mp

mp.mp.dps = 40

# (cluster, a, b, w)
FIXTURE = [
    ("s1", 1, 0, 5), ("s1", 1, 0, 5), ("s1", 0, 0, 1),
    ("s2", 0, 1, 2), ("s2", 1, 1, 2),
    ("s3", 1, 0, 1), ("s3", 0, 1, 1), ("s3", 1, 0, 3),
    ("s4", 0, 0, 4),
    ("s5", 1, 0, 2), ("s5", 1, 1, 5),
]


def tcdf(x, df):
    x, df = mp.mpf(x), mp.mpf(df)
    tail = mp.betainc(df / 2, mp.mpf(1) / 2, 0, df / (df + x * x), regularized=True) / 2
    return 1 - tail if x >= 0 else tail


def tquant(p, df):
    return mp.findroot(lambda x: tcdf(x, df) - p, 2)


def analyse(rows, weighted=True):
    w = [mp.mpf(r[3] if weighted else 1) for r in rows]
    d = [mp.mpf(r[2] - r[1]) for r in rows]
    sw = sum(w)
    delta = sum(wi * di for wi, di in zip(w, d)) / sw
    mean_a = sum(wi * r[1] for wi, r in zip(w, rows)) / sw
    clusters = sorted({r[0] for r in rows})
    g, n = len(clusters), len(rows)
    e = {c: mp.mpf(0) for c in clusters}
    tot = {c: mp.mpf(0) for c in clusters}
    for wi, di, r in zip(w, d, rows):
        e[r[0]] += wi * (di - delta)
        tot[r[0]] += wi * di
    var = mp.mpf(g) / (g - 1) * sum(v * v for v in e.values()) / sw ** 2
    se = mp.sqrt(var)
    t = tquant(mp.mpf("0.975"), g - 1)
    var_iid = mp.mpf(n) / (n - 1) * sum((wi * (di - delta)) ** 2 for wi, di in zip(w, d)) / sw ** 2
    de = var / var_iid
    obs = abs(sum(tot.values()))
    more = equal = 0
    for signs in itertools.product([1, -1], repeat=g):
        s = abs(sum(sg * tot[c] for sg, c in zip(signs, clusters)))
        if s > obs + mp.mpf("1e-20"):
            more += 1
        elif s >= obs - mp.mpf("1e-20"):
            equal += 1
    p = mp.mpf(more + equal) / 2 ** g
    midp = (more + mp.mpf(equal) / 2) / 2 ** g
    tp = 2 * tcdf(-abs(delta) / se, g - 1)
    return dict(diff=delta, mean_a=mean_a, se=se, lo=delta - t * se, hi=delta + t * se, tp=tp,
                de=de, eff_n=n / de, p=p, midp=midp)


for name, weighted in [("weighted", True), ("unweighted", False)]:
    print(name)
    for k, v in analyse(FIXTURE, weighted).items():
        print("  %-7s %s" % (k, mp.nstr(v, 17)))
