// SentencePiece training from in-memory sentences (see spm_train.h).
#include "tokenize/spm_train.h"

#include <sentencepiece_trainer.h>

#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" {
#include "core/alloc.h"
#include "core/err.h"
}

namespace {
class Sentences : public sentencepiece::SentenceIterator {
  public:
    Sentences(const char *const *s, size_t n) : s_(s), n_(n)
    {
        load();
    }
    bool done() const override { return i_ >= n_; }
    void Next() override
    {
        i_++;
        load();
    }
    const std::string &value() const override { return cur_; }
    sentencepiece::util::Status status() const override { return sentencepiece::util::Status(); }

  private:
    void load()
    {
        if (i_ < n_)
            cur_.assign(s_[i_]);
    }
    const char *const *s_;
    size_t n_, i_ = 0;
    std::string cur_;
};
} // namespace

extern "C" int spm_train_sentences(const char *const *sentences, size_t n, const char *const *args,
                                   size_t nargs, const char *prefix)
{
    std::string tmp(prefix);
    size_t slash = tmp.rfind('/');
    tmp.insert(slash == std::string::npos ? 0 : slash + 1, ".");
    tmp += ".sluice-tmp";
    std::string a = "--model_prefix=" + tmp;
    for (size_t i = 0; i < nargs; i++) {
        a += " ";
        a += args[i];
    }
    Sentences it(sentences, n);
    auto st = sentencepiece::SentencePieceTrainer::Train(a, &it);
    std::string tm = tmp + ".model", tv = tmp + ".vocab";
    if (!st.ok()) {
        unlink(tm.c_str());
        unlink(tv.c_str());
        return sl_err_set(SL_ERR_CONFIG, "SentencePiece training failed: %s", st.ToString().c_str());
    }
    std::string fm = std::string(prefix) + ".model", fv = std::string(prefix) + ".vocab";
    if (rename(tv.c_str(), fv.c_str()) != 0 || rename(tm.c_str(), fm.c_str()) != 0) {
        unlink(tm.c_str());
        unlink(tv.c_str());
        return sl_err_set(SL_ERR_IO, "cannot write '%s': rename failed", fm.c_str());
    }
    return 0;
}
