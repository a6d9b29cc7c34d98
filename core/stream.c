/* Decompressing readers (plain/gzip/zstd/bzip2, detected by magic) and compressing writers
 * over byte sources and sinks. */
#include "core/stream.h"

#include "core/alloc.h"
#include "core/atomic.h"
#include "core/buf.h"
#include "core/err.h"

#include <bzlib.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define IN_CHUNK (128 * 1024)
#define OUT_CHUNK (256 * 1024)
/* zstd output is held until its frame ends (and its checksum is checked) up to this
 * much: a damaged frame's bytes are then never handed out */
#define HOLD_MAX (16u << 20)

const char *sl_codec_name(enum sl_codec c)
{
    switch (c) {
    case SL_CODEC_AUTO: return "auto";
    case SL_CODEC_NONE: return "plain";
    case SL_CODEC_GZIP: return "gzip";
    case SL_CODEC_ZSTD: return "zstd";
    case SL_CODEC_BZIP2: return "bzip2";
    }
    return "?";
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

enum sl_codec sl_codec_from_name(const char *path)
{
    if (ends_with(path, ".gz") || ends_with(path, ".gzip"))
        return SL_CODEC_GZIP;
    if (ends_with(path, ".zst") || ends_with(path, ".zstd"))
        return SL_CODEC_ZSTD;
    if (ends_with(path, ".bz2"))
        return SL_CODEC_BZIP2;
    return SL_CODEC_NONE;
}

enum sl_codec sl_codec_detect(const unsigned char *p, size_t n, const char **unsupported)
{
    if (unsupported)
        *unsupported = NULL;
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
        return SL_CODEC_GZIP;
    if (n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd)
        return SL_CODEC_ZSTD;
    /* zstd skippable frame: 0x184D2A5? little endian */
    if (n >= 4 && (p[0] & 0xf0) == 0x50 && p[1] == 0x2a && p[2] == 0x4d && p[3] == 0x18)
        return SL_CODEC_ZSTD;
    if (n >= 4 && p[0] == 'B' && p[1] == 'Z' && p[2] == 'h' && p[3] >= '1' && p[3] <= '9')
        return SL_CODEC_BZIP2;
    if (unsupported) {
        if (n >= 6 && memcmp(p, "\xfd" "7zXZ\0", 6) == 0)
            *unsupported = "xz";
        else if (n >= 4 && memcmp(p, "\x04\x22\x4d\x18", 4) == 0)
            *unsupported = "lz4";
    }
    return SL_CODEC_NONE;
}

/* ---- sources ---------------------------------------------------------------------- */

struct fd_source {
    struct sl_source base;
    int fd;
    int own;
};

static ssize_t fd_read(struct sl_source *src, void *buf, size_t n)
{
    struct fd_source *s = (struct fd_source *)src;
    for (;;) {
        ssize_t r = read(s->fd, buf, n);
        if (r >= 0)
            return r;
        if (errno == EINTR)
            continue;
        return sl_err_set(SL_ERR_IO, "cannot read '%s': %s", src->name, strerror(errno));
    }
}

static void fd_close(struct sl_source *src)
{
    struct fd_source *s = (struct fd_source *)src;
    if (s->own)
        close(s->fd);
    free(src->name);
    free(s);
}

struct sl_source *sl_source_fd(int fd, int own, const char *name)
{
    struct fd_source *s = sl_xcalloc(1, sizeof(*s));
    s->base.read = fd_read;
    s->base.close = fd_close;
    s->base.name = sl_xstrdup(name ? name : "(fd)");
    s->fd = fd;
    s->own = own;
    return &s->base;
}

int sl_source_file(struct sl_source **out, const char *path)
{
    *out = NULL;
    if (strcmp(path, "-") == 0) {
        *out = sl_source_fd(0, 0, "(stdin)");
        return 0;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_err_set(SL_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
#ifdef POSIX_FADV_SEQUENTIAL
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    *out = sl_source_fd(fd, 1, path);
    return 0;
}

struct mem_source {
    struct sl_source base;
    const unsigned char *data;
    size_t len, pos;
};

static ssize_t mem_read(struct sl_source *src, void *buf, size_t n)
{
    struct mem_source *s = (struct mem_source *)src;
    size_t left = s->len - s->pos;
    if (n > left)
        n = left;
    if (n)
        memcpy(buf, s->data + s->pos, n);
    s->pos += n;
    return (ssize_t)n;
}

static void mem_close(struct sl_source *src)
{
    free(src->name);
    free(src);
}

struct sl_source *sl_source_mem(const void *data, size_t n, const char *name)
{
    struct mem_source *s = sl_xcalloc(1, sizeof(*s));
    s->base.read = mem_read;
    s->base.close = mem_close;
    s->base.name = sl_xstrdup(name ? name : "(memory)");
    s->data = data;
    s->len = n;
    return &s->base;
}

void sl_source_close(struct sl_source *src)
{
    if (src)
        src->close(src);
}

/* ---- readers ---------------------------------------------------------------------- */

struct sl_reader {
    struct sl_source *src;
    enum sl_codec codec;
    uint64_t max_output;

    unsigned char *in;     /* compressed input window */
    size_t in_pos, in_len; /* unread input is in[in_pos..in_len) */
    int src_eof;
    uint64_t in_consumed; /* bytes of input handed to the decoder (or consumed plain) */

    unsigned char *out; /* decompressed window */
    size_t out_pos, out_len;
    uint64_t out_total;     /* bytes produced by the decoder */
    uint64_t out_delivered; /* bytes handed to the caller */

    int finished; /* decoder reached the end of its data */
    int error;    /* sticky fatal error code */
    char *error_msg;

    /* codec state */
    z_stream gz;
    int gz_init;
    int gz_member_done; /* at a member boundary: more input must start a new member */
    ZSTD_DStream *zd;
    size_t zstd_last; /* last ZSTD_decompressStream hint; 0 at a frame boundary */
    int frame_done;   /* the last decode_some ended a zstd frame */
    int cut;          /* the data ended inside a frame (what came before it is sound) */
    size_t err_out;   /* bytes the failing zstd call had decoded (at out + held) */
    size_t out_cap;   /* size of out (zstd: grows up to HOLD_MAX + OUT_CHUNK) */
    uint64_t dropped_bytes, dropped_lines; /* of a damaged frame, held back and dropped */
    bz_stream bz;
    int bz_init;
    int bz_stream_done;

    /* getline */
    struct sl_buf line;
    uint64_t line_no;
};

static int reader_fail(struct sl_reader *r, int code)
{
    r->error = code;
    free(r->error_msg);
    r->error_msg = sl_xstrdup(sl_err_msg());
    return code;
}

static int sticky_error(struct sl_reader *r)
{
    sl_err_set(r->error, "%s", r->error_msg ? r->error_msg : "stream failed earlier");
    return r->error;
}

/* Refill the input window; returns bytes now available, 0 at source end, or <0. */
static ssize_t fill_input(struct sl_reader *r)
{
    if (r->in_pos < r->in_len)
        return (ssize_t)(r->in_len - r->in_pos);
    if (r->src_eof)
        return 0;
    ssize_t n = r->src->read(r->src, r->in, IN_CHUNK);
    if (n < 0)
        return n;
    r->in_pos = 0;
    r->in_len = (size_t)n;
    if (n == 0)
        r->src_eof = 1;
    return n;
}

static int corrupt(struct sl_reader *r, const char *what)
{
    return sl_err_set(SL_ERR_CORRUPT, "corrupt %s stream '%s' at compressed byte %llu: %s",
                      sl_codec_name(r->codec), r->src->name, (unsigned long long)r->in_consumed,
                      what);
}

static int truncated(struct sl_reader *r)
{
    r->cut = 1;
    return sl_err_set(SL_ERR_CORRUPT,
                      "truncated %s stream '%s': data ends at compressed byte %llu in the "
                      "middle of a %s",
                      sl_codec_name(r->codec), r->src->name, (unsigned long long)r->in_consumed,
                      r->codec == SL_CODEC_GZIP    ? "gzip member"
                      : r->codec == SL_CODEC_ZSTD  ? "zstd frame"
                                                   : "bzip2 stream");
}

/* True if the rest of the input (window and source) is all zero bytes (padding). */
static int rest_is_zero_padding(struct sl_reader *r, int *err)
{
    *err = 0;
    for (;;) {
        while (r->in_pos < r->in_len) {
            if (r->in[r->in_pos] != 0)
                return 0;
            r->in_pos++;
            r->in_consumed++;
        }
        ssize_t n = fill_input(r);
        if (n < 0) {
            *err = (int)n;
            return 0;
        }
        if (n == 0)
            return 1;
    }
}

/* At the end of a gzip member or bzip2 stream, with avail bytes of input left: 1 when
 * another one follows (its first byte is not 0), 0 at the end of the data or when only zero
 * bytes (padding) are left, <0 for other bytes (`garbage`). */
static int another_member(struct sl_reader *r, ssize_t avail, const char *garbage)
{
    if (avail == 0)
        return 0;
    if (r->in[r->in_pos] != 0)
        return 1;
    int err;
    if (rest_is_zero_padding(r, &err))
        return 0;
    return err ? err : corrupt(r, garbage);
}

/* Decode into dst (room bytes). Returns bytes produced (0 at the true end, or at the end
 * of a zstd frame: frame_done is set) or <0. */
static ssize_t decode_some(struct sl_reader *r, unsigned char *dst, size_t room)
{

    for (;;) {
        ssize_t avail = fill_input(r);
        if (avail < 0)
            return avail;

        if (r->codec == SL_CODEC_NONE) {
            if (avail == 0)
                return 0;
            size_t n = (size_t)avail < room ? (size_t)avail : room;
            memcpy(dst, r->in + r->in_pos, n);
            r->in_pos += n;
            r->in_consumed += n;
            return (ssize_t)n;
        }

        if (r->codec == SL_CODEC_GZIP) {
            if (r->gz_member_done) {
                int more = another_member(r, avail, "trailing garbage after the last gzip member");
                if (more <= 0)
                    return more;
                if (inflateReset(&r->gz) != Z_OK)
                    return corrupt(r, "cannot reset inflater");
                r->gz_member_done = 0;
            }
            r->gz.next_in = r->in + r->in_pos;
            r->gz.avail_in = (uInt)avail;
            r->gz.next_out = dst;
            r->gz.avail_out = (uInt)room;
            int zr = inflate(&r->gz, Z_NO_FLUSH);
            size_t used = (size_t)avail - r->gz.avail_in;
            size_t made = room - r->gz.avail_out;
            r->in_pos += used;
            r->in_consumed += used;
            if (zr == Z_STREAM_END)
                r->gz_member_done = 1;
            else if (avail == 0 && made == 0)
                return truncated(r); /* no input left and nothing pending */
            else if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT)
                return corrupt(r, r->gz.msg ? r->gz.msg : "invalid deflate data");
            else if (zr == Z_MEM_ERROR)
                return sl_err_set(SL_ERR_NOMEM, "out of memory inflating '%s'", r->src->name);
            else if (zr != Z_OK && zr != Z_BUF_ERROR)
                return corrupt(r, "inflate failed");
            if (made)
                return (ssize_t)made;
            continue;
        }

        if (r->codec == SL_CODEC_ZSTD) {
            if (avail == 0 && r->zstd_last == 0)
                return 0;
            ZSTD_inBuffer in = { r->in + r->in_pos, (size_t)avail, 0 };
            ZSTD_outBuffer out = { dst, room, 0 };
            size_t zr = ZSTD_decompressStream(r->zd, &out, &in);
            r->in_pos += in.pos;
            r->in_consumed += in.pos;
            if (ZSTD_isError(zr)) {
                r->err_out = out.pos; /* decoded by this call, then refused */
                return corrupt(r, ZSTD_getErrorName(zr));
            }
            r->zstd_last = zr;
            if (zr == 0)
                r->frame_done = 1;
            if (out.pos || zr == 0)
                return (ssize_t)out.pos;
            if (avail == 0)
                return truncated(r);
            continue;
        }

        /* bzip2 */
        if (r->bz_stream_done) {
            int more = another_member(r, avail, "trailing garbage after the last bzip2 stream");
            if (more <= 0)
                return more;
            BZ2_bzDecompressEnd(&r->bz);
            memset(&r->bz, 0, sizeof(r->bz));
            if (BZ2_bzDecompressInit(&r->bz, 0, 0) != BZ_OK)
                return sl_err_set(SL_ERR_NOMEM, "cannot start bzip2 decoder");
            r->bz_stream_done = 0;
        }
        r->bz.next_in = (char *)r->in + r->in_pos;
        r->bz.avail_in = (unsigned)avail;
        r->bz.next_out = (char *)dst;
        r->bz.avail_out = (unsigned)room;
        int br = BZ2_bzDecompress(&r->bz);
        size_t used = (size_t)avail - r->bz.avail_in;
        size_t made = room - r->bz.avail_out;
        r->in_pos += used;
        r->in_consumed += used;
        if (br == BZ_STREAM_END)
            r->bz_stream_done = 1;
        else if (avail == 0 && made == 0)
            return truncated(r);
        else if (br != BZ_OK)
            return corrupt(r, br == BZ_DATA_ERROR_MAGIC ? "bad bzip2 magic" : "invalid bzip2 data");
        if (made)
            return (ssize_t)made;
    }
}

/* zstd: decode a whole frame (up to HOLD_MAX) before handing any of it out, so the bytes
 * of a frame whose checksum or data is damaged are dropped, not delivered; they are
 * counted (dropped_bytes, dropped_lines). A frame cut by the end of the data hands over
 * what it gave (the error comes next). Returns bytes held, 0 at the end, or <0. */
static ssize_t decode_frame(struct sl_reader *r)
{
    size_t held = 0;
    for (;;) {
        if (r->out_cap < held + OUT_CHUNK) {
            /* a frame larger than a chunk: room for the largest hold at once, in memory that
             * may use huge pages; only the part written is ever faulted in (and zeroed by
             * the kernel), once, where growing step by step would fault in every step */
            size_t cap = HOLD_MAX + OUT_CHUNK;
            unsigned char *grown = sl_xmalloc_table(cap);
            memcpy(grown, r->out, held);
            free(r->out);
            r->out = grown;
            r->out_cap = cap;
        }
        r->frame_done = 0;
        ssize_t n = decode_some(r, r->out + held, OUT_CHUNK);
        if (n < 0 && r->cut && held)
            return (ssize_t)held; /* cut, not damaged: hand over what came; the next call fails */
        if (n < 0) {
            held += r->err_out; /* decoded, then refused: dropped and counted too */
            r->err_out = 0;
            if (held) {
                uint64_t lines = 0;
                for (const unsigned char *p = r->out; (p = memchr(p, '\n', (size_t)(r->out + held - p)));
                     p++)
                    lines++;
                r->dropped_bytes += held;
                r->dropped_lines += lines + (r->out[held - 1] != '\n');
            }
            return n;
        }
        held += (size_t)n;
        if (r->frame_done) {
            if (held)
                return (ssize_t)held;
            continue; /* an empty or skippable frame */
        }
        if (n == 0 || held >= HOLD_MAX)
            return (ssize_t)held;
    }
}

/* Make decompressed bytes available in out[out_pos..out_len). Returns available count,
 * 0 at end, <0 on error (sticky). */
static ssize_t fill_output(struct sl_reader *r)
{
    if (r->out_pos < r->out_len)
        return (ssize_t)(r->out_len - r->out_pos);
    if (r->error)
        return sticky_error(r);
    if (r->finished)
        return 0;
    ssize_t n = r->codec == SL_CODEC_ZSTD ? decode_frame(r) : decode_some(r, r->out, OUT_CHUNK);
    if (n < 0)
        return reader_fail(r, (int)n);
    if (n == 0) {
        r->finished = 1;
        return 0;
    }
    r->out_pos = 0;
    r->out_len = (size_t)n;
    r->out_total += (uint64_t)n;
    if (r->max_output && r->out_total > r->max_output) {
        sl_err_set(SL_ERR_TOOBIG,
                   "'%s' decompresses to more than %llu bytes (cap); is it a compression bomb?",
                   r->src->name, (unsigned long long)r->max_output);
        return reader_fail(r, SL_ERR_TOOBIG);
    }
    return n;
}

int sl_reader_open_source(struct sl_reader **out, struct sl_source *src,
                          const struct sl_reader_opts *opts)
{
    struct sl_reader *r = sl_xcalloc(1, sizeof(*r));
    r->src = src;
    r->in = sl_xmalloc(IN_CHUNK);
    r->out = sl_xmalloc(OUT_CHUNK);
    r->out_cap = OUT_CHUNK;
    r->codec = opts ? opts->codec : SL_CODEC_AUTO;
    r->max_output = opts ? opts->max_output : 0;
    sl_buf_init(&r->line, 0);
    *out = NULL;

    int rc = 0;
    if (r->codec == SL_CODEC_AUTO) {
        /* Peek enough bytes to recognise a magic number. */
        while (r->in_len < 6 && !r->src_eof) {
            ssize_t n = src->read(src, r->in + r->in_len, IN_CHUNK - r->in_len);
            if (n < 0) {
                rc = (int)n;
                goto out;
            }
            if (n == 0)
                r->src_eof = 1;
            r->in_len += (size_t)n;
        }
        const char *unsupported;
        r->codec = sl_codec_detect(r->in, r->in_len, &unsupported);
        if (unsupported) {
            rc = sl_err_set(SL_ERR_UNSUPPORTED,
                            "cannot read '%s': %s compression is not supported\n"
                            "hint: recompress with zstd, gzip or bzip2",
                            src->name, unsupported);
            goto out;
        }
        /* fill_input must not refill while peeked bytes are unread. */
        if (r->in_len == 0)
            r->src_eof = 1;
    }

    switch (r->codec) {
    case SL_CODEC_GZIP:
        if (inflateInit2(&r->gz, 16 + MAX_WBITS) != Z_OK) {
            rc = sl_err_set(SL_ERR_NOMEM, "cannot start gzip decoder");
            goto out;
        }
        r->gz_init = 1;
        break;
    case SL_CODEC_ZSTD:
        r->zd = ZSTD_createDStream();
        if (!r->zd || ZSTD_isError(ZSTD_initDStream(r->zd))) {
            rc = sl_err_set(SL_ERR_NOMEM, "cannot start zstd decoder");
            goto out;
        }
        /* Allow large windows (long-distance matching, --long=31), unless an output cap is
         * set: then no window above the cap (and zstd's default limit, 2^27). The header
         * of a 6-byte frame can ask for a 2 GiB window (found by fuzz_stream). */
        {
            int wlog = 31;
            if (r->max_output)
                for (wlog = 27; wlog < 31 && ((uint64_t)1 << wlog) < r->max_output; wlog++)
                    ;
            ZSTD_DCtx_setParameter(r->zd, ZSTD_d_windowLogMax, wlog);
        }
        break;
    case SL_CODEC_BZIP2:
        if (BZ2_bzDecompressInit(&r->bz, 0, 0) != BZ_OK) {
            rc = sl_err_set(SL_ERR_NOMEM, "cannot start bzip2 decoder");
            goto out;
        }
        r->bz_init = 1;
        break;
    default:
        r->codec = SL_CODEC_NONE;
        break;
    }
out:
    if (rc) {
        r->src = src; /* closed below */
        sl_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

int sl_reader_open(struct sl_reader **out, const char *path, const struct sl_reader_opts *opts)
{
    struct sl_source *src;
    *out = NULL;
    int rc = sl_source_file(&src, path);
    if (rc)
        return rc;
    return sl_reader_open_source(out, src, opts);
}

void sl_reader_close(struct sl_reader *r)
{
    if (!r)
        return;
    if (r->gz_init)
        inflateEnd(&r->gz);
    if (r->zd)
        ZSTD_freeDStream(r->zd);
    if (r->bz_init)
        BZ2_bzDecompressEnd(&r->bz);
    sl_source_close(r->src);
    free(r->in);
    free(r->out);
    free(r->error_msg);
    sl_buf_release(&r->line);
    free(r);
}

uint64_t sl_reader_dropped_lines(const struct sl_reader *r)
{
    return r ? r->dropped_lines : 0;
}

uint64_t sl_reader_dropped_bytes(const struct sl_reader *r)
{
    return r ? r->dropped_bytes : 0;
}

ssize_t sl_reader_read(struct sl_reader *r, void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t avail = fill_output(r);
        if (avail < 0 && done)
            break; /* hand over what was read; the error is sticky, the next call returns it */
        if (avail < 0)
            return avail;
        if (avail == 0)
            break;
        size_t take = (size_t)avail < n - done ? (size_t)avail : n - done;
        memcpy((char *)buf + done, r->out + r->out_pos, take);
        r->out_pos += take;
        done += take;
    }
    r->out_delivered += done;
    return (ssize_t)done;
}

int sl_reader_getline(struct sl_reader *r, const char **line, size_t *len, size_t max_len)
{
    int too_long = 0;
    sl_buf_reset(&r->line);
    for (;;) {
        ssize_t avail = fill_output(r);
        /* SL_ERR_TOOBIG from here means "this line was skipped, go on": a fatal cap (the
         * output cap of a compression bomb) must not look like it, or callers loop */
        if (avail == SL_ERR_TOOBIG)
            return SL_ERR_CORRUPT;
        if (avail < 0)
            return (int)avail;
        if (avail == 0) {
            if (r->line.len == 0 && !too_long)
                return 0;
            break; /* last line without a newline */
        }
        const unsigned char *start = r->out + r->out_pos;
        const unsigned char *nl = memchr(start, '\n', (size_t)avail);
        size_t take = nl ? (size_t)(nl - start) : (size_t)avail;
        size_t consumed = nl ? take + 1 : take;

        if (nl && r->line.len == 0 && !too_long && take <= max_len) {
            /* Fast path: the whole line is in the window. */
            r->out_pos += consumed;
            r->out_delivered += consumed;
            r->line_no++;
            *line = (const char *)start;
            *len = take;
            return 1;
        }
        if (!too_long) {
            if (r->line.len + take > max_len) {
                too_long = 1;
                sl_buf_reset(&r->line);
            } else {
                int rc = sl_buf_append(&r->line, start, take);
                if (rc)
                    return rc;
            }
        }
        r->out_pos += consumed;
        r->out_delivered += consumed;
        if (nl)
            break;
    }
    r->line_no++;
    if (too_long) {
        sl_buf_reset(&r->line);
        return sl_err_set(SL_ERR_TOOBIG, "%s:%llu: line longer than %zu bytes (cap), skipped",
                          r->src->name, (unsigned long long)r->line_no, max_len);
    }
    *line = r->line.data ? r->line.data : "";
    *len = r->line.len;
    return 1;
}

uint64_t sl_reader_line_no(const struct sl_reader *r)
{
    return r->line_no;
}

uint64_t sl_reader_out_offset(const struct sl_reader *r)
{
    return r->out_delivered;
}

uint64_t sl_reader_in_offset(const struct sl_reader *r)
{
    return r->in_consumed;
}

enum sl_codec sl_reader_codec(const struct sl_reader *r)
{
    return r->codec;
}

const char *sl_reader_name(const struct sl_reader *r)
{
    return r->src->name;
}

int sl_reader_read_all(struct sl_reader *r, struct sl_buf *b)
{
    for (;;) {
        ssize_t avail = fill_output(r);
        if (avail < 0)
            return (int)avail;
        if (avail == 0)
            return 0;
        int rc = sl_buf_append(b, r->out + r->out_pos, (size_t)avail);
        if (rc)
            return sl_err_set(rc, "'%s' is larger than %zu bytes (cap)", r->src->name, b->max);
        r->out_pos += (size_t)avail;
        r->out_delivered += (size_t)avail;
    }
}

int sl_read_file(const char *path, struct sl_buf *b)
{
    struct sl_reader *r;
    int rc = sl_reader_open(&r, path, NULL);
    if (rc)
        return rc;
    rc = sl_reader_read_all(r, b);
    sl_reader_close(r);
    return rc;
}

/* ---- writers ---------------------------------------------------------------------- */

#define WRITE_BATCH (256 * 1024)

struct sl_writer {
    enum sl_codec codec;
    unsigned char *ibuf; /* small writes are gathered here before compression */
    size_t ilen;
    struct sl_atomic_file file; /* when writing a file */
    int is_file;
    struct sl_buf *dst; /* when writing a buffer */
    unsigned char *obuf;
    uint64_t bytes_in, bytes_out;
    z_stream gz;
    int gz_init;
    ZSTD_CStream *zc;
    bz_stream bz;
    int bz_init;
    struct sl_writer_format fmt; /* documents into another format (fmt.line set) */
    struct sl_buf line;          /* its partial line */
};

static int sink_write(struct sl_writer *w, const void *data, size_t n)
{
    if (!n)
        return 0;
    w->bytes_out += n;
    if (w->is_file)
        return sl_atomic_write(&w->file, data, n);
    return sl_buf_append(w->dst, data, n);
}

static int writer_setup(struct sl_writer *w, enum sl_codec codec, int level)
{
    w->codec = codec;
    w->obuf = sl_xmalloc(OUT_CHUNK);
    switch (codec) {
    case SL_CODEC_GZIP:
        if (deflateInit2(&w->gz, level ? level : 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
                         Z_DEFAULT_STRATEGY) != Z_OK)
            return sl_err_set(SL_ERR_NOMEM, "cannot start gzip encoder");
        w->gz_init = 1;
        break;
    case SL_CODEC_ZSTD:
        w->zc = ZSTD_createCStream();
        if (!w->zc)
            return sl_err_set(SL_ERR_NOMEM, "cannot start zstd encoder");
        ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, level ? level : 3);
        ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1);
        break;
    case SL_CODEC_BZIP2:
        if (BZ2_bzCompressInit(&w->bz, level ? level : 9, 0, 0) != BZ_OK)
            return sl_err_set(SL_ERR_NOMEM, "cannot start bzip2 encoder");
        w->bz_init = 1;
        break;
    default:
        w->codec = SL_CODEC_NONE;
        break;
    }
    return 0;
}

static void writer_free(struct sl_writer *w)
{
    if (w->fmt.release)
        w->fmt.release(w->fmt.state);
    sl_buf_release(&w->line);
    free(w->ibuf);
    if (w->gz_init)
        deflateEnd(&w->gz);
    if (w->zc)
        ZSTD_freeCStream(w->zc);
    if (w->bz_init)
        BZ2_bzCompressEnd(&w->bz);
    free(w->obuf);
    free(w);
}

int sl_writer_open(struct sl_writer **out, const char *path, const struct sl_writer_opts *opts)
{
    *out = NULL;
    enum sl_codec codec = opts ? opts->codec : SL_CODEC_AUTO;
    if (codec == SL_CODEC_AUTO)
        codec = sl_codec_from_name(path);
    struct sl_writer *w = sl_xcalloc(1, sizeof(*w));
    int rc = writer_setup(w, codec, opts ? opts->level : 0);
    if (!rc)
        rc = sl_atomic_open(&w->file, path);
    if (rc) {
        writer_free(w);
        return rc;
    }
    w->file.no_sync = opts ? opts->no_sync : 0;
    w->is_file = 1;
    *out = w;
    return 0;
}

int sl_writer_open_buf(struct sl_writer **out, struct sl_buf *dst, const struct sl_writer_opts *opts)
{
    *out = NULL;
    struct sl_writer *w = sl_xcalloc(1, sizeof(*w));
    enum sl_codec codec = opts ? opts->codec : SL_CODEC_NONE;
    int rc = writer_setup(w, codec == SL_CODEC_AUTO ? SL_CODEC_NONE : codec, opts ? opts->level : 0);
    if (rc) {
        writer_free(w);
        return rc;
    }
    w->dst = dst;
    *out = w;
    return 0;
}

int sl_writer_open_format(struct sl_writer **out, const char *path, struct sl_buf *dst,
                          const struct sl_writer_opts *opts, const struct sl_writer_format *fmt)
{
    int rc = path ? sl_writer_open(out, path, opts) : sl_writer_open_buf(out, dst, opts);
    if (rc) {
        if (fmt->release)
            fmt->release(fmt->state);
        return rc;
    }
    (*out)->fmt = *fmt;
    sl_buf_init(&(*out)->line, 0);
    return 0;
}

/* Push n bytes through the encoder; `finish` ends the stream. */
static int encode(struct sl_writer *w, const void *data, size_t n, int finish)
{
    int rc = 0;
    if (w->codec == SL_CODEC_NONE)
        return sink_write(w, data, n);
    if (w->codec == SL_CODEC_ZSTD) {
        ZSTD_inBuffer in = { data, n, 0 };
        for (;;) {
            ZSTD_outBuffer out = { w->obuf, OUT_CHUNK, 0 };
            size_t zr = ZSTD_compressStream2(w->zc, &out, &in, finish ? ZSTD_e_end : ZSTD_e_continue);
            if (ZSTD_isError(zr))
                return sl_err_set(SL_ERR_IO, "zstd compression failed: %s", ZSTD_getErrorName(zr));
            if ((rc = sink_write(w, w->obuf, out.pos)))
                return rc;
            if (finish ? zr == 0 : in.pos == in.size)
                return 0;
        }
    }
    if (w->codec == SL_CODEC_GZIP) {
        w->gz.next_in = (Bytef *)data;
        w->gz.avail_in = (uInt)n;
        for (;;) {
            w->gz.next_out = w->obuf;
            w->gz.avail_out = OUT_CHUNK;
            int zr = deflate(&w->gz, finish ? Z_FINISH : Z_NO_FLUSH);
            if (zr == Z_STREAM_ERROR)
                return sl_err_set(SL_ERR_IO, "gzip compression failed");
            if ((rc = sink_write(w, w->obuf, OUT_CHUNK - w->gz.avail_out)))
                return rc;
            if (finish ? zr == Z_STREAM_END : w->gz.avail_in == 0)
                return 0;
        }
    }
    /* bzip2 */
    w->bz.next_in = (char *)data;
    w->bz.avail_in = (unsigned)n;
    for (;;) {
        w->bz.next_out = (char *)w->obuf;
        w->bz.avail_out = OUT_CHUNK;
        int br = BZ2_bzCompress(&w->bz, finish ? BZ_FINISH : BZ_RUN);
        if (br < 0)
            return sl_err_set(SL_ERR_IO, "bzip2 compression failed (%d)", br);
        if ((rc = sink_write(w, w->obuf, OUT_CHUNK - w->bz.avail_out)))
            return rc;
        if (finish ? br == BZ_STREAM_END : w->bz.avail_in == 0)
            return 0;
    }
}

static int encode(struct sl_writer *w, const void *data, size_t n, int finish);

static int flush_batch(struct sl_writer *w)
{
    if (!w->ilen)
        return 0;
    int rc = encode(w, w->ibuf, w->ilen, 0);
    w->ilen = 0;
    return rc;
}

/* A format writer's input: whole lines to fmt.line, the rest kept for the next write. */
static int format_write(struct sl_writer *w, const char *p, size_t n)
{
    int rc = 0;
    while (!rc && n) {
        const char *nl = memchr(p, '\n', n);
        size_t k = nl ? (size_t)(nl - p) : n;
        if (!nl)
            return sl_buf_append(&w->line, p, k);
        if (w->line.len) {
            rc = sl_buf_append(&w->line, p, k);
            if (!rc)
                rc = w->fmt.line(w->fmt.state, w, w->line.data, w->line.len);
            sl_buf_reset(&w->line);
        } else {
            rc = w->fmt.line(w->fmt.state, w, p, k);
        }
        p += k + 1;
        n -= k + 1;
    }
    return rc;
}

int sl_writer_write(struct sl_writer *w, const void *data, size_t n)
{
    if (!n) /* nothing to write; data may be NULL (an empty sequence's rows) */
        return 0;
    w->bytes_in += n;
    if (w->fmt.line)
        return format_write(w, data, n);
    {
        /* gather small writes: one encoder call (or write) per batch, not per document */
        if (w->ilen + n <= WRITE_BATCH) {
            if (!w->ibuf)
                w->ibuf = sl_xmalloc(WRITE_BATCH);
            memcpy(w->ibuf + w->ilen, data, n);
            w->ilen += n;
            return 0;
        }
        int rc = flush_batch(w);
        if (rc)
            return rc;
        if (n <= WRITE_BATCH / 2) {
            if (!w->ibuf)
                w->ibuf = sl_xmalloc(WRITE_BATCH);
            memcpy(w->ibuf, data, n);
            w->ilen = n;
            return 0;
        }
    }
    const char *p = data;
    /* zlib and bzip2 take 32-bit lengths. */
    while (n > (1u << 30)) {
        int rc = encode(w, p, 1u << 30, 0);
        if (rc)
            return rc;
        p += 1u << 30;
        n -= 1u << 30;
    }
    return encode(w, p, n, 0);
}

int sl_writer_copy_fd(struct sl_writer *w, int fd, uint64_t off, uint64_t n, const char *name)
{
    int rc = 0;
    if (w->codec == SL_CODEC_NONE && w->is_file && !w->fmt.line && (rc = flush_batch(w)) == 0) {
        while (n) {
            loff_t in = (loff_t)off;
            size_t want = n > ((size_t)1 << 30) ? (size_t)1 << 30 : (size_t)n;
            ssize_t got = copy_file_range(fd, &in, w->file.fd, NULL, want, 0);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                if (got == 0)
                    return sl_err_set(SL_ERR_CORRUPT, "cannot read '%s': shorter than expected", name);
                if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
                    return sl_err_set(SL_ERR_IO, "cannot copy '%s' into '%s': %s", name, w->file.path,
                                      strerror(errno));
                break; /* not for these files: the plain copy below */
            }
            w->bytes_in += (uint64_t)got;
            w->bytes_out += (uint64_t)got;
            off += (uint64_t)got;
            n -= (uint64_t)got;
        }
    }
    if (rc || !n)
        return rc;
    size_t chunk = (size_t)1 << 20;
    char *buf = sl_xmalloc(chunk);
    while (!rc && n) {
        size_t want = n < chunk ? (size_t)n : chunk;
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            rc = sl_err_set(got < 0 ? SL_ERR_IO : SL_ERR_CORRUPT, "cannot read '%s': %s", name,
                            got < 0 ? strerror(errno) : "shorter than expected");
        else
            rc = sl_writer_write(w, buf, (size_t)got);
        off += got > 0 ? (uint64_t)got : 0;
        n -= got > 0 ? (uint64_t)got : 0;
    }
    free(buf);
    return rc;
}

int sl_writer_emit(struct sl_writer *w, const void *data, size_t n)
{
    if (!n)
        return 0;
    int rc = flush_batch(w);
    return rc ? rc : encode(w, data, n, 0);
}

uint64_t sl_writer_bytes_in(const struct sl_writer *w)
{
    return w->bytes_in;
}

uint64_t sl_writer_bytes_out(const struct sl_writer *w)
{
    return w->bytes_out;
}

int sl_writer_commit(struct sl_writer *w)
{
    int rc = 0;
    if (w->fmt.line && w->line.len)
        rc = w->fmt.line(w->fmt.state, w, w->line.data, w->line.len);
    if (!rc && w->fmt.finish)
        rc = w->fmt.finish(w->fmt.state, w);
    if (!rc)
        rc = flush_batch(w);
    if (!rc)
        rc = encode(w, "", 0, 1);
    if (w->is_file) {
        if (rc)
            sl_atomic_abort(&w->file);
        else
            rc = sl_atomic_commit(&w->file);
    }
    writer_free(w);
    return rc;
}

void sl_writer_abort(struct sl_writer *w)
{
    if (!w)
        return;
    if (w->is_file)
        sl_atomic_abort(&w->file);
    writer_free(w);
}
