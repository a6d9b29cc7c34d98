"""Brute-force reference for `sluice decontaminate` (tests/cli/t_decontaminate.sh).

Written the way NeMo Curator's TaskDecontamination is (nemo_curator/modules/task.py): a
buffer of texts, each re-tokenised from scratch, n-grams joined with spaces and looked up
in a set of strings; at the first match the text is cut (margin, then to a sentence end)
and the rest goes back into the buffer. Differences from NeMo, kept in sluice too: the
cut after a match starts at the end of the matched words in the text (NeMo adds the length
of the normalised n-gram string to its start), shorter task n-grams are tried at every
position, and max_matches (ignoring n-grams matched in more than 10 documents) is not
applied.

Usage: reference.py TASKS.json IN.jsonl OUT.jsonl COUNTS.json
  TASKS.json: {"ngram":13,"min_task_words":8,"margin":200,"min_length":200,
               "max_splits":10,"tasks":[{"name":..,"files":[..],"fields":[..]}]}
"""
import json
import string
import sys

def get_words(text):
    """Lower-cased words (ASCII punctuation and whitespace separate them), their start and
    end positions in code points."""
    words, pos, ends = [], [], []
    i, n = 0, len(text)
    sep = lambda c: c.isspace() or c in string.punctuation
    while i < n:
        while i < n and sep(text[i]):
            i += 1
        if i >= n:
            break
        j = i
        while j < n and not sep(text[j]):
            j += 1
        words.append(text[i:j].lower())
        pos.append(i)
        ends.append(j)
        i = j
    return words, pos, ends


def task_ngrams(cfg):
    grams = {}  # ngram string -> task name (first task wins)
    lens = {cfg["ngram"]}
    for t in cfg["tasks"]:
        for f in t["files"]:
            for line in open(f, encoding="utf-8"):
                if not line.strip():
                    continue
                rec = json.loads(line)
                for field in t["fields"]:
                    v = rec.get(field)
                    texts = [v] if isinstance(v, str) else [x for x in v if isinstance(x, str)] if isinstance(v, list) else []
                    for text in texts:
                        w = get_words(text)[0]
                        if len(w) < cfg["min_task_words"]:
                            continue
                        if len(w) < cfg["ngram"]:
                            grams.setdefault(" ".join(w), t["name"])
                            lens.add(len(w))
                            continue
                        for i in range(len(w) - cfg["ngram"] + 1):
                            grams.setdefault(" ".join(w[i:i + cfg["ngram"]]), t["name"])
    order = [cfg["ngram"]] + sorted(l for l in lens if l != cfg["ngram"])
    return grams, order


def decontaminate(text, cfg, grams, order, counts):
    margin, min_len = cfg["margin"], cfg["min_length"]
    buf, free, matched = [text], [], False
    while buf:
        t = buf.pop(0)
        words, pos, ends = get_words(t)
        hit = None
        for i in range(len(words)):
            for L in order:
                if i + L <= len(words) and " ".join(words[i:i + L]) in grams:
                    hit = (i, L)
                    break
            if hit:
                break
        if not hit:
            free.append(t)
            continue
        matched = True
        i, L = hit
        name = grams[" ".join(words[i:i + L])]
        counts["matches_" + name] = counts.get("matches_" + name, 0) + 1
        p = pos[i] - margin
        if p > 0:
            while p > 0 and t[p] not in ".!?":
                p -= 1
            if p > 0:
                if len(t[:p + 1]) > min_len:
                    free.append(t[:p + 1])
                else:
                    counts["short"] += 1
        p = ends[i + L - 1] + margin
        while p < len(t) and t[p] not in ".!?":
            p += 1
        if p + 1 < len(t):
            if len(t[p + 1:]) > min_len:
                buf.append(t[p + 1:])
            else:
                counts["short"] += 1
    return matched, free


def main():
    cfg = json.load(open(sys.argv[1]))
    grams, order = task_ngrams(cfg)
    counts = {"short": 0, "contaminated": 0, "dropped": 0}
    with open(sys.argv[3], "w", encoding="utf-8") as out:
        for line in open(sys.argv[2], encoding="utf-8"):
            d = json.loads(line)
            matched, pieces = decontaminate(d["text"], cfg, grams, order, counts)
            if not matched:
                out.write(json.dumps({"id": d["id"], "text": d["text"]}, ensure_ascii=False) + "\n")
                continue
            counts["contaminated"] += 1
            if not pieces or len(pieces) > cfg["max_splits"]:
                counts["dropped"] += 1
                continue
            for k, p in enumerate(pieces):
                out.write(json.dumps({"id": "%s-%d" % (d["id"], k), "text": p}, ensure_ascii=False) + "\n")
    json.dump(counts, open(sys.argv[4], "w"), sort_keys=True)


if __name__ == "__main__":
    main()
