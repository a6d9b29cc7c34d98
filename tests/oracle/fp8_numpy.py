"""FP8 as sluice's train.fp8 defines it (docs/trainer.md, "FP8"), for the numpy oracle
(model_numpy.forward_backward(..., fp8=Fp8Linear(...))), written from the formats'
definitions: E4M3 (4 exponent bits, bias 7, 3 mantissa bits, largest 448, no infinities) and
E5M2 (5, bias 15, 2, largest 57344); round to nearest, ties to even, saturating at the
largest finite value. Computed in float64.

When ml_dtypes can be imported, fp8_round is checked against its float8_e4m3fn and
float8_e5m2 casts (check_against_ml_dtypes).
"""
import numpy as np

# mantissa bits, smallest normal exponent (1 - bias), largest finite value
E4M3 = (3, -6, 448.0)
E5M2 = (2, -14, 57344.0)


def fp8_round(x, fmt):
    mant, emin, mx = fmt
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    _, e = np.frexp(a)  # a = m 2^e, m in [0.5, 1)
    e = np.maximum(e - 1, emin)
    q = np.ldexp(np.rint(np.ldexp(a, -(e - mant))), e - mant)  # rint: ties to even
    q = np.minimum(q, mx)
    return np.where(np.isnan(x), np.nan, np.copysign(q, x))


def check_against_ml_dtypes():
    """None when ml_dtypes is missing, else the number of mismatches over a sweep of values
    (every representable value, every midpoint between neighbours and their neighbours in
    float32, values past the largest, and random values of every magnitude)."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    bad = 0
    for fmt, dt in ((E4M3, ml_dtypes.float8_e4m3fn), (E5M2, ml_dtypes.float8_e5m2)):
        codes = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)
        vals = np.unique(codes[np.isfinite(codes)])
        mids = (vals[1:] + vals[:-1]) / 2
        f32 = mids.astype(np.float32)
        near = np.concatenate([np.nextafter(f32, np.float32(np.inf)), np.nextafter(f32, np.float32(-np.inf))])
        rng = np.random.default_rng(1)
        rnd = rng.standard_normal(100000) * np.exp2(rng.uniform(-24, 20, 100000))
        over = np.array([fmt[2] * 1.01, fmt[2] * 4, -fmt[2] * 1.2, 1e30, -1e30])
        x = np.concatenate([vals, mids, near, rnd, over]).astype(np.float32).astype(np.float64)
        # ml_dtypes' cast does not saturate (it gives NaN or inf past the range): clip first
        ref = np.clip(x, -fmt[2], fmt[2]).astype(dt).astype(np.float64)
        bad += int(np.sum(fp8_round(x, fmt) != ref))
    return bad


class Fp8Linear:
    """The four products of a layer with per-tensor scales: recipe 'current' (each tensor's
    scale is 448 or 57344 over its amax) or 'delayed' at its first step (every scale 1)."""

    def __init__(self, recipe):
        self.recipe = recipe

    def scale(self, x, fmt):
        amax = float(np.abs(x).max())
        if self.recipe == "delayed" or not amax > 0:
            return 1.0
        return fmt[2] / amax

    def quant(self, x, fmt):
        s = self.scale(x, fmt)
        return fp8_round(x * s, fmt), s

    def fwd(self, layer, which, x, W):
        qx, sx = self.quant(x, E4M3)
        qw, sw = self.quant(W, E4M3)
        return (qx @ qw.T) / (sx * sw)

    def bwd(self, layer, which, dy, x, W):
        qx, sx = self.quant(x, E4M3)
        qw, sw = self.quant(W, E4M3)
        qg, sg = self.quant(dy, E5M2)
        dx = (qg @ qw) / (sg * sw)
        qg2, qx2 = qg.reshape(-1, qg.shape[-1]), qx.reshape(-1, qx.shape[-1])
        return dx, (qg2.T @ qx2) / (sg * sx)
