/* Remote inputs: objects read over HTTP(S) in byte ranges, from
 *   s3://BUCKET/KEY-OR-PREFIX       S3 and S3-compatible stores (MinIO, Ceph, R2, GCS's
 *                                   interoperability mode), signed with AWS Signature V4
 *   https://HOST/PATH, http://...   one object of a web server
 *   hf://datasets/ORG/NAME[@REV]/PATH   the Hugging Face hub (revision main by default)
 * Only http and https are ever spoken, for every request and every redirect.
 *
 * Configuration (read once, from the environment; docs/objstore.md):
 *   S3: AWS_ENDPOINT_URL (or sl_remote_set_s3_endpoint, --s3-endpoint) for another store,
 *       addressed path-style (ENDPOINT/BUCKET/KEY); else https://BUCKET.s3.REGION.amazonaws.com.
 *       Region: AWS_REGION, AWS_DEFAULT_REGION, the profile's region in ~/.aws/config
 *       (AWS_CONFIG_FILE), else us-east-1. Credentials: AWS_ACCESS_KEY_ID,
 *       AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else the profile AWS_PROFILE
 *       (default "default") of ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE); none: the
 *       requests are not signed (public buckets).
 *   hf: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN sent as a bearer token.
 * Credentials never appear in what sluice shows or writes: messages name objects by URL,
 * and an http(s) URL is shown in its display form (core/http.h: query values and user
 * information replaced by "***").
 *
 * Retries: a request that fails with a dropped or timed-out connection, or an answer 500,
 * 502, 503 (SlowDown), 504, 429 or 408, is tried again up to SL_REMOTE_RETRIES times,
 * waiting SL_REMOTE_WAIT_MS, doubled each time (at most SL_REMOTE_WAIT_MAX_MS); a body cut
 * short resumes where it stopped (a Range request for the rest). An object that changes
 * while it is read (another ETag) is an error, never spliced.
 */
#ifndef SL_REMOTE_H
#define SL_REMOTE_H

#include <stddef.h>
#include <stdint.h>

/* Retries after the first attempt, and the waits before them: 0.25 s, doubled, at most
 * 8 s: about 16 s in all before a request is given up, enough for a store's SlowDown
 * burst or a dropped connection, short enough that a dead endpoint is reported soon. */
#define SL_REMOTE_RETRIES     6
#define SL_REMOTE_WAIT_MS     250
#define SL_REMOTE_WAIT_MAX_MS 8000

/* The bytes one sequential read asks for at a time (sl_remote_source): large enough that
 * the request's round trip is small beside its transfer, small enough to keep in memory
 * per open input. SLUICE_REMOTE_CHUNK (bytes, up to this) asks less, for the tests of
 * range reads. */
#define SL_REMOTE_CHUNK (8u << 20)

struct sl_source;

/* 1 when s names a remote object or prefix: s3://, hf://, http:// or https:// (any case). */
int sl_remote_is_url(const char *s);

/* Set the S3 endpoint (an http:// or https:// URL; NULL: AWS_ENDPOINT_URL or AWS). Call
 * before the first remote request. */
void sl_remote_set_s3_endpoint(const char *url);

/* One object of an expanded operand. */
struct sl_remote_entry {
    char *url;   /* as fetched (s3://, hf:// or http(s)://; may carry a token in its query) */
    char *shown; /* the display form, for plans, manifests and messages */
    char *rel;   /* relative to the operand's prefix or folder; the base name of an object */
    uint64_t size;
};

struct sl_remote_list {
    struct sl_remote_entry *v;
    size_t n, cap;
};

/* Expand an operand into objects, appended to l: s3://BUCKET/KEY is that object when it
 * exists, else the prefix KEY/ (or KEY when it ends in '/'): every object under it
 * (ListObjectsV2, page after page), keys that end in one of exts (NULL: all) and have no
 * hidden part (".name") below the prefix, in byte order of their keys. hf:// the same
 * (the hub's resolve URL for a file, its tree API for a folder, page after page).
 * http(s):// is one object. 0, or <0 with a message naming the operand (SL_ERR_NOTFOUND:
 * no such object or no accepted objects under the prefix; SL_ERR_NET: the server refused
 * or could not be reached, with its words and a hint). */
int sl_remote_expand(struct sl_remote_list *l, const char *operand, const char *const *exts);
void sl_remote_list_release(struct sl_remote_list *l);

/* An open object, read by ranges: the interface a reader of random access (a Parquet
 * footer, then its row groups) uses, and under sl_remote_source's sequential reads. */
struct sl_remote;

/* Open url. size: the object's size when known (listed), else -1 to ask the server (a
 * HEAD). 0 or <0 with a message. */
int sl_remote_open(struct sl_remote **out, const char *url, int64_t size);
uint64_t sl_remote_size(const struct sl_remote *r);
/* Read exactly len bytes at off into buf (off + len <= size), with the retries above.
 * 0 or <0 with a message naming the object and the offset. */
int sl_remote_read_at(struct sl_remote *r, uint64_t off, void *buf, size_t len);
/* Requests and bytes received so far (for tests and progress). */
uint64_t sl_remote_requests(const struct sl_remote *r);
void sl_remote_close(struct sl_remote *r);

/* The object's ETag (a HEAD), "" when the server gives none. 0 or <0 with a message. */
int sl_remote_etag(struct sl_remote *r, char *etag, size_t cap);
/* The display form of its URL (valid while r is open). */
const char *sl_remote_source_name(const struct sl_remote *r);

/* Keep a copy of each remote input read whole in dir (NULL: none, the default), named by
 * its URL and ETag: a later read of the same version reads the copy (a HEAD asks the
 * ETag). Entries are written under temporary names and renamed when whole; nothing
 * removes old ones. */
void sl_remote_set_cache_dir(const char *dir);

/* How a stage opens a remote input (core/inputs.c): its first `size` bytes, streamed, or
 * from the cache directory. 0 or <0 with a message naming the object. */
int sl_remote_input_source(struct sl_source **out, const char *url, uint64_t size);

/* A byte source over an open object's first `size` bytes (read SL_REMOTE_CHUNK at a time,
 * in order); takes ownership of r. Its name is the display URL. */
struct sl_source *sl_remote_source(struct sl_remote *r, uint64_t size);

#endif
