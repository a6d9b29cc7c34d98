// SentencePiece training from in-memory sentences (see spm_train.h).
#include "tokenize/spm_train.h"

#include <sentencepiece_trainer.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include <cstring>
#include <sentencepiece_processor.h>

extern "C" {
#include "core/atomic.h"
#include "core/err.h"
}

// In libsentencepiece, not in its public headers: the level below which LOG() is silent.
namespace sentencepiece
{
namespace logging
{
void SetMinLogLevel(int v);
}
} // namespace sentencepiece

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
    // Trained into memory (so the model records no prefix and does not depend on where it
    // is written), then written atomically.
    std::string a;
    int minlog = 0;
    for (size_t i = 0; i < nargs; i++) {
        a += i ? " " : "";
        a += args[i];
        if (!strncmp(args[i], "--minloglevel=", 14))
            minlog = atoi(args[i] + 14);
    }
    // the trainer logs its command line before it reads --minloglevel
    sentencepiece::logging::SetMinLogLevel(minlog);
    Sentences it(sentences, n);
    std::string proto;
    auto st = sentencepiece::SentencePieceTrainer::Train(a, &it, &proto);
    if (!st.ok())
        return sl_err_set(SL_ERR_CONFIG, "SentencePiece training failed: %s", st.ToString().c_str());
    sentencepiece::SentencePieceProcessor sp;
    st = sp.LoadFromSerializedProto(proto);
    if (!st.ok())
        return sl_err_set(SL_ERR_STATE, "SentencePiece training gave an unreadable model: %s",
                          st.ToString().c_str());
    // PREFIX.vocab as spm_train writes it: piece, tab, score
    std::string vocab;
    char num[64];
    for (int i = 0; i < sp.GetPieceSize(); i++) {
        snprintf(num, sizeof(num), "%g", (double)sp.GetScore(i));
        vocab += sp.IdToPiece(i);
        vocab += '\t';
        vocab += num;
        vocab += '\n';
    }
    std::string fm = std::string(prefix) + ".model", fv = std::string(prefix) + ".vocab";
    int rc = sl_write_file_atomic(fv.c_str(), vocab.data(), vocab.size());
    if (!rc)
        rc = sl_write_file_atomic(fm.c_str(), proto.data(), proto.size());
    if (rc)
        unlink(fv.c_str());
    return rc;
}
