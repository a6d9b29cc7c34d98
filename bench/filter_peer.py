#!/usr/bin/env python3
"""The peer side of bench/filter-speed.sh: one filter recipe run by a peer tool over a JSONL
file, kept documents written to OUT_DIR, the kept count printed to stdout.

  filter_peer.py fineweb IN.jsonl OUT_DIR LID_MODEL   datatrove 0.10.0: LanguageFilter (en,
      0.65; fastText LID_MODEL), GopherRepetitionFilter, GopherQualityFilter,
      C4QualityFilter(filter_no_terminal_punct=False), FineWebQualityFilter, in datatrove's
      own pipeline (JsonlReader -> filters -> JsonlWriter, LocalPipelineExecutor, 1 task)
  filter_peer.py fineweb-heuristics IN.jsonl OUT_DIR   the same without LanguageFilter
  filter_peer.py nemo IN.jsonl OUT_DIR                NeMo Curator 1.4.0: the 28 filters of its
      heuristic_filter_english_pipeline.yaml (same order and thresholds as our nemo-en.yaml),
      each document scored and kept as its ScoreFilter stage does, stopping at the first drop
      (bench/filter_agreement.py uses the same chain, nemo_chain())

NeMo Curator's filter classes are plain Python; its package imports its distributed runtime
(Ray, pandas stages) on the way, so the filter modules are loaded under empty parent packages.
"""
import json, os, sys, types



def fineweb(src, out, lid_model=None):
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                            GopherRepetitionFilter, LanguageFilter)
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.writers import JsonlWriter

    import datatrove.utils.lid
    # the model file the sluice side uses, instead of a download
    datatrove.utils.lid.cached_asset_path_or_download = lambda *a, **k: lid_model
    pipeline = [
        JsonlReader(os.path.dirname(os.path.abspath(src)), glob_pattern=os.path.basename(src)),
    ] + ([LanguageFilter(languages=["en"], language_threshold=0.65)] if lid_model else []) + [
        GopherRepetitionFilter(),
        GopherQualityFilter(),
        C4QualityFilter(filter_no_terminal_punct=False),
        FineWebQualityFilter(),
        JsonlWriter(out, compression=None),
    ]
    LocalPipelineExecutor(pipeline, tasks=1, workers=1, logging_dir=os.path.join(out, "logs"),
                          skip_completed=False).run()
    kept = 0
    for f in os.listdir(out):
        if f.endswith(".jsonl"):
            kept += sum(1 for _ in open(os.path.join(out, f)))
    return kept


def nemo_chain():
    """NeMo Curator's English heuristic cascade: its filter objects, in order."""
    import importlib, site
    root = None
    for d in site.getsitepackages() + [site.getusersitepackages()]:
        if os.path.isdir(os.path.join(d, "nemo_curator")):
            root = d
    for pkg in ["nemo_curator", "nemo_curator.stages", "nemo_curator.stages.text",
                "nemo_curator.stages.text.filters", "nemo_curator.stages.text.filters.heuristic",
                "nemo_curator.stages.text.utils"]:
        m = types.ModuleType(pkg)
        m.__path__ = [os.path.join(root, *pkg.split("."))]
        sys.modules[pkg] = m
    s = importlib.import_module("nemo_curator.stages.text.filters.heuristic.string")
    r = importlib.import_module("nemo_curator.stages.text.filters.heuristic.repetition.repetition")
    chain = [
        s.NonAlphaNumericFilter(max_non_alpha_numeric_to_text_ratio=0.25),
        s.SymbolsToWordsFilter(max_symbol_to_word_ratio=0.1),
        s.NumbersFilter(max_number_to_text_ratio=0.15),
        s.UrlsFilter(max_url_to_text_ratio=0.2),
        s.WhiteSpaceFilter(max_white_space_ratio=0.25),
        s.ParenthesesFilter(max_parentheses_ratio=0.1),
        s.BoilerPlateStringFilter(max_boilerplate_string_ratio=0.4),
        r.RepeatedLinesFilter(max_repeated_line_fraction=0.7),
        r.RepeatedParagraphsFilter(max_repeated_paragraphs_ratio=0.7),
        r.RepeatedLinesByCharFilter(max_repeated_lines_char_ratio=0.8),
        r.RepeatedParagraphsByCharFilter(max_repeated_paragraphs_char_ratio=0.8),
        s.WordCountFilter(min_words=50, max_words=100000),
        s.PunctuationFilter(max_num_sentences_without_endmark_ratio=0.85),
        s.WordsWithoutAlphabetsFilter(min_words_with_alphabets=0.8),
        s.CommonEnglishWordsFilter(min_num_common_words=2),
        s.MeanWordLengthFilter(max_mean_word_length=10, min_mean_word_length=3),
        s.LongWordFilter(max_word_length=1000),
        s.EllipsisFilter(max_num_lines_ending_with_ellipsis_ratio=0.3),
        r.RepeatingTopNGramsFilter(n=2, max_repeating_ngram_ratio=0.2),
        r.RepeatingTopNGramsFilter(n=3, max_repeating_ngram_ratio=0.18),
        r.RepeatingTopNGramsFilter(n=4, max_repeating_ngram_ratio=0.16),
        r.RepeatingDuplicateNGramsFilter(n=5, max_repeating_duplicate_ngram_ratio=0.15),
        r.RepeatingDuplicateNGramsFilter(n=6, max_repeating_duplicate_ngram_ratio=0.14),
        r.RepeatingDuplicateNGramsFilter(n=7, max_repeating_duplicate_ngram_ratio=0.13),
        r.RepeatingDuplicateNGramsFilter(n=8, max_repeating_duplicate_ngram_ratio=0.12),
        r.RepeatingDuplicateNGramsFilter(n=9, max_repeating_duplicate_ngram_ratio=0.11),
        r.RepeatingDuplicateNGramsFilter(n=10, max_repeating_duplicate_ngram_ratio=0.10),
        s.BulletsFilter(max_bullet_lines_ratio=0.9),
    ]
    return chain


def nemo(src, out):
    chain = nemo_chain()
    kept = 0
    with open(src) as f, open(os.path.join(out, "kept.jsonl"), "w") as w:
        for line in f:
            doc = json.loads(line)
            text = doc["text"]
            if all(flt.keep_document(flt.score_document(text)) for flt in chain):
                w.write(json.dumps(doc, ensure_ascii=False) + "\n")
                kept += 1
    return kept


if __name__ == "__main__":
    mode, src, out = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(out, exist_ok=True)
    if mode == "fineweb":
        print(fineweb(src, out, sys.argv[4]))
    elif mode == "fineweb-heuristics":
        print(fineweb(src, out))
    else:
        print(nemo(src, out))
