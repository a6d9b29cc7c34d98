// CLD2 and fastText behind the C interface of langid.h.
#include "curate/filter/langid.h"

extern "C" {
#include "core/err.h"
}

#include <cstdio>
#include <cld2/public/compact_lang_det.h>
#include <fasttext/fasttext.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace CLD2 {
const char *LanguageCode(Language lang);
}

extern "C" int sl_cld2_detect(const char *text, size_t n, char code[16], double *score)
{
    CLD2::Language l3[3];
    int pct[3];
    int bytes = 0;
    bool reliable = false;
    int len = n > (size_t)(1 << 30) ? (1 << 30) : (int)n;
    CLD2::Language lang = CLD2::DetectLanguageSummary(text, len, true, l3, pct, &bytes, &reliable);
    const char *c = CLD2::LanguageCode(lang);
    snprintf(code, 16, "%s", c ? c : "un");
    double s = 0;
    for (int i = 0; i < 3; i++)
        if (l3[i] == lang)
            s += pct[i] / 100.0;
    if (lang == CLD2::UNKNOWN_LANGUAGE)
        s = 0;
    *score = reliable ? s : s / 2;
    return 0;
}

struct sl_fasttext {
    fasttext::FastText ft;
};

extern "C" int sl_fasttext_load(struct sl_fasttext **out, const char *path)
{
    *out = nullptr;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sl_err_set(SL_ERR_IO, "cannot open fastText model '%s': %s", path, strerror(errno));
    fclose(f);
    try {
        sl_fasttext *m = new sl_fasttext;
        m->ft.loadModel(std::string(path));
        *out = m;
        return 0;
    } catch (const std::exception &e) {
        return sl_err_set(SL_ERR_FORMAT, "cannot load fastText model '%s': %s\nhint: is it a fastText .bin or .ftz file?", path, e.what());
    }
}

extern "C" void sl_fasttext_free(struct sl_fasttext *m)
{
    delete m;
}

static std::string one_line(const char *text, size_t n)
{
    std::string s(text, n);
    for (auto &ch : s)
        if (ch == '\n' || ch == '\r')
            ch = ' ';
    s.push_back('\n');
    return s;
}

extern "C" int sl_fasttext_predict(const struct sl_fasttext *m, const char *text, size_t n, int k,
                                   char (*labels)[64], double *probs, int *got)
{
    *got = 0;
    try {
        std::istringstream in(one_line(text, n));
        std::vector<std::pair<fasttext::real, std::string>> pred;
        m->ft.predictLine(in, pred, k, 0.0);
        for (size_t i = 0; i < pred.size() && (int)i < k; i++) {
            const char *lab = pred[i].second.c_str();
            if (!strncmp(lab, "__label__", 9))
                lab += 9;
            snprintf(labels[i], 64, "%s", lab);
            probs[i] = pred[i].first;
            (*got)++;
        }
        return 0;
    } catch (const std::exception &e) {
        return sl_err_set(SL_ERR_STATE, "fastText prediction failed: %s", e.what());
    }
}

extern "C" int sl_fasttext_prob(const struct sl_fasttext *m, const char *text, size_t n,
                                const char *label, double *prob)
{
    if (!strncmp(label, "__label__", 9))
        label += 9;
    char labels[16][64];
    double probs[16];
    int got;
    *prob = 0;
    int rc = sl_fasttext_predict(m, text, n, 16, labels, probs, &got);
    for (int i = 0; !rc && i < got; i++)
        if (!strcmp(labels[i], label))
            *prob = probs[i];
    return rc;
}

extern "C" int sl_fasttext_train(const struct sl_fasttext_train_opts *o)
{
    try {
        fasttext::Args a;
        a.input = o->input;
        a.output = o->output;
        a.model = fasttext::model_name::sup;
        a.loss = fasttext::loss_name::softmax;
        a.minn = 0;
        a.maxn = 0;
        a.lr = o->lr > 0 ? o->lr : 0.1;
        a.epoch = o->epoch > 0 ? o->epoch : 5;
        a.dim = o->dim > 0 ? o->dim : 100;
        a.wordNgrams = o->word_ngrams > 0 ? o->word_ngrams : 2;
        a.minCount = o->min_count > 0 ? o->min_count : 1;
        a.seed = o->seed;
        a.thread = o->thread > 0 ? o->thread : 1;
        a.verbose = o->verbose;
        fasttext::FastText ft;
        ft.train(a);
        ft.saveModel(std::string(o->output));
        return 0;
    } catch (const std::exception &e) {
        return sl_err_set(SL_ERR_STATE, "fastText training failed: %s", e.what());
    }
}
