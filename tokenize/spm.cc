// SentencePiece models through libsentencepiece (see spm.h).
#include "tokenize/spm.h"

#include <sentencepiece_processor.h>

#include <string>
#include <vector>

extern "C" {
#include "core/buf.h"
#include "core/err.h"
#include "core/stream.h"
#include "core/utf8.h"
#include "tokenize/spm_enc.h"
}

struct spm {
    sentencepiece::SentencePieceProcessor proc;
    std::string type;
    struct spm_enc *own = nullptr; /* sluice's encoder; null: the library encodes */
    ~spm() { spm_enc_free(own); }
};

/* Protocol buffers, just enough to read ModelProto.trainer_spec (2).model_type (3). */
static int varint(const unsigned char *&p, const unsigned char *e, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; p < e && shift < 64; shift += 7) {
        unsigned char c = *p++;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return 1;
    }
    return 0;
}

/* Calls f(field, wire type, value or length, payload) for each field; 0 on a bad message. */
template <class F> static int fields(const unsigned char *p, const unsigned char *e, F f)
{
    while (p < e) {
        uint64_t key, v;
        if (!varint(p, e, &key))
            return 0;
        int wt = (int)(key & 7);
        const unsigned char *payload = p;
        if (wt == 0) {
            if (!varint(p, e, &v))
                return 0;
        } else if (wt == 2) {
            if (!varint(p, e, &v) || v > (uint64_t)(e - p))
                return 0;
            payload = p;
            p += v;
        } else if (wt == 1 || wt == 5) {
            v = wt == 1 ? 8 : 4;
            if (v > (uint64_t)(e - p))
                return 0;
            p += v;
        } else {
            return 0;
        }
        f(key >> 3, wt, v, payload);
    }
    return 1;
}

static int model_type(const unsigned char *p, size_t n)
{
    int type = 1;
    fields(p, p + n, [&](uint64_t field, int wt, uint64_t v, const unsigned char *pl) {
        if (field == 2 && wt == 2)
            fields(pl, pl + v, [&](uint64_t f2, int wt2, uint64_t v2, const unsigned char *) {
                if (f2 == 3 && wt2 == 0)
                    type = (int)v2;
            });
    });
    return type;
}

extern "C" int spm_load_mem_engine(struct spm **out, const void *data, size_t n, const char *name,
                                   enum spm_engine engine)
{
    *out = nullptr;
    spm *s = new (std::nothrow) spm;
    if (!s)
        return sl_err_set(SL_ERR_NOMEM, "cannot load SentencePiece model '%s': out of memory", name);
    auto st = s->proc.LoadFromSerializedProto(
        absl::string_view(static_cast<const char *>(data), n));
    if (!st.ok() || s->proc.GetPieceSize() == 0) {
        std::string msg = st.ok() ? "no pieces" : st.ToString();
        delete s;
        return sl_err_set(SL_ERR_FORMAT,
                          "cannot load SentencePiece model '%s': not a SentencePiece model (%s)\n"
                          "hint: pass the .model file written by spm_train or 'sluice tokenizer train'",
                          name, msg.c_str());
    }
    switch (model_type(static_cast<const unsigned char *>(data), n)) {
    case 2: s->type = "bpe"; break;
    case 3: s->type = "word"; break;
    case 4: s->type = "char"; break;
    default: s->type = "unigram"; break;
    }
    if (engine == SPM_ENGINE_OWN) {
        /* word and char models (SL_ERR_UNSUPPORTED) stay with the library; a model the
         * library reads is not refused because of the own reader */
        if (spm_enc_load(&s->own, data, n, name) != 0)
            s->own = nullptr;
    }
    *out = s;
    return 0;
}

extern "C" int spm_load_mem(struct spm **out, const void *data, size_t n, const char *name)
{
    return spm_load_mem_engine(out, data, n, name, SPM_ENGINE_OWN);
}

extern "C" int spm_load(struct spm **out, const char *path)
{
    return spm_load_engine(out, path, SPM_ENGINE_OWN);
}

