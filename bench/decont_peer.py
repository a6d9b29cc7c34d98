#!/usr/bin/env python3
"""The peer of `sluice decontaminate` in bench/decont.sh: NeMo Curator's TaskDecontamination
(NVIDIA/NeMo-Curator nemo_curator/modules/task.py, with get_words from
nemo_curator/utils/text_utils.py and DownstreamTask._update_ngrams from
nemo_curator/tasks/downstream_task.py) re-implemented faithfully in plain Python: the
Dask/pandas plumbing is left out (one process, one partition), the per-document work is
NeMo's code. nemo-curator's current releases (the Ray "stages" generation) no longer ship
TaskDecontamination, so the algorithm is run from this copy.

Usage: decont_peer.py TASKS.json IN.jsonl OUT.jsonl  (prints seconds of the two passes)"""
import json, re, string, sys, time
from collections import defaultdict


def get_words(text):
    word_start_char_positions = []
    prev = 0
    words = []
    text = text.lower()
    text = text.translate(str.maketrans(string.punctuation, " " * len(string.punctuation)))
    if text != "":
        for match in re.finditer(r"\s+", text):
            if match.start() != prev:
                words.append(text[prev:match.start()])
                word_start_char_positions.append(prev)
            prev = match.end()
        if prev != len(text):
            words.append(text[prev:])
            word_start_char_positions.append(prev)
    return words, word_start_char_positions


class TaskDecontamination:
    def __init__(self, max_ngram_size=13, max_matches=10, min_document_length=200,
                 remove_char_each_side=200, max_splits=10):
        self.max_ngram_size = max_ngram_size
        self.max_matches = max_matches
        self.min_document_length = min_document_length
        self.remove_char_each_side = remove_char_each_side
        self.max_splits = max_splits

    @staticmethod
    def update_ngrams(ngrams, text, min_ngram_size=8, max_ngram_size=13):
        words, positions = get_words(text)
        if len(words) < min_ngram_size:
            return
        if len(words) < max_ngram_size:
            seq = " ".join(words)
            if seq not in ngrams:
                ngrams[seq] = 0
        for i in range(len(words) - max_ngram_size + 1):
            seq = " ".join(words[i:i + max_ngram_size])
            if seq not in ngrams:
                ngrams[seq] = 0

    @staticmethod
    def _compute_ngram_freq_sorted(task_ngrams):
        ngrams_freq = defaultdict(int)
        for ngram_key in task_ngrams.keys():
            ngram_words, _ = get_words(ngram_key)
            ngrams_freq[len(ngram_words)] += 1
        return sorted(ngrams_freq.items(), key=lambda item: item[0])

    def _find_ngrams(self, document, task_ngrams, ngrams_freq_sorted):
        text_buf = [document]
        local_ngram = defaultdict(int)
        while len(text_buf) > 0:
            text = text_buf.pop(0)
            words, positions = get_words(text)
            ngram_free = True
            for i in range(len(words) - self.max_ngram_size + 1):
                if not self._check_text(words[i:i + self.max_ngram_size], task_ngrams, text, positions[i], text_buf, local_ngram):
                    ngram_free = False
                    break
                for ngram_len, _ in ngrams_freq_sorted:
                    if not self._check_text(words[i:i + ngram_len], task_ngrams, text, positions[i], text_buf, local_ngram):
                        ngram_free = False
                        break
                if not ngram_free:
                    break
            if ngram_free and len(words) - self.max_ngram_size > 0:
                for i in range(len(words) - self.max_ngram_size + 1, len(words)):
                    if not ngram_free:
                        break
                    for ngram_len, _ in ngrams_freq_sorted:
                        if not self._check_text(words[i:i + ngram_len], task_ngrams, text, positions[i], text_buf, local_ngram):
                            ngram_free = False
                            break
        return local_ngram

    @staticmethod
    def _check_text(words, task_ngrams, text, start_position, text_buf, local_ngram):
        seq = " ".join(words)
        if seq in task_ngrams:
            local_ngram[seq] += 1
            if (start_position + len(seq) + 1) < len(text):
                text_buf.append(text[start_position + len(seq) + 1:len(text)])
            return False
        return True

    def _remove_ngrams(self, document, task_ngrams, ngrams_freq_sorted):
        text_buf = [document]
        text_buf_ngram_free = []
        while len(text_buf) > 0:
            text = text_buf.pop(0)
            words, positions = get_words(text)
            ngram_free = True
            for i in range(len(words) - self.max_ngram_size + 1):
                if not self._clean_text(words[i:i + self.max_ngram_size], task_ngrams, text, positions[i], text_buf, text_buf_ngram_free):
                    ngram_free = False
                    break
                for ngram_len, _ in ngrams_freq_sorted:
                    if not self._clean_text(words[i:i + ngram_len], task_ngrams, text, positions[i], text_buf, text_buf_ngram_free):
                        ngram_free = False
                        break
                if not ngram_free:
                    break
            if ngram_free and len(words) - self.max_ngram_size > 0:
                for i in range(len(words) - self.max_ngram_size + 1, len(words)):
                    if not ngram_free:
                        break
                    for ngram_len, _ in ngrams_freq_sorted:
                        if not self._clean_text(words[i:i + ngram_len], task_ngrams, text, positions[i], text_buf, text_buf_ngram_free):
                            ngram_free = False
                            break
            if ngram_free:
                text_buf_ngram_free.append(text)
        return text_buf_ngram_free

    def _clean_text(self, words, matched_ngrams, text, start_position, text_buf, text_buf_ngram_free):
        seq = " ".join(words)
        if seq in matched_ngrams:
            text_first, text_second = self._split_text(text, start_position, self.remove_char_each_side, seq)
            if len(text_first) > self.min_document_length:
                text_buf_ngram_free.append(text_first)
            if len(text_second) > self.min_document_length:
                text_buf.append(text_second)
            return False
        return True

    @staticmethod
    def _split_text(text, start_pos, remove_char_each_side, seq):
        punctuations = ".!?"
        pos = start_pos - remove_char_each_side
        text_first = ""
        while pos > 0 and not text[pos] in punctuations:
            pos -= 1
        if pos > 0:
            text_first = text[0:pos + 1]
        pos = start_pos + len(seq) + remove_char_each_side
        text_second = ""
        while pos < len(text) and not text[pos] in punctuations:
            pos += 1
        if pos + 1 < len(text):
            text_second = text[pos + 1:len(text)]
        return text_first, text_second


