"""The entropy, in nats, of the target tokens of the first N validation samples (as
Megatron's indexing, ported in megatron_index.py, picks them): the cross-entropy of the
best context-free predictor one could fit to exactly those tokens. A model whose
validation loss is below it uses the context.

usage: unigram_bound.py PREFIX SEQ_LEN SPLIT SEED N_SAMPLES
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import megatron_index as mi  # noqa: E402

prefix, L, split, seed, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sizes, ptrs, data, isz = mi.idx_read(prefix)
lo, hi = mi.split_ranges(split, len(sizes))[1]
doc_idx, sample_idx, shuffle_idx, _, _ = mi.gpt_indices(sizes, lo, hi, L, n, seed)
targets = np.concatenate([mi.sample_tokens(data, ptrs, isz, sizes, doc_idx, sample_idx, shuffle_idx, i)[1:]
                          for i in range(n)])
c = np.bincount(targets).astype(np.float64)
p = c[c > 0] / c.sum()
print("%.6f %d %d" % (-(p * np.log(p)).sum(), len(targets), len(p)))