extern "C" int spm_load_engine(struct spm **out, const char *path, enum spm_engine engine)
{
    *out = nullptr;
    struct sl_buf b = SL_BUF_INIT;
    sl_buf_init(&b, 1u << 30);
    int rc = sl_read_file(path, &b);
    if (rc) {
        sl_buf_release(&b);
        return sl_err_wrap(rc, "cannot load SentencePiece model: ");
    }
    rc = spm_load_mem_engine(out, b.data ? b.data : "", b.len, path, engine);
    sl_buf_release(&b);
    return rc;
}

extern "C" int spm_tokenizer_json(const struct spm *s, struct sl_buf *out)
{
    if (s->own)
        return spm_enc_tokenizer_json(s->own, out);
    /* the library encodes (spm-lib:, word and char models): read its model again */
    std::string proto = s->proc.serialized_model_proto();
    struct spm_enc *m = nullptr;
    int rc = spm_enc_load(&m, proto.data(), proto.size(), "the tokenizer");
    if (rc == SL_ERR_UNSUPPORTED)
        return sl_err_set(SL_ERR_UNSUPPORTED,
                          "cannot write tokenizer.json for a SentencePiece %s model: only "
                          "unigram and BPE models have a tokenizers equivalent",
                          s->type.c_str());
    if (!rc)
        rc = spm_enc_tokenizer_json(m, out);
    spm_enc_free(m);
    return rc;
}

extern "C" void spm_free(struct spm *s)
{
    delete s;
}

extern "C" int spm_encode(const struct spm *s, const char *text, size_t n, struct tok_ids *out)
{
    if (s->own)
        return spm_enc_encode(s->own, text, n, out);
    thread_local std::vector<int> ids;
    /* the library's normalizer turns each invalid byte into U+FFFD (not normalized further),
     * as spm_encode does; only report it */
    int repaired = sl_utf8_validate(text, n) != n;
    absl::string_view in(text, n);
    ids.clear();
    auto st = s->proc.Encode(in, &ids);
    if (!st.ok())
        return sl_err_set(SL_ERR_FORMAT, "SentencePiece cannot encode the text: %s", st.ToString().c_str());
    int rc = tok_ids_reserve(out, ids.size());
    if (rc)
        return rc;
    for (int id : ids)
        out->v[out->n++] = (uint32_t)id;
    return repaired;
}

extern "C" int spm_decode(const struct spm *s, const uint32_t *ids, size_t n, struct sl_buf *out)
{
    std::vector<int> v(n);
    int size = s->proc.GetPieceSize();
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= (uint32_t)size)
            return sl_err_set(SL_ERR_FORMAT, "token id %u is not in the vocabulary (%d ids)", ids[i], size);
        v[i] = (int)ids[i];
    }
    std::string text;
    auto st = s->proc.Decode(v, &text);
    if (!st.ok())
        return sl_err_set(SL_ERR_FORMAT, "SentencePiece cannot decode: %s", st.ToString().c_str());
    return sl_buf_append(out, text.data(), text.size());
}

extern "C" uint32_t spm_vocab_size(const struct spm *s)
{
    return (uint32_t)s->proc.GetPieceSize();
}

extern "C" int64_t spm_piece_to_id(const struct spm *s, const char *piece)
{
    int id = s->proc.PieceToId(piece);
    if (id < 0 || s->proc.IdToPiece(id) != piece)
        return -1;
    return id;
}

extern "C" const char *spm_id_to_piece(const struct spm *s, uint32_t id)
{
    if (id >= (uint32_t)s->proc.GetPieceSize())
        return nullptr;
    return s->proc.IdToPiece((int)id).c_str();
}

extern "C" int64_t spm_bos_id(const struct spm *s)
{
    return s->proc.bos_id();
}

extern "C" int64_t spm_eos_id(const struct spm *s)
{
    return s->proc.eos_id();
}

extern "C" int64_t spm_pad_id(const struct spm *s)
{
    return s->proc.pad_id();
}

extern "C" int64_t spm_unk_id(const struct spm *s)
{
    return s->proc.unk_id();
}

extern "C" const char *spm_model_type(const struct spm *s)
{
    return s->type.c_str();
}

extern "C" const char *spm_engine_name(const struct spm *s)
{
    return s->own ? "sluice" : "library";
}
