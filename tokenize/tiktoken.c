/* The tiktoken families: OpenAI's encodings and Meta's rank files, and how a rank file is
 * told to be one of them. */
#include "tokenize/tiktoken.h"

#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

/* OpenAI's special tokens, at the ids tiktoken gives them. */
static const struct tiktoken_special sp_r50k[] = { { "<|endoftext|>", 50256 }, { NULL, 0 } };
static const struct tiktoken_special sp_cl100k[] = {
    { "<|endoftext|>", 100257 },  { "<|fim_prefix|>", 100258 },  { "<|fim_middle|>", 100259 },
    { "<|fim_suffix|>", 100260 }, { "<|endofprompt|>", 100276 }, { NULL, 0 }
};
static const struct tiktoken_special sp_o200k[] = { { "<|endoftext|>", 199999 },
                                                    { "<|endofprompt|>", 200018 },
                                                    { NULL, 0 } };

/* Meta's rank files (tokenizer.model of Llama 3 and Llama 4): their special tokens right
 * after the ranks, in the order of Meta's reference tokenizer (llama_models,
 * llama3/tokenizer.py and llama4/tokenizer.py). */
#define ONE(s)                                                                                     \
    {                                                                                              \
        s, 0, -1                                                                                   \
    }
static const struct tiktoken_names llama3_specials[] = { ONE("<|begin_of_text|>"),
                                                         ONE("<|end_of_text|>"),
                                                         { "<|reserved_special_token_%d|>", 0, 1 },
                                                         ONE("<|finetune_right_pad_id|>"),
                                                         ONE("<|step_id|>"),
                                                         ONE("<|start_header_id|>"),
                                                         ONE("<|end_header_id|>"),
                                                         ONE("<|eom_id|>"),
                                                         ONE("<|eot_id|>"),
                                                         ONE("<|python_tag|>"),
                                                         ONE("<|image|>"),
                                                         { "<|reserved_special_token_%d|>", 2,
                                                           245 },
                                                         { NULL, 0, 0 } };
static const struct tiktoken_names llama4_specials[] = {
    ONE("<|begin_of_text|>"),
    ONE("<|end_of_text|>"),
    ONE("<|fim_prefix|>"),
    ONE("<|fim_middle|>"),
    ONE("<|fim_suffix|>"),
    ONE("<|header_start|>"),
    ONE("<|header_end|>"),
    ONE("<|eom|>"),
    ONE("<|eot|>"),
    ONE("<|step|>"),
    { "<|text_post_train_reserved_special_token_%d|>", 0, 5 },
    ONE("<|python_start|>"),
    ONE("<|python_end|>"),
    ONE("<|finetune_right_pad|>"),
    { "<|text_post_train_reserved_special_token_%d|>", 8, 68 },
    ONE("<|image_start|>"),
    ONE("<|image_end|>"),
    { "<|vision_reserved_special_token_%d|>", 0, 1 },
    ONE("<|tile_x_separator|>"),
    ONE("<|tile_y_separator|>"),
    { "<|vision_reserved_special_token_%d|>", 2, 5 },
    ONE("<|image|>"),
    { "<|vision_reserved_special_token_%d|>", 6, 6 },
    ONE("<|patch|>"),
    { "<|vision_reserved_special_token_%d|>", 7, 1047 },
    { "<|reasoning_reserved_special_token_%d|>", 0, 7 },
    ONE("<|reasoning_thinking_start|>"),
    ONE("<|reasoning_thinking_end|>"),
    { "<|reserved_special_token_%d|>", 0, 903 },
    { NULL, 0, 0 }
};
#undef ONE

static const char *const names_o200k[] = { "o200k", NULL };
static const char *const names_cl100k[] = { "cl100k", NULL };
static const char *const names_r50k[] = { "r50k", "gpt2", NULL };
static const char *const names_p50k[] = { "p50k", NULL };
static const char *const names_none[] = { NULL };

/* The order in which names are matched: o200k before cl100k before the 50k encodings. A
 * family's rank count is that of its published file: tiktoken's ranks for OpenAI's (p50k_base
 * adds 24 runs of spaces to r50k_base's), Meta's tokenizer.model for theirs. */
const struct tiktoken_family tiktoken_families[] = {
    { "o200k_base", names_o200k, 199998, PRETOK_O200K, sp_o200k, NULL, "<|endoftext|>" },
    { "cl100k_base", names_cl100k, 100256, PRETOK_CL100K, sp_cl100k, NULL, "<|endoftext|>" },
    { "r50k_base", names_r50k, 50256, PRETOK_GPT2, sp_r50k, NULL, "<|endoftext|>" },
    { "p50k_base", names_p50k, 50280, PRETOK_GPT2, sp_r50k, NULL, "<|endoftext|>" },
    { "llama3", names_none, 128000, PRETOK_CL100K, NULL, llama3_specials, "<|end_of_text|>" },
    { "llama4", names_none, 200000, PRETOK_O200K, NULL, llama4_specials, "<|end_of_text|>" },
};
const size_t tiktoken_n_families = sizeof(tiktoken_families) / sizeof(tiktoken_families[0]);

const struct tiktoken_family *tiktoken_family_by_file(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < tiktoken_n_families; i++)
        for (const char *const *n = tiktoken_families[i].file_names; *n; n++)
            if (strstr(base, *n))
                return &tiktoken_families[i];
    return NULL;
}

const struct tiktoken_family *tiktoken_family_by_ranks(size_t n)
{
    for (size_t i = 0; i < tiktoken_n_families; i++)
        if (tiktoken_families[i].ranks == n)
            return &tiktoken_families[i];
    return NULL;
}

const struct tiktoken_family *tiktoken_family_of_pattern(enum pretok_kind k)
{
    for (size_t i = 0; i < tiktoken_n_families; i++)
        if (tiktoken_families[i].pattern == k && tiktoken_families[i].special)
            return &tiktoken_families[i];
    /* not reached: every pattern has a row (tests/unit/test_tiktoken.c) */
    return k == PRETOK_GPT2 ? &tiktoken_families[0] : tiktoken_family_of_pattern(PRETOK_GPT2);
}

const char *tiktoken_eod_token(size_t i)
{
    for (size_t f = 0; f < tiktoken_n_families; f++) {
        const char *e = tiktoken_families[f].eod;
        size_t k = 0;
        while (k < f && strcmp(tiktoken_families[k].eod, e) != 0)
            k++;
        if (k == f && i-- == 0) /* its first row */
            return e;
    }
    return NULL;
}

struct tiktoken_special *tiktoken_specials_after(const struct tiktoken_family *f, uint32_t first)
{
    size_t n = 0;
    for (const struct tiktoken_names *r = f->after; r->fmt; r++)
        n += r->to < 0 ? 1 : (size_t)(r->to - r->from + 1);
    struct tiktoken_special *sp = sl_xcalloc(n + 1, sizeof(*sp));
    size_t i = 0;
    for (const struct tiktoken_names *r = f->after; r->fmt; r++) {
        for (int k = r->from; k <= (r->to < 0 ? r->from : r->to); k++, i++) {
            sp[i].name = r->to < 0 ? sl_xstrdup(r->fmt) : sl_xasprintf(r->fmt, k);
            sp[i].id = first + (uint32_t)i;
        }
    }
    return sp;
}

void tiktoken_specials_free(struct tiktoken_special *sp)
{
    if (!sp)
        return;
    for (struct tiktoken_special *p = sp; p->name; p++)
        free((char *)p->name);
    free(sp);
}
