"""Two training logs (the JSON lines of log.file) step by step: the losses and gradient norms
of the train lines from FIRST on (to LAST, 0: the end) within relative tolerances (exactly
when a tolerance is 0). Prints each comparison; exits non-zero naming what differs.

    compare_train_logs.py A.jsonl B.jsonl FIRST LOSS_RTOL NORM_RTOL [LAST]
"""
import json
import sys


def rows(path, first, last):
    return {m["step"]: m for m in map(json.loads, open(path))
            if m["type"] == "train" and m["step"] >= first and (not last or m["step"] <= last)}


def main():
    a, b = sys.argv[1], sys.argv[2]
    first, lt, nt = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    last = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    ra, rb = rows(a, first, last), rows(b, first, last)
    if sorted(ra) != sorted(rb) or not ra:
        sys.exit(f"steps differ: {sorted(ra)} vs {sorted(rb)}")
    bad = []
    for s in sorted(ra):
        for k, tol in (("loss", lt), ("grad_norm", nt)):
            x, y = ra[s][k], rb[s][k]
            err = abs(x - y) / max(abs(y), 1e-12)
            print(f"  step {s} {k}: {x:.6f} vs {y:.6f} (rel {err:.2e}, tolerance {tol:g})")
            if err > tol:
                bad.append(f"step {s} {k} {x} vs {y}")
    sys.exit("; ".join(bad) if bad else 0)


if __name__ == "__main__":
    main()