def main():
    cfg = json.load(open(sys.argv[1]))
    docs = [json.loads(l) for l in open(sys.argv[2], encoding="utf-8")]
    td = TaskDecontamination(cfg["ngram"], cfg.get("max_matches", 10), cfg["min_length"], cfg["margin"], cfg["max_splits"])
    t0 = time.process_time()
    ngrams = {}
    for t in cfg["tasks"]:
        for f in t["files"]:
            for line in open(f, encoding="utf-8"):
                rec = json.loads(line)
                for field in t["fields"]:
                    v = rec.get(field)
                    for text in ([v] if isinstance(v, str) else v if isinstance(v, list) else []):
                        td.update_ngrams(ngrams, text, cfg["min_task_words"], cfg["ngram"])
    freq = td._compute_ngram_freq_sorted(ngrams)
    t_build = time.process_time() - t0
    t0 = time.process_time()
    counts = defaultdict(int)
    for d in docs:  # pass 1: count matched n-grams
        for k, v in td._find_ngrams(d["text"], ngrams, freq).items():
            counts[k] += v
    keep = {k for k, v in counts.items() if v <= td.max_matches}
    t_find = time.process_time() - t0
    t0 = time.process_time()
    n_out = n_drop = 0
    with open(sys.argv[3], "w", encoding="utf-8") as out:
        for d in docs:  # pass 2: remove
            pieces = td._remove_ngrams(d["text"], keep, freq)
            if 1 <= len(pieces) <= td.max_splits:
                for p in pieces:
                    out.write(json.dumps({"id": d["id"], "text": p}, ensure_ascii=False) + "\n")
                    n_out += 1
            else:
                n_drop += 1
    t_remove = time.process_time() - t0
    print(json.dumps({"build": t_build, "find": t_find, "remove": t_remove, "ngrams": len(ngrams),
                      "matched_ngrams": len(counts), "documents_out": n_out, "dropped": n_drop}))


if __name__ == "__main__":
    main()
