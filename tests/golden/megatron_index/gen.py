"""Regenerate the golden cache descriptions from the real megatron-core.

    PYTHON gen.py        (PYTHON: a Python with megatron-core==0.16.1, torch and numpy)

For every case of cases.json, megatron-core's BlendedMegatronDatasetBuilder builds the
GPTDataset / BlendedDataset splits over the prefixes of `megatron_index.py make-data`
(run in a fresh copy of them, with the prefix strings of the case), and every
*-description.txt it writes is copied to CASE/ here. The file names carry the MD5 that
names the cache files. tests/cli/t_megatron_cache.sh compares sluice's and the Python
port's descriptions with these.
"""
import glob
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "oracle"))
import megatron_index as mi  # noqa: E402

import torch  # noqa: E402
from megatron.core.datasets.blended_megatron_dataset_builder import (  # noqa: E402
    BlendedMegatronDatasetBuilder)
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig  # noqa: E402
from megatron.core.datasets.megatron_tokenizer import MegatronLegacyTokenizer  # noqa: E402
from megatron.core.datasets.utils import get_blend_from_list  # noqa: E402
from megatron.core.tokenizers import MegatronTokenizer  # noqa: E402


class _Legacy(MegatronLegacyTokenizer):
    """Megatron-LM's legacy tokenizers (megatron/training/tokenizer/tokenizer.py, not part of
    megatron-core) pass these paths and options to MegatronLegacyTokenizer; stand-ins that do
    the same, named as they are."""

    def __init__(self, n_ids, *paths, **options):
        super().__init__(*paths, **options)
        self._n = n_ids

    def tokenize(self, text):
        raise NotImplementedError

    @property
    def vocab(self):
        return {}

    @property
    def inv_vocab(self):
        return {}

    @property
    def vocab_size(self):
        return self._n

    @property
    def eod(self):
        return self._n - 1


def tokenizer(spec):
    if spec.startswith("legacy:NullTokenizer:"):
        n = int(spec.split(":")[2])
        cls = type("_NullTokenizer", (_Legacy,), {})
        return cls(n + 1, None, vocab_size=n)
    if spec.startswith("legacy:GPT2BPETokenizer:"):
        vocab, merges = spec.split(":", 2)[2].split(",")
        cls = type("_GPT2BPETokenizer", (_Legacy,), {})
        return cls(50257, vocab, merges)
    if spec.startswith("NullTokenizer:"):
        return MegatronTokenizer.from_pretrained(metadata_path={"library": "null"},
                                                 vocab_size=int(spec.split(":")[1]))
    raise SystemExit("gen.py: no real tokenizer for '%s'" % spec)


def config(case, cache):
    kw = {}
    if "data_path" in case:
        kw["blend"] = get_blend_from_list(case["data_path"])
        kw["split"] = case.get("split", "969, 30, 1")
    else:
        kw["blend_per_split"] = [get_blend_from_list(case.get(k)) for k in
                                 ("train_data_path", "valid_data_path", "test_data_path")]
    return GPTDatasetConfig(random_seed=case.get("seed", 1234), sequence_length=case["seq_length"],
                            path_to_cache=cache, tokenizer=tokenizer(case["tokenizer"]),
                            reset_position_ids=False, reset_attention_mask=False,
                            eod_mask_loss=False, **kw)


def build(case, work):
    """Build the case's datasets in work/ (the data directory); returns the datasets."""
    cache = os.path.join(work, "megatron-cache") if case.get("cache") else None
    cwd = os.getcwd()
    os.chdir(work)
    try:
        return BlendedMegatronDatasetBuilder(GPTDataset, case["samples"], lambda: True,
                                             config(case, cache)).build()
    finally:
        os.chdir(cwd)


def main():
    torch.distributed.init_process_group(
        "gloo", init_method="file://" + tempfile.mktemp(prefix="sluice-gen-"), rank=0,
        world_size=1)
    cases = json.load(open(os.path.join(HERE, "cases.json")))
    for case in cases:
        work = tempfile.mkdtemp(prefix="sluice-golden-")
        mi.make_data(work)
        build(case, work)
        out = os.path.join(HERE, case["name"])
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        found = glob.glob(os.path.join(work, "**", "*-description.txt"), recursive=True)
        for f in sorted(found):
            shutil.copy(f, out)
        print("%s: %d descriptions" % (case["name"], len(found)))
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
