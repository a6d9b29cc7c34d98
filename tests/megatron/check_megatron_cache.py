"""sluice's index caches against the real megatron-core (0.16.1), run by make test-megatron:

    PYTHON check_megatron_cache.py SLUICE WORKDIR

1. Megatron loads sluice's cache: `sluice dataset index` builds a 0.3/0.7 blend's caches;
   megatron-core's BlendedMegatronDatasetBuilder (GPTDatasetConfig, the same settings) then
   builds the datasets with every index-building function patched to raise (helpers'
   build_sample_idx and build_blending_indices, gpt_dataset's _build_document_index and
   _build_shuffle_index), so it can only have loaded them.
2. sluice reads Megatron's cache: megatron-core builds an unweighted blend into a fresh cache
   directory; `sluice dataset index` over it reports built 0 (its JSON summary's "built",
   every index "from_cache"), and `sluice train` on the same data logs "from the cache".
3. `sluice dataset samples` equals the tokens of megatron-core's datasets (__getitem__:
   tokens and the last label) for both blends, and per data-parallel rank (2 ranks, micro
   batch 3) with Megatron-LM's MegatronPretrainingSampler, ported below from
   megatron/training/datasets/data_samplers.py (megatron-core does not ship it).
Prints "ok ..." lines and exits 1 on the first mismatch.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
import megatron_index as mi  # noqa: E402

import torch  # noqa: E402
from megatron.core.datasets import gpt_dataset, helpers  # noqa: E402
from megatron.core.datasets.blended_megatron_dataset_builder import (  # noqa: E402
    BlendedMegatronDatasetBuilder)
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig  # noqa: E402
from megatron.core.datasets.utils import get_blend_from_list  # noqa: E402
from megatron.core.tokenizers import MegatronTokenizer  # noqa: E402

SLUICE, WORK = sys.argv[1], sys.argv[2]
L, SEED, SPLIT, SAMPLES = 16, 11, "90,8,2", [120, 24, 6]


def megatron(words, cache, samples=SAMPLES):
    tok = MegatronTokenizer.from_pretrained(metadata_path={"library": "null"}, vocab_size=1000)
    cfg = GPTDatasetConfig(random_seed=SEED, sequence_length=L, blend=get_blend_from_list(words),
                           split=SPLIT, path_to_cache=cache, tokenizer=tok,
                           reset_position_ids=False, reset_attention_mask=False,
                           eod_mask_loss=False)
    return BlendedMegatronDatasetBuilder(GPTDataset, samples, lambda: True, cfg).build()


def sluice(sub, words, cache, *extra):
    args = [SLUICE, "dataset", sub, "-q", "--seq-length", str(L), "--seed", str(SEED),
            "--split", SPLIT, "--samples", ",".join(map(str, SAMPLES)),
            "--megatron-tokenizer", "NullTokenizer:1000", "--data-cache-path", cache]
    return subprocess.run(args + list(extra) + words, check=True, capture_output=True,
                          text=True).stdout


def tokens(ds, i):
    s = ds[i]
    return s["tokens"].tolist() + [int(s["labels"][-1])]


def sampler(total, micro, rank, size):
    """MegatronPretrainingSampler(consumed_samples=0, drop_last=True): the indices rank
    reads."""
    out, batch = [], []
    for idx in range(total):
        batch.append(idx)
        if len(batch) == micro * size:
            out += batch[rank * micro:(rank + 1) * micro]
            batch = []
    return out


def fail(msg):
    print("FAIL " + msg)
    sys.exit(1)


def check_samples(words, cache, train, label, n=60):
    rows = [json.loads(x) for x in
            sluice("samples", words, cache, "--from", "0", "--to", str(n - 1)).splitlines()]
    for r in rows:
        if r["ids"] != tokens(train, r["index"]):
            fail("%s: sample %d differs from megatron-core's" % (label, r["index"]))
    print("ok %s: dataset samples 0..%d equal megatron-core's __getitem__" % (label, n - 1))
    for rank in (0, 1):
        got = [json.loads(x) for x in sluice(
            "samples", words, cache, "--from", "0", "--to", str(n - 1), "--dp-rank", str(rank),
            "--dp-size", "2", "--micro-batch-size", "3").splitlines()]
        want = [i for i in sampler(len(train), 3, rank, 2) if i < n]
        if [g["index"] for g in got] != want:
            fail("%s: rank %d reads %s, Megatron's sampler %s"
                 % (label, rank, [g["index"] for g in got], want))
        if any(g["ids"] != tokens(train, g["index"]) for g in got):
            fail("%s: rank %d's tokens differ" % (label, rank))
    print("ok %s: ranks 0 and 1 of 2 (micro batch 3) read Megatron's sampler's samples" % label)


def forbid_building():
    def refuse(*a, **k):
        raise AssertionError("megatron-core built an index: the cache was not used")
    helpers.build_sample_idx = refuse
    helpers.build_blending_indices = refuse
    gpt_dataset._build_document_index = refuse
    gpt_dataset._build_shuffle_index = refuse


def main():
    torch.distributed.init_process_group(
        "gloo", init_method="file://" + tempfile.mktemp(prefix="sluice-mc-"), rank=0,
        world_size=1)
    data = os.path.join(WORK, "data")
    os.makedirs(data, exist_ok=True)
    mi.make_data(data)
    os.chdir(data)
    real = (helpers.build_sample_idx, helpers.build_blending_indices,
            gpt_dataset._build_document_index, gpt_dataset._build_shuffle_index)

    # 2. Megatron writes, sluice reads (first: the patching below is for good)
    words = ["a", "b"]
    cache = os.path.join(WORK, "megatron-cache")
    train = megatron(words, cache)[0]
    summary = json.loads(sluice("index", words, cache))
    if summary["built"] != 0 or not all(i["from_cache"] for i in summary["indices"]):
        fail("sluice built indices over Megatron's cache: %s" % summary)
    print("ok sluice read Megatron's cache: %d indices, built 0" % len(summary["indices"]))
    check_samples(words, cache, train, "unweighted blend (Megatron's cache)")
    # the trainer over Megatron's cache of prefix a for 3 steps x 8 samples (no validation)
    cache = os.path.join(WORK, "megatron-cache-train")
    megatron(["a"], cache, [24, 0, 0])
    run = subprocess.run([SLUICE, "train", os.path.join(HERE, "..", "..", "configs", "models",
                                                       "tiny-gpt.yaml"),
                          "data.prefix=a", "data.cache_dir=" + cache, "data.split=" + SPLIT,
                          "data.seed=%d" % SEED, "train.seq_len=%d" % L, "model.vocab_size=1000",
                          "model.num_layers=1", "train.micro_batch_size=4",
                          "train.global_batch_size=8", "train.steps=3", "eval.interval=0",
                          "train.resume=none", "data.megatron_tokenizer=NullTokenizer:1000"],
                         capture_output=True, text=True)
    if run.returncode != 0 or "from the cache" not in run.stderr:
        fail("sluice train did not read Megatron's cache:\n" + run.stderr)
    print("ok sluice train read Megatron's cache (its log: 'train index: ... from the cache')")

    # 1. sluice writes, Megatron loads without building
    words = ["0.3", "a", "0.7", "b"]
    cache = os.path.join(WORK, "sluice-cache")
    summary = json.loads(sluice("index", words, cache))
    forbid_building()
    train = megatron(words, cache)[0]
    print("ok megatron-core loaded sluice's %d indices, building none" % len(summary["indices"]))
    check_samples(words, cache, train, "0.3/0.7 blend (sluice's cache)")
    (helpers.build_sample_idx, helpers.build_blending_indices, gpt_dataset._build_document_index,
     gpt_dataset._build_shuffle_index) = real


if __name__ == "__main__":
    main()
