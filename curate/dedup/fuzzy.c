#include "curate/dedup/dedup.h"
int dedup_fuzzy_main(int argc, const char **argv) { (void)argc; (void)argv; return 2; }
