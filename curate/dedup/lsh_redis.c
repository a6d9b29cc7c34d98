#include "curate/dedup/lsh_redis.h"
#include "core/err.h"
int lsh_redis_open(struct lsh_redis *r, const char *nodes, const char *password, const char *prefix, unsigned batch)
{ (void)r; (void)nodes; (void)password; (void)prefix; (void)batch; return sl_err_set(SL_ERR_UNSUPPORTED, "todo"); }
void lsh_redis_close(struct lsh_redis *r) { (void)r; }
int lsh_redis_insert(struct lsh_redis *r, const uint64_t *gids, const uint64_t *keys, size_t ndocs, unsigned bands) { (void)r;(void)gids;(void)keys;(void)ndocs;(void)bands; return -1; }
int lsh_redis_pairs(struct lsh_redis *r, const char *old_prefix, const uint64_t *gids, const uint64_t *keys, size_t ndocs, unsigned bands, unsigned anchors, struct dd_edge **e, size_t *ne, size_t *cap) {(void)r;(void)old_prefix;(void)gids;(void)keys;(void)ndocs;(void)bands;(void)anchors;(void)e;(void)ne;(void)cap; return -1;}
int lsh_redis_delete(struct lsh_redis *r, const uint64_t *keys, size_t ndocs, unsigned bands) {(void)r;(void)keys;(void)ndocs;(void)bands; return -1;}
