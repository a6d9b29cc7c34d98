"""The peer of bench/tokenizer-train.sh: the `tokenizers` library's BpeTrainer with the
ByteLevel pre-tokenizer (GPT-2 regex, or Split(cl100k/o200k regex) + ByteLevel as Llama 3
and Qwen2 do), special tokens first, the full byte alphabet, on the texts of a JSONL file.

  train VOCAB PATTERN IN.jsonl OUT.json   train, save; prints 'train_s S' (the training
                                          call alone, the JSONL read before it)
  bpt TOKENIZER.json HELD.jsonl           bytes per token of the held-out texts
"""
import json
import sys
import time

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

PATTERNS = {
    "cl100k": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "o200k": "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""", r"""\s+""",
    ]),
}


def texts(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def train(vocab, pattern, src, out):
    docs = texts(src)
    t = Tokenizer(models.BPE())
    if pattern == "gpt2":
        t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        t.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(PATTERNS[pattern]), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    t.post_processor = processors.ByteLevel(trim_offsets=False)
    tr = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<|endoftext|>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    t0 = time.perf_counter()
    t.train_from_iterator(docs, tr)
    print("train_s %.3f" % (time.perf_counter() - t0))
    t.save(out)


def bpt(tj, held):
    t = Tokenizer.from_file(tj)
    docs = texts(held)
    n = sum(len(e.ids) for e in t.encode_batch(docs, add_special_tokens=False))
    print("bytes_per_token %.4f tokens %d" % (sum(len(d.encode()) for d in docs) / n, n))


if __name__ == "__main__":
    if sys.argv[1] == "train":
        train(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
    else:
        bpt(sys.argv[2], sys.argv[3])
