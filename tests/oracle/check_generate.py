"""Check `sluice generate --temperature 0` against the numpy model (float64, full forward
pass over the whole sequence at every step, no cache).

usage: check_generate.py STEP_DIR "PROMPT IDS" "OUTPUT IDS"

OUTPUT IDS is what generate printed: the prompt's ids, then the generated ones. Each
generated id must be the arg max of the oracle's logits for the sequence before it. Where
the oracle's two best logits are within TIE (relative to the largest |logit|), fp32
rounding may pick either: such a step passes when the id is one of the near-tied ones, and
is counted. Prints "greedy: N tokens, N arg max, N near ties, N mismatches".
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_numpy as mn  # noqa: E402

TIE = 1e-5


def main():
    step_dir, prompt, output = sys.argv[1], sys.argv[2], sys.argv[3]
    meta = json.load(open(os.path.join(step_dir, "checkpoint.json")))
    c = mn.Cfg(meta["model"])
    params, _ = mn.st_load(os.path.join(step_dir, "model.safetensors"))
    p = [int(x) for x in prompt.replace(",", " ").split()]
    out = [int(x) for x in output.split()]
    if out[:len(p)] != p:
        print("the output does not start with the prompt: %s" % out[:len(p)])
        sys.exit(1)
    exact = ties = bad = 0
    for i in range(len(p), len(out)):
        seq = np.array([out[:i]])
        _, logits, _ = mn.forward_backward(params, c, seq, np.zeros_like(seq), want_grads=False)
        last = logits[-1]
        best = int(np.argmax(last))
        scale = np.abs(last).max()
        if out[i] == best:
            exact += 1
        elif last[best] - last[out[i]] <= TIE * scale:
            ties += 1
        else:
            bad += 1
            print("step %d: generated %d (logit %.9g), oracle arg max %d (logit %.9g)"
                  % (i - len(p), out[i], last[out[i]], best, last[best]))
    print("greedy: %d tokens, %d arg max, %d near ties, %d mismatches"
          % (len(out) - len(p), exact, ties, bad))
    sys.exit(1 if bad else 0)


main()
