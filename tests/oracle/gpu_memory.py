#!/usr/bin/env python3
"""The GPU trainer's memory per rank from its specification, against `sluice train
--print-config`.

usage: gpu_memory.py PRINT_CONFIG_OUTPUT

Reads the printed config (model, train, parallel, optim, eval) and derives, for every
pipeline stage's tensor-parallel rank 0, the bytes of each category of the arena as
train/gpu_plan.h specifies them (the ZeRO stages' buffers, the activations kept per
recomputation mode, the activation sets of 1F1B and of the interleaved schedule, the own
kernels' workspace), then checks the printed comments: every stage's line, the largest
stage's bytes, and the totals at ZeRO-1, 2 and 3. Written from the specification, not from
the C code: Llama-family models only (RMSNorm, SwiGLU, RoPE, no biases). Exit 0 when all
agree, else 1 with the differences.
"""
import re
import sys

ALIGN = 256  # every buffer's start in the arena


def up(n, m):
    return -(-n // m) * m


def human(v):
    """sl_human_bytes: 1000-based units, one decimal."""
    units = ["B", "kB", "MB", "GB", "TB", "PB"]
    u = 0
    while v >= 1000.0 and u < 5:
        v /= 1000.0
        u += 1
    return f"{v:.1f} {units[u]}" if u else f"{v:.0f} {units[u]}"


def parse(text):
    cfg, sec = {}, None
    for line in text.splitlines():
        m = re.match(r"^(\w+):\s*(.*)$", line)
        if m:
            sec = m.group(1)
            continue
        m = re.match(r"^  (\w+): ([^#]*?)\s*(#.*)?$", line)
        if m and sec:
            cfg[f"{sec}.{m.group(1)}"] = m.group(2)
    m = re.search(r"padded to (\d+) rows", text)
    cfg["model.padded"] = m.group(1)
    m = re.search(r"# data parallel: (\d+)", text)
    cfg["parallel.data"] = m.group(1)
    return cfg


def interleaved_slots(pp, vp, accum):
    """Most micro-batches one model chunk has in flight in Megatron's interleaved 1F1B,
    over every stage: warm-up forwards, then one forward and one backward alternately."""
    total, most = accum * vp, 1
    for st in range(pp):
        warm = total if accum == pp else min(total, 2 * (pp - st - 1) + (vp - 1) * pp)
        live = [0] * vp
        f = b = 0
        while b < total:
            if f < total and (f < warm or f - warm == b):
                c = (f % (pp * vp)) // pp
                live[c] += 1
                most = max(most, live[c])
                f += 1
            else:
                live[vp - 1 - (b % (pp * vp)) // pp] -= 1
                b += 1
    return min(most, accum)


def chunk_layers(L, pp, vp, stage):
    nv = pp * vp
    return sum(L // nv + (v < L % nv) for v in (c * pp + stage for c in range(vp)))


def plan(c, stage, zero):
    """The arena of the stage's tensor-rank-0: (bytes per category, arena bytes, params)."""
    tp, pp, vp, dp, sp = c["tp"], c["pp"], c["vp"], c["dp"], c["sp"]
    D, H, Hkv, F, Vp = c["D"], c["H"], c["Hkv"], c["F"], c["Vp"]
    hd = D // H
    Hl, Hkvl, Fl = H // tp, Hkv // tp, F // tp
    QKV, QD, FC = (Hl + 2 * Hkvl) * hd, Hl * hd, 2 * Fl
    rows = up(Vp, tp) // tp
    nl = chunk_layers(c["L"], pp, vp, stage)
    first, last = stage == 0, stage == pp - 1
    a64 = lambda n: up(n, 64)  # every tensor starts at a 64-float boundary
    layer = 2 * a64(D) + a64(QKV * D) + a64(D * QD) + a64(FC * D) + a64(D * Fl)
    pre = a64(rows * D) if first else 0  # untied: the embedding on the first stage
    post = a64(D) + a64(rows * D) if last else 0  # final norm, output layer
    unit = 64 * dp  # every rank's slice of a bucket the same multiple of 64
    bk = [up(pre, unit)] + [up(layer, unit)] * nl + [up(post, unit)]
    P = sum(bk)
    S = P // dp
    maxb, maxl, outer = max(bk), max(bk[1:-1]), bk[0] + bk[-1]
    ntensors = 3 + 6 * nl  # embedding, final norm, output layer; 6 a layer
    params = (rows * D if first else 0) + nl * (2 * D + QKV * D + D * QD + FC * D + D * Fl) + (
        D + rows * D if last else 0)
    bufs = []  # (category, bytes) in the arena's order
    if zero <= 1:
        bufs += [("p", 2 * P), ("g", 2 * P), ("g", 4 * P)]
    elif zero == 2:
        bufs += [("p", 2 * P), ("g", 2 * P), ("g", 4 * S)]
    else:
        bufs += [("p", 2 * S), ("p", 2 * outer), ("p", 4 * maxl), ("g", 2 * outer),
                 ("g", 4 * maxl), ("g", 4 * S)]
    bufs += [("o", 4 * S)] * 3 + [("o", 24 * ntensors)]
    if zero >= 2:
        bufs += [("g", 8 * maxb)]
    # activations
    B, T = c["mbs"], c["seq"]
    N = B * T
    R = N // tp if sp and tp > 1 else N
    rc = c["recompute"]
    if pp == 1:
        sets = 1
    elif vp > 1:
        sets = interleaved_slots(pp, vp, c["accum"])
    else:
        sets = min(pp - stage, c["accum"])
    # per layer: bytes, kept up to this recomputation mode (0 none, 1 selective, 2 full)
    fields = [(2 * R * D, 2), (2 * R * D, 0), (0, 1), (4 * R, 1), (2 * N * QKV, 1),
              (2 * N * QD, 1), (4 * N * Hl, 1), (2 * R * D, 1), (2 * R * D, 0), (0, 1),
              (4 * R, 1), (2 * N * FC, 1), (2 * N * Fl, 0)]
    for size, keep in fields:
        bufs += [("a", size)] * (sets * nl if rc <= keep else 1)
    # the final norm and the logits: on the last stage only
    heads = 1 if last else 0
    bufs += [("a", x) for x in (2 * R * D, 2 * N * D, 4 * R, 4 * R)] * heads
    bufs += [("a", 2 * N * D)] + [("a", 2 * N * rows)] * heads
    bufs += [("a", x) for x in (4 * N, 2 * R * D, 2 * N * D, 2 * N * QKV, 2 * N * QD,
                                2 * N * FC, 2 * N * Fl)]
    if R != N:
        bufs += [("a", 2 * N * D), ("a", 2 * R * D)]
    if pp > 1:  # the stage boundary: activation out, gradient out, gradient in (bf16),
        # the residual stream's rows (with SP the rank's)
        bufs += [("a", 2 * R * D)] * 3
        # the last stage: per set, the gradient of the last layer's output (bf16)
        bufs += [("a", 2 * R * D)] * (sets if last else 0)
    # workspace: RoPE tables, cuBLASLt 32 MiB, the own kernels' scratch, tokens
    nb = min(up(N, 8) // 8, 512)
    norm = max(nb * 2 * w * 4 for w in (D, QKV, FC))
    emb = 6 * up(4 * N, 256) + 256 + up(256 + 8 * N, 256)
    acc, ev = c["accum"], c["eval_iters"]
    bufs += [("w", x) for x in (4 * T * (hd // 2), 4 * T * (hd // 2), 32 << 20,
                                up(4 * B * Hl * T, 256), norm, emb, 4 * 1024,
                                acc * 2 * N * 4, acc * 2 * N * 4, 2 * N * 4, (1 + acc) * 4,
                                ev * acc * 4)]
    if tp > 1:  # the vocab-parallel embedding's local ids, the cross-entropy's max, sum, target
        bufs += [("w", 4 * N), ("w", 3 * N * 4)]
    cat = {k: 0 for k in "pgoaw"}
    off = 0
    for k, n in bufs:
        off = up(off, ALIGN) + n
        cat[k] += n
    return [cat[k] for k in "pgoaw"], off, params, sets


def main():
    text = open(sys.argv[1]).read()
    cfg = parse(text)
    for key, want in (("model.normalization", "rmsnorm"), ("model.activation", "swiglu"),
                      ("model.bias", "false"),
                      ("model.share_embeddings_and_output_weights", "false")):
        if cfg.get(key) != want:
            sys.exit(f"gpu_memory.py: Llama-family models only ({key} is {cfg.get(key)})")
    c = {
        "L": int(cfg["model.num_layers"]), "D": int(cfg["model.hidden_size"]),
        "H": int(cfg["model.num_attention_heads"]), "Hkv": int(cfg["model.num_query_groups"]),
        "F": int(cfg["model.ffn_hidden_size"]), "Vp": int(cfg["model.padded"]),
        "tp": int(cfg["parallel.tensor"]), "pp": int(cfg["parallel.pipeline"]),
        "vp": int(cfg["parallel.virtual_stages"]), "sp": cfg["parallel.sequence"] == "true",
        "dp": int(cfg["parallel.data"]), "mbs": int(cfg["train.micro_batch_size"]),
        "seq": int(cfg["train.seq_len"]),
        "recompute": ["none", "selective", "full"].index(cfg["train.recompute"]),
        "eval_iters": int(cfg.get("eval.iters", "0")),
    }
    c["accum"] = int(cfg["train.global_batch_size"]) // (c["mbs"] * c["dp"])
    zero = max(1, int(cfg.get("optim.zero", "0")))
    bad = []
    m = re.search(r"# GPU per rank \(bf16, ZeRO-(\d+) over (\d+)", text)
    if not m or int(m.group(1)) != zero or int(m.group(2)) != c["dp"]:
        bad.append(f"header: want ZeRO-{zero} over {c['dp']}")
    plans = [plan(c, st, zero) for st in range(c["pp"])]
    for st, (cat, total, _, sets) in enumerate(plans):
        mb = "micro-batch" + ("" if sets == 1 else "es")
        want = (f"#   stage {st}: parameters {human(cat[0])}, gradients {human(cat[1])}, "
                f"optimizer {human(cat[2])}, activations {human(cat[3])} ({sets} {mb}), "
                f"workspace {human(cat[4])} = {human(total)}\n"
                f"  #     bytes: parameters {cat[0]}, gradients {cat[1]}, optimizer {cat[2]}, "
                f"activations {cat[3]}, workspace {cat[4]}, arena {total}\n")
        if want not in text:
            bad.append(f"want: {want}")
    best = max(range(c["pp"]), key=lambda s: (plans[s][1], -s))
    cat, total, params, _ = plans[best]
    want = f"# GPU largest: stage {best}, {params} parameters, {human(total)}\n"
    if want not in text:
        bad.append(f"want: {want}")
    tot = [max(plan(c, st, z)[1] for st in range(c["pp"])) for z in (1, 2, 3)]
    want = ("# GPU per rank at ZeRO-1 / 2 / 3: " + " / ".join(human(t) for t in tot)
            + " (arena bytes " + " / ".join(str(t) for t in tot) + ")")
    if want not in text:
        bad.append(f"want: {want}")
    print(f"  stage {best} of {c['pp']}: {human(total)} a GPU (ZeRO-{zero}); ZeRO-1/2/3: "
          + " / ".join(human(t) for t in tot))
    if bad:
        print("\n".join(bad))
        for line in text.splitlines():
            if "# GPU" in line or "#   " in line:
                print("got: " + line.strip())
        sys.exit(1)


if __name__ == "__main__":
    main()
