# tokenize/: byte-level BPE (GPT-2, tiktoken), SentencePiece wrapper and trainer, the encoder.
LIB_SRCS += tokenize/unicat.c tokenize/pretok.c tokenize/ids.c tokenize/bpe.c tokenize/bpe_load.c tokenize/bpe_cache.c tokenize/tokenizer.c \
            tokenize/tiktoken.c
LIB_SRCS += tokenize/hf.c tokenize/hf_load.c tokenize/hf_wp.c
LIB_SRCS += tokenize/bert.c tokenize/bert_vocab.c tokenize/bert_unicode.c
FUZZ_TARGETS += fuzz_hf_tokenizer fuzz_bert_vocab
LIB_SRCS += tokenize/bpe_train.c tokenize/hf_write.c
PKGS += libpcre2-8
LIB_SRCS += tokenize/spm_enc.c tokenize/spm_unigram.c tokenize/spm_hf.c tokenize/spm.cc tokenize/spm_train.cc
CXX_SRCS += tokenize/spm.cc tokenize/spm_train.cc
PKGS_CXX += sentencepiece
LIB_SRCS += tokenize/encoder.c tokenize/cmd_tokenize.c tokenize/cmd_tokenizer.c tokenize/cmd_punkt.c
# NLTK's Punkt sentence splitter and trainer (docs/formats/punkt-tab.md)
LIB_SRCS += tokenize/punkt_uni.c tokenize/punkt_map.c tokenize/punkt_params.c tokenize/punkt_word.c \
            tokenize/punkt.c tokenize/punkt_train.c
# the trainer's scores are NLTK's to the last bit: no fused multiply-add (docs/formats/punkt-tab.md)
$(BUILD)/obj/tokenize/punkt_train.o: CFLAGS_ALL += -ffp-contract=off
FUZZ_TARGETS += fuzz_bpe_load fuzz_bpe_encode fuzz_spm_enc fuzz_bpe_train fuzz_bpe_cache fuzz_punkt

# The Unicode class table is generated from libutf8proc and committed (docs/tokenizers.md).
.PHONY: gen-unicat
gen-unicat:
	$(CC) -I. -O1 -o $(BUILD)/unicat_gen tokenize/gen/unicat_gen.c -lutf8proc
	$(BUILD)/unicat_gen > tokenize/unicat_table.h

# The exceptions of tokenize/hf.c to libutf8proc's tables, from the tokenizers library
# (docs/tokenizers.md): PYTHON names a Python with the `tokenizers` package.
.PHONY: gen-hf-unicode
gen-hf-unicode:
	$(CC) -I. -O1 -o $(BUILD)/hf_unicode_dump tokenize/gen/hf_unicode_dump.c tokenize/unicat.c -lutf8proc
	$(or $(PYTHON),python3) tokenize/gen/hf_unicode_gen.py $(BUILD)/hf_unicode_dump > tokenize/hf_unicode.h.tmp
	mv tokenize/hf_unicode.h.tmp tokenize/hf_unicode.h
	clang-format -i tokenize/hf_unicode.h

# The Python Unicode tables of tokenize/bert.c (docs/tokenizers.md): PYTHON names the Python
# whose unicodedata sluice's BERT tokenizer then follows.
.PHONY: gen-bert-unicode
gen-bert-unicode:
	$(or $(PYTHON),python3) tokenize/gen/bert_unicode_gen.py > tokenize/bert_unicode_table.h.tmp
	mv tokenize/bert_unicode_table.h.tmp tokenize/bert_unicode_table.h

# The encoder benchmark program (bench/tokenize.sh builds it; `make` does not).
$(BUILD)/bench_encode: bench/encode.c $(BUILD)/libsluice.a
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libsluice.a $(LDLIBS_ALL)
# The `dataset` command (inspect, verify, merge, decode .bin/.idx) decodes with a tokenizer:
# it sits above both dataset/ and tokenize/ (docs/dev.md, Layers).
LIB_SRCS += tokenize/cmd_dataset.c tokenize/cmd_dataset_index.c

# The character classes of NLTK's Punkt, from the Python modules NLTK runs on (regex and
# str): PYTHON names a Python with the `regex` package (tokenize/punkt_uni.h).
.PHONY: gen-punkt-unicode
gen-punkt-unicode:
	$(or $(PYTHON),python3) tokenize/gen/punkt_uni_gen.py > tokenize/punkt_uni_table.h.tmp
	mv tokenize/punkt_uni_table.h.tmp tokenize/punkt_uni_table.h

# The sentence-splitter benchmark program (bench/punkt.sh builds it; `make` does not).
$(BUILD)/bench_punkt: bench/punkt_split.c $(BUILD)/libsluice.a
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libsluice.a $(LDLIBS_ALL)
