"""The unigram baseline of the learning test (tests/cli/t_train_learn.sh).

Takes the target tokens of the first N validation samples (as Megatron's indexing, ported
in megatron_index.py, picks them: the tokens the validation loss is measured on) and
prints, in nats:
  U  the cross-entropy on them of the train split's unigram distribution, add-alpha
     smoothed with the alpha (searched on a grid) that makes U smallest on these tokens:
     the best context-free predictor one can estimate from the training data;
  H  their own entropy: the best context-free predictor fitted to these very tokens;
and the number of targets.

usage: unigram_bound.py PREFIX SEQ_LEN SPLIT SEED N_SAMPLES
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import megatron_index as mi  # noqa: E402

prefix, L, split, seed, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sizes, ptrs, data, isz = mi.idx_read(prefix)
(tlo, thi), (vlo, vhi) = mi.split_ranges(split, len(sizes))[:2]
doc_idx, sample_idx, shuffle_idx, _, _ = mi.gpt_indices(sizes, vlo, vhi, L, n, seed)
targets = np.concatenate([mi.sample_tokens(data, ptrs, isz, sizes, doc_idx, sample_idx, shuffle_idx, i)[1:]
                          for i in range(n)])
train = np.concatenate([data[ptrs[s] // isz:ptrs[s] // isz + sizes[s]] for s in range(tlo, thi)]).astype(np.int64)
V = max(int(data.max()) + 1, 50257)
c = np.bincount(train, minlength=V).astype(np.float64)
U = min(-np.log((c[targets] + a) / (c.sum() + a * V)).mean() for a in np.geomspace(1e-4, 10, 41))
t = np.bincount(targets).astype(np.float64)
p = t[t > 0] / t.sum()
print("%.6f %.6f %d" % (U, -(p * np.log(p)).sum(), len(targets)))
