int cmd_tokenizer(int argc, const char **argv) { (void)argc; (void)argv; return 1; }
