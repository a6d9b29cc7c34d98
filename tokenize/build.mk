# tokenize/: byte-level BPE (GPT-2, tiktoken), SentencePiece wrapper and trainer, the encoder.
LIB_SRCS += tokenize/unicat.c tokenize/pretok.c tokenize/ids.c tokenize/bpe.c tokenize/bpe_load.c tokenize/tokenizer.c
PKGS += libpcre2-8
LIB_SRCS += tokenize/spm.cc tokenize/spm_train.cc
PKGS += sentencepiece
LIB_SRCS += tokenize/cmd_tokenize.c tokenize/cmd_tokenizer.c
FUZZ_TARGETS += fuzz_bpe_load fuzz_bpe_encode
