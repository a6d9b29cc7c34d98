/* What core/remote.c and core/remote_s3.c share: the target of a request (its HTTP URL and
 * how it is authorised) and one request with its retries. Not for other files. */
#ifndef SL_REMOTE_INTERNAL_H
#define SL_REMOTE_INTERNAL_H

#include "core/buf.h"
#include "core/http.h"
#include "core/remote.h"

#include <stdint.h>

enum rm_kind { RM_HTTP, RM_S3, RM_HF };

/* Where a URL's bytes are fetched from. */
struct rm_target {
    enum rm_kind kind;
    char *url;    /* as given */
    char *shown;  /* its display form */
    char *http;   /* the http(s) URL fetched */
    char *bucket; /* S3: for messages */
};

/* What a response said (the final one, after redirects). */
struct rm_resp {
    long status;
    int64_t length;       /* Content-Length, -1 absent */
    int64_t range_first;  /* Content-Range's first byte, -1 absent */
    char etag[128];       /* "" absent */
    char link_next[2048]; /* a Link header's rel="next" URL, "" absent */
    char meta_xxh3[24];   /* S3: x-amz-meta-xxh3, what sluice stores with its outputs */
    struct sl_buf body;   /* a body read into memory (listings, error pages) */
};

/* Resolve url into t (S3 and hf URLs into their http(s) URLs). 0 or SL_ERR_USAGE. */
int rm_target_init(struct rm_target *t, const char *url);
void rm_target_release(struct rm_target *t);

/* One request for t (url: t->http, or another URL of the same service: a listing), with
 * the retries of core/remote.h. method "GET" or "HEAD". With dst, a GET of exactly len
 * bytes at off into dst (a Range request; a body cut short is resumed); else the body
 * goes into resp->body (at most `cap` bytes). Returns 0 on a 2xx answer; else <0 with a
 * message naming t->shown (SL_ERR_NOTFOUND for 404), resp filled with the last answer.
 * Release resp->body. */
int rm_request(const struct rm_target *t, const char *url, const char *method, uint64_t off,
               size_t len, void *dst, size_t cap, struct rm_resp *resp);

/* A request with a body from memory (method "PUT", "POST" or "DELETE"; body may be NULL
 * with n 0), extra header lines (NULL-terminated, may be NULL), the same retries. 0 on a
 * 2xx answer (resp->body holds its body), else <0 with a message naming t->shown and
 * resp->status the last answer's status. Release resp->body. */
int rm_send(const struct rm_target *t, const char *url, const char *method, const void *body,
            size_t n, const char *const *headers, struct rm_resp *resp);

/* S3 (core/remote_s3.c). */
/* "http(s)://ENDPOINT/BUCKET/KEY?QUERY" or the AWS virtual-host form; key escaped except
 * '/', query given already escaped ("" or NULL: none). Caller frees. */
char *rm_s3_http_url(const char *bucket, const char *key, const char *query);
/* Sign the request on h (SigV4 through libcurl) when credentials are known; adds headers
 * to *hdrs. */
void rm_s3_authorise(void *curl, struct curl_slist **hdrs);
/* The hint for a refused S3 request of bucket. */
const char *rm_s3_hint(void);
/* One ListObjectsV2 answer (body[0..n), untrusted): its objects under prefix whose names
 * are accepted, into l (as s3://bucket/KEY); token gets the continuation token when the
 * listing goes on, else is emptied. 0, or SL_ERR_FORMAT (it goes on without a token). */
int rm_s3_list_page(const char *body, size_t n, const char *bucket, const char *prefix,
                    const char *const *exts, struct sl_remote_list *l, struct sl_buf *token);
/* List the objects under prefix of bucket into l (see sl_remote_expand). */
int rm_s3_list(struct sl_remote_list *l, const struct rm_target *t, const char *bucket,
               const char *prefix, const char *const *exts);
/* Percent-encode s into b as S3 wants keys and query values: every byte but A-Z a-z 0-9
 * - . _ ~ (and '/' when keep_slash). */
void rm_s3_escape(struct sl_buf *b, const char *s, int keep_slash);
/* The text of the first <tag>...</tag> of an XML body, entities decoded, into out: 1 if
 * found. */
int rm_s3_xml_text(const char *body, size_t n, const char *tag, struct sl_buf *out);
/* An S3 error body's <Code> and <Message> as "Code: Message" in out (cap bytes), or "". */
void rm_s3_error_words(const char *body, size_t n, char *out, size_t cap);

/* A listing page is read into memory up to this size: the hub's pages hold 1000 entries of
 * a few hundred bytes, S3's 1000 keys of about 400 bytes of XML. */
#define RM_LIST_PAGE_MAX (64u << 20)

/* The hub (core/remote_hf.c). */
/* HF_ENDPOINT (as huggingface_hub reads it) or https://huggingface.co, without a trailing
 * '/'. Caller frees. */
char *rm_hf_endpoint(void);
/* hf://datasets/ORG/NAME[@REV]/PATH into "ORG/NAME", REV (default main) and PATH (may be
 * ""); 0 or SL_ERR_USAGE. */
int rm_hf_parse(const char *url, char **repo, char **rev, char **path);
/* One tree API answer (body[0..n), untrusted) for the folder path (no trailing '/') of
 * REPO at REV: its files with accepted names, into l (as hf:// URLs). 0, or SL_ERR_FORMAT
 * (not a JSON list). */
int rm_hf_list_page(const char *body, size_t n, const char *repo, const char *rev, const char *path,
                    const char *const *exts, struct sl_remote_list *l);
/* The folder of t (hf://datasets/REPO[@REV]/PATH) by the tree API, into l (see
 * sl_remote_expand). */
int rm_hf_list(struct sl_remote_list *l, const struct rm_target *t, const char *const *exts);

/* Shared by the listings: keep rel when it ends in one of exts (NULL: all) and has no
 * hidden part; append (url, rel, size) to l. */
int rm_accepted(const char *rel, const char *const *exts);
void rm_list_push(struct sl_remote_list *l, const char *url, const char *rel, uint64_t size);

#endif
