/* YAML configuration trees: loading with libyaml, overrides, typed getters, unused keys. */
#include "core/config.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/options.h"
#include "core/stream.h"
#include "core/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

static struct sl_cfg *node_new(enum sl_cfg_kind kind, int line)
{
    struct sl_cfg *c = sl_xcalloc(1, sizeof(*c));
    c->kind = kind;
    c->line = line;
    return c;
}

static void node_add(struct sl_cfg *parent, struct sl_cfg *child)
{
    if (parent->n == parent->cap) {
        parent->cap = parent->cap ? parent->cap * 2 : 8;
        parent->items = sl_xrealloc(parent->items, parent->cap * sizeof(*parent->items));
    }
    parent->items[parent->n++] = child;
    child->parent = parent;
}

static void forget_asked(const struct sl_cfg *map);

void sl_cfg_free(struct sl_cfg *c)
{
    if (!c)
        return;
    if (c->kind == SL_CFG_MAP)
        forget_asked(c);
    for (size_t i = 0; i < c->n; i++)
        sl_cfg_free(c->items[i]);
    free(c->items);
    free(c->key);
    free(c->value);
    free(c->file);
    free(c);
}

static struct sl_cfg *node_copy(const struct sl_cfg *src)
{
    struct sl_cfg *c = node_new(src->kind, src->line);
    c->key = src->key ? sl_xstrdup(src->key) : NULL;
    c->value = src->value ? sl_xstrdup(src->value) : NULL;
    c->quoted = src->quoted;
    for (size_t i = 0; i < src->n; i++)
        node_add(c, node_copy(src->items[i]));
    return c;
}

struct sl_cfg *sl_cfg_new(const char *name)
{
    struct sl_cfg *c = node_new(SL_CFG_MAP, 0);
    c->file = sl_xstrdup(name ? name : "(config)");
    return c;
}

static const char *root_file(const struct sl_cfg *c)
{
    while (c->parent)
        c = c->parent;
    return c->file ? c->file : "(config)";
}

const char *sl_cfg_where(const struct sl_cfg *node)
{
    static _Thread_local char buf[512];
    if (node->line)
        snprintf(buf, sizeof(buf), "%s:%d", root_file(node), node->line);
    else
        snprintf(buf, sizeof(buf), "%s (command line)", root_file(node));
    return buf;
}

char *sl_cfg_path(const struct sl_cfg *node)
{
    const struct sl_cfg *chain[64];
    size_t n = 0;
    for (const struct sl_cfg *c = node; c && c->parent && n < 64; c = c->parent)
        chain[n++] = c;
    struct sl_buf b = SL_BUF_INIT;
    for (size_t i = n; i-- > 0;) {
        const struct sl_cfg *c = chain[i];
        if (b.len)
            sl_buf_putc(&b, '.');
        if (c->key) {
            sl_buf_puts(&b, c->key);
        } else {
            size_t idx = 0;
            for (; idx < c->parent->n; idx++)
                if (c->parent->items[idx] == c)
                    break;
            sl_buf_printf(&b, "%zu", idx);
        }
    }
    return sl_buf_detach(&b, NULL);
}

/* ---- loading ---------------------------------------------------------------------- */

/* Limits on what aliases may expand to (a "billion laughs" config of 11 levels of ten
 * aliases is 10^11 nodes): alias uses, and the nodes and bytes copied for aliases and
 * anchors together. Real configs use a few dozen aliases of small maps. */
#define CFG_MAX_ALIASES      10000
#define CFG_MAX_COPIED_NODES 1000000
#define CFG_MAX_COPIED_BYTES (64u << 20)

struct anchor {
    char *name;
    struct sl_cfg *node;
    size_t nodes, bytes; /* the size of node */
};

struct loader {
    yaml_parser_t p;
    const char *name;
    struct anchor *anchors;
    size_t nanchors;
    size_t aliases, copied_nodes, copied_bytes;
};

/* Nodes and bytes (keys and values) of a tree. */
static void cfg_measure(const struct sl_cfg *c, size_t *nodes, size_t *bytes)
{
    *nodes += 1;
    *bytes += sizeof(*c) + (c->key ? strlen(c->key) : 0) + (c->value ? strlen(c->value) : 0);
    for (size_t i = 0; i < c->n; i++)
        cfg_measure(c->items[i], nodes, bytes);
}

/* Charge a copy of nodes/bytes to the loader's budget (line and what for the message). */
static int charge_copy(struct loader *L, int line, const char *what, const char *name, size_t nodes,
                       size_t bytes)
{
    L->copied_nodes += nodes;
    L->copied_bytes += bytes;
    if (L->copied_nodes <= CFG_MAX_COPIED_NODES && L->copied_bytes <= CFG_MAX_COPIED_BYTES)
        return 0;
    return sl_err_set(SL_ERR_CONFIG,
                      "%s:%d: %s '%c%s' expands the config past the alias limit (%zu nodes and "
                      "%zu bytes copied; at most %d nodes and %u MiB)\nhint: aliases that "
                      "repeat aliases grow exponentially (a \"billion laughs\" config)",
                      L->name, line, what, what[1] == 'l' ? '*' : '&', name, L->copied_nodes,
                      L->copied_bytes, CFG_MAX_COPIED_NODES, CFG_MAX_COPIED_BYTES >> 20);
}

static int yaml_fail(struct loader *L)
{
    return sl_err_set(SL_ERR_CONFIG, "%s:%zu:%zu: invalid YAML: %s", L->name,
                      L->p.problem_mark.line + 1, L->p.problem_mark.column + 1,
                      L->p.problem ? L->p.problem : "parse error");
}

/* Anchors keep their own copy: the anchored node may be replaced later (a key from a
 * merge overridden). The copy counts against the alias budget. */
static int remember_anchor(struct loader *L, const yaml_char_t *anchor, struct sl_cfg *node)
{
    if (!anchor)
        return 0;
    size_t nodes = 0, bytes = 0;
    cfg_measure(node, &nodes, &bytes);
    int rc = charge_copy(L, node->line, "anchor", (const char *)anchor, nodes, bytes);
    if (rc)
        return rc;
    L->anchors = sl_xrealloc(L->anchors, (L->nanchors + 1) * sizeof(*L->anchors));
    L->anchors[L->nanchors].name = sl_xstrdup((const char *)anchor);
    L->anchors[L->nanchors].node = node_copy(node);
    L->anchors[L->nanchors].nodes = nodes;
    L->anchors[L->nanchors].bytes = bytes;
    L->nanchors++;
    return 0;
}

static int load_node(struct loader *L, yaml_event_t *ev, struct sl_cfg **out, int depth);

static int load_children(struct loader *L, struct sl_cfg *node, int is_map, int depth)
{
    /* the keys written in this map (not those from a merge key), to refuse repeats */
    struct own_key {
        char *key; /* a copy, freed at the end */
        int line;
    } *own = NULL;
    size_t nown = 0;
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&L->p, &ev)) {
            rc = yaml_fail(L);
            break;
        }
        if (ev.type == (is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT)) {
            yaml_event_delete(&ev);
            break;
        }
        char *key = NULL;
        int key_line = (int)ev.start_mark.line + 1;
        if (is_map) {
            if (ev.type != YAML_SCALAR_EVENT) {
                yaml_event_delete(&ev);
                rc = sl_err_set(SL_ERR_CONFIG, "%s:%d: map keys must be plain scalars", L->name,
                                key_line);
                break;
            }
            key = sl_xstrndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
            yaml_event_delete(&ev);
            for (size_t i = 0; i < nown && strcmp(key, "<<") != 0; i++)
                if (strcmp(own[i].key, key) == 0) {
                    rc = sl_err_set(SL_ERR_CONFIG,
                                    "%s:%d: duplicate key '%s' (first at line %d)\nhint: YAML "
                                    "keys are unique within a map; remove one of them",
                                    L->name, key_line, key, own[i].line);
                    break;
                }
            if (rc) {
                free(key);
                break;
            }
            if (!yaml_parser_parse(&L->p, &ev)) {
                free(key);
                rc = yaml_fail(L);
                break;
            }
        }
        struct sl_cfg *child;
        rc = load_node(L, &ev, &child, depth + 1);
        yaml_event_delete(&ev);
        if (rc) {
            free(key);
            break;
        }
        if (is_map) {
            if (strcmp(key, "<<") == 0 && child->kind == SL_CFG_MAP) {
                /* merge key: copy entries not already present */
                for (size_t i = 0; i < child->n; i++)
                    if (!sl_cfg_child(node, child->items[i]->key))
                        node_add(node, node_copy(child->items[i]));
                sl_cfg_free(child);
                free(key);
                continue;
            }
            /* a key written here replaces one that came from a merge key */
            for (size_t i = 0; i < node->n; i++) {
                if (strcmp(node->items[i]->key, key) == 0) {
                    sl_cfg_free(node->items[i]);
                    memmove(&node->items[i], &node->items[i + 1],
                            (node->n - i - 1) * sizeof(*node->items));
                    node->n--;
                    break;
                }
            }
            child->key = key;
            child->line = child->line ? child->line : key_line;
            /* its own copy: the child that owns key may be replaced and freed later (a second
             * "<<" that is not a map, which the duplicate check lets through) */
            own = sl_xrealloc(own, (nown + 1) * sizeof(*own));
            own[nown].key = sl_xstrdup(key);
            own[nown++].line = key_line;
        }
        node_add(node, child);
    }
    for (size_t i = 0; i < nown; i++)
        free(own[i].key);
    free(own);
    return rc;
}

static int load_node(struct loader *L, yaml_event_t *ev, struct sl_cfg **out, int depth)
{
    int line = (int)ev->start_mark.line + 1;
    *out = NULL;
    if (depth > 64)
        return sl_err_set(SL_ERR_CONFIG, "%s:%d: nesting too deep", L->name, line);
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        struct sl_cfg *c = node_new(SL_CFG_SCALAR, line);
        c->value = sl_xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        c->quoted = ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                    ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE ||
                    ev->data.scalar.style == YAML_LITERAL_SCALAR_STYLE ||
                    ev->data.scalar.style == YAML_FOLDED_SCALAR_STYLE;
        if (!c->quoted && (!strcmp(c->value, "") || !strcmp(c->value, "~") ||
                           !strcasecmp(c->value, "null")))
            c->kind = SL_CFG_NULL;
        int rc = remember_anchor(L, ev->data.scalar.anchor, c);
        if (rc) {
            sl_cfg_free(c);
            return rc;
        }
        *out = c;
        return 0;
    }
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: {
        int is_map = ev->type == YAML_MAPPING_START_EVENT;
        struct sl_cfg *c = node_new(is_map ? SL_CFG_MAP : SL_CFG_SEQ, line);
        const yaml_char_t *anchor =
            is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
        int rc = load_children(L, c, is_map, depth);
        if (rc) {
            sl_cfg_free(c);
            return rc;
        }
        rc = remember_anchor(L, anchor, c);
        if (rc) {
            sl_cfg_free(c);
            return rc;
        }
        *out = c;
        return 0;
    }
    case YAML_ALIAS_EVENT:
        for (size_t i = L->nanchors; i-- > 0;) {
            if (strcmp(L->anchors[i].name, (const char *)ev->data.alias.anchor) == 0) {
                if (++L->aliases > CFG_MAX_ALIASES)
                    return sl_err_set(SL_ERR_CONFIG,
                                      "%s:%d: alias '*%s' is alias number %zu; a config may use "
                                      "at most %d",
                                      L->name, line, L->anchors[i].name, L->aliases,
                                      CFG_MAX_ALIASES);
                int rc = charge_copy(L, line, "alias", L->anchors[i].name, L->anchors[i].nodes,
                                     L->anchors[i].bytes);
                if (rc)
                    return rc;
                *out = node_copy(L->anchors[i].node);
                free((*out)->key);
                (*out)->key = NULL;
                return 0;
            }
        }
        return sl_err_set(SL_ERR_CONFIG, "%s:%d: unknown alias '*%s'", L->name, line,
                          (const char *)ev->data.alias.anchor);
    default:
        return sl_err_set(SL_ERR_CONFIG, "%s:%d: unexpected YAML event", L->name, line);
    }
}

/* Offset of the first byte that YAML text cannot hold (NUL and other C0 controls but tab,
 * newline and carriage return; DEL; invalid UTF-8), or len. */
static size_t first_non_text(const char *text, size_t len)
{
    size_t bad = sl_utf8_validate(text, len);
    for (size_t i = 0; i < bad; i++) {
        unsigned char ch = (unsigned char)text[i];
        if ((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') || ch == 0x7f)
            return i;
    }
    return bad;
}

int sl_cfg_load_string(struct sl_cfg **out, const char *text, size_t len, const char *name)
{
    struct loader L;
    memset(&L, 0, sizeof(L));
    L.name = name ? name : "(config)";
    *out = NULL;
    size_t bad = first_non_text(text, len);
    if (bad < len) {
        int line = 1;
        for (size_t i = 0; i < bad; i++)
            line += text[i] == '\n';
        return sl_err_set(SL_ERR_CONFIG,
                          "%s: not a YAML text file: byte 0x%02x at offset %zu (line %d) is %s\n"
                          "hint: is it a binary file (a model, a shard, an archive)? a config is "
                          "UTF-8 text",
                          L.name, (unsigned char)text[bad], bad, line,
                          (unsigned char)text[bad] < 0x80 ? "a control character" : "not UTF-8");
    }
    if (!yaml_parser_initialize(&L.p))
        return sl_err_set(SL_ERR_NOMEM, "cannot start YAML parser");
    yaml_parser_set_input_string(&L.p, (const unsigned char *)text, len);

    struct sl_cfg *root = NULL;
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&L.p, &ev)) {
            rc = yaml_fail(&L);
            break;
        }
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT ||
            t == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (root) {
            yaml_event_delete(&ev);
            rc = sl_err_set(SL_ERR_CONFIG, "%s: more than one YAML document", L.name);
            break;
        }
        rc = load_node(&L, &ev, &root, 0);
        yaml_event_delete(&ev);
        if (rc)
            break;
    }
    yaml_parser_delete(&L.p);
    for (size_t i = 0; i < L.nanchors; i++) {
        free(L.anchors[i].name);
        sl_cfg_free(L.anchors[i].node);
    }
    free(L.anchors);
    if (rc) {
        sl_cfg_free(root);
        return rc;
    }
    if (!root)
        root = node_new(SL_CFG_MAP, 1);
    root->file = sl_xstrdup(L.name);
    *out = root;
    return 0;
}

int sl_cfg_load_file(struct sl_cfg **out, const char *path)
{
    struct sl_buf b;
    sl_buf_init(&b, 64u << 20);
    *out = NULL;
    int rc = sl_read_file(path, &b);
    if (rc == 0)
        rc = sl_cfg_load_string(out, b.data ? b.data : "", b.len, path);
    sl_buf_release(&b);
    /* a file holds settings: a mapping (or nothing, or only a null) */
    struct sl_cfg *root = *out;
    if (rc == 0 && root->kind == SL_CFG_NULL) {
        root->kind = SL_CFG_MAP;
        free(root->value);
        root->value = NULL;
    } else if (rc == 0 && root->kind != SL_CFG_MAP) {
        rc = sl_err_set(SL_ERR_CONFIG,
                        "%s:%d: not a YAML mapping of settings: the top level is a %s\nhint: a "
                        "config is 'key: value' lines; is it the right file?",
                        path, root->line, root->kind == SL_CFG_SEQ ? "list" : "single scalar");
        sl_cfg_free(root);
        *out = NULL;
    }
    return rc;
}

/* ---- lookup ----------------------------------------------------------------------- */

static int parse_index(const char *s, size_t n, size_t *out)
{
    if (!n || n > 9)
        return 0;
    size_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        v = v * 10 + (size_t)(s[i] - '0');
    }
    *out = v;
    return 1;
}

struct sl_cfg *sl_cfg_child(struct sl_cfg *node, const char *key)
{
    if (!node || node->kind != SL_CFG_MAP)
        return NULL;
    for (size_t i = 0; i < node->n; i++)
        if (strcmp(node->items[i]->key, key) == 0)
            return node->items[i];
    return NULL;
}

struct sl_cfg *sl_cfg_item(struct sl_cfg *node, size_t i)
{
    if (!node || node->kind != SL_CFG_SEQ || i >= node->n)
        return NULL;
    return node->items[i];
}

static struct sl_cfg *step(struct sl_cfg *node, const char *seg, size_t n)
{
    if (!node)
        return NULL;
    if (node->kind == SL_CFG_SEQ) {
        size_t idx;
        return parse_index(seg, n, &idx) ? sl_cfg_item(node, idx) : NULL;
    }
    if (node->kind != SL_CFG_MAP)
        return NULL;
    for (size_t i = 0; i < node->n; i++)
        if (strlen(node->items[i]->key) == n && memcmp(node->items[i]->key, seg, n) == 0)
            return node->items[i];
    return NULL;
}

struct sl_cfg *sl_cfg_get(struct sl_cfg *root, const char *path)
{
    struct sl_cfg *c = root;
    const char *p = path;
    if (!*p)
        return root;
    while (c) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        c = step(c, p, n);
        if (!dot)
            return c;
        p = dot + 1;
    }
    return NULL;
}

/* ---- overrides -------------------------------------------------------------------- */

int sl_cfg_override(struct sl_cfg *root, const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    if (!eq || eq == assignment)
        return sl_err_set(SL_ERR_USAGE, "override '%s' is not KEY=VALUE", assignment);
    char *path = sl_xstrndup(assignment, (size_t)(eq - assignment));
    const char *value = eq + 1;
    struct sl_cfg *val;
    int rc = sl_cfg_load_string(&val, value, strlen(value), "(override)");
    if (rc) {
        rc = sl_err_wrap(SL_ERR_USAGE, "override '%s': ", assignment);
        free(path);
        return rc;
    }
    free(val->file);
    val->file = NULL;
    if (!*value) {
        val->kind = SL_CFG_SCALAR;
        val->value = sl_xstrdup("");
    }
    /* zero line numbers: the value came from the command line */
    struct sl_cfg *stack[256];
    size_t sp = 0;
    stack[sp++] = val;
    while (sp) {
        struct sl_cfg *c = stack[--sp];
        c->line = 0;
        for (size_t i = 0; i < c->n && sp < 256; i++)
            stack[sp++] = c->items[i];
    }

    struct sl_cfg *node = root;
    char *p = path;
    for (;;) {
        char *dot = strchr(p, '.');
        if (dot)
            *dot = '\0';
        if (!*p) {
            rc = sl_err_set(SL_ERR_USAGE, "override '%s' has an empty key", assignment);
            break;
        }
        size_t idx;
        int is_idx = parse_index(p, strlen(p), &idx);
        if (node->kind == SL_CFG_SEQ) {
            if (!is_idx || idx > node->n) {
                rc = sl_err_set(SL_ERR_USAGE, "override '%s': '%s' is not an index of the list (0..%zu)",
                                assignment, p, node->n);
                break;
            }
            if (!dot) {
                if (idx == node->n) {
                    node_add(node, val);
                } else {
                    sl_cfg_free(node->items[idx]);
                    node->items[idx] = val;
                    val->parent = node;
                }
                val = NULL;
                break;
            }
            if (idx == node->n)
                node_add(node, node_new(SL_CFG_MAP, 0));
            node = node->items[idx];
        } else {
            if (node->kind != SL_CFG_MAP) {
                /* replace a scalar/null by a map */
                node->kind = SL_CFG_MAP;
                free(node->value);
                node->value = NULL;
            }
            struct sl_cfg *child = sl_cfg_child(node, p);
            if (!dot) {
                val->key = sl_xstrdup(p);
                if (child) {
                    for (size_t i = 0; i < node->n; i++) {
                        if (node->items[i] == child) {
                            sl_cfg_free(child);
                            node->items[i] = val;
                            val->parent = node;
                        }
                    }
                } else {
                    node_add(node, val);
                }
                val = NULL;
                break;
            }
            if (!child) {
                child = node_new(SL_CFG_MAP, 0);
                child->key = sl_xstrdup(p);
                node_add(node, child);
            }
            node = child;
        }
        p = dot + 1;
    }
    sl_cfg_free(val);
    free(path);
    return rc;
}

/* ---- typed getters ---------------------------------------------------------------- */

static int type_error(struct sl_cfg *n, const char *want)
{
    char *path = sl_cfg_path(n);
    int rc = sl_err_set(SL_ERR_CONFIG, "%s: %s: expected %s, got '%s'", sl_cfg_where(n), path, want,
                        n->kind == SL_CFG_SCALAR ? n->value
                        : n->kind == SL_CFG_MAP  ? "(a map)"
                                                 : "(a list)");
    free(path);
    return rc;
}

/* The node at path if it holds a value; NULL if absent or null. Marks it used. */
/* ---- unknown keys: what the getters asked for -------------------------------------- */

/* The keys getters asked for that a map does not have: with the keys it has, the known
 * keys of the map, for the "did you mean" of sl_cfg_check_unused. Only compared by
 * address; forgotten when the map is freed. */
#define ASKED_MAX 2048
static struct {
    const struct sl_cfg *map;
    char *key;
} asked[ASKED_MAX];
static size_t nasked;

static void forget_asked(const struct sl_cfg *map)
{
    size_t k = 0;
    for (size_t i = 0; i < nasked; i++) {
        if (asked[i].map == map)
            free(asked[i].key);
        else
            asked[k++] = asked[i];
    }
    nasked = k;
}

/* a and b differ by one inserted or deleted character (num_layer / num_layers, lrr / lr) */
static int one_ins_del(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la + 1 == lb)
        return one_ins_del(b, a);
    if (la != lb + 1)
        return 0;
    size_t i = 0;
    while (i < lb && a[i] == b[i])
        i++;
    return !strcmp(a + i + 1, b + i);
}

/* A getter found no `path` (its default applies). Remember the key as known; and when the
 * map holds an unread key one character away from it, that key is a typo of this one:
 * report it now, before a check of the default value could hide it. */
static int absent(struct sl_cfg *root, const char *path)
{
    const char *dot = strrchr(path, '.');
    const char *key = dot ? dot + 1 : path;
    struct sl_cfg *parent = root;
    if (dot) {
        char *pp = sl_xstrndup(path, (size_t)(dot - path));
        parent = sl_cfg_get(root, pp);
        free(pp);
    }
    if (!parent || parent->kind != SL_CFG_MAP || sl_cfg_child(parent, key))
        return 0;
    int seen = 0;
    for (size_t i = 0; i < nasked && !seen; i++)
        seen = asked[i].map == parent && !strcmp(asked[i].key, key);
    if (!seen && nasked < ASKED_MAX) {
        asked[nasked].map = parent;
        asked[nasked++].key = sl_xstrdup(key);
    }
    for (size_t i = 0; i < parent->n; i++) {
        struct sl_cfg *c = parent->items[i];
        if (c->used || !c->key || !one_ins_del(c->key, key))
            continue;
        char *cp = sl_cfg_path(c);
        int rc = sl_err_set(SL_ERR_CONFIG, "%s: unknown key '%s'\nhint: did you mean '%s'?",
                            sl_cfg_where(c), cp, key);
        free(cp);
        return rc;
    }
    return 0;
}

static struct sl_cfg *lookup(struct sl_cfg *root, const char *path)
{
    struct sl_cfg *n = sl_cfg_get(root, path);
    if (!n)
        return NULL;
    n->used = 1;
    if (n->kind == SL_CFG_NULL)
        return NULL;
    return n;
}

int sl_cfg_str(struct sl_cfg *root, const char *path, const char *def, const char **out)
{
    struct sl_cfg *n = lookup(root, path);
    *out = def;
    if (!n)
        return absent(root, path);
    if (n->kind != SL_CFG_SCALAR)
        return type_error(n, "a string");
    *out = n->value;
    return 0;
}

int sl_cfg_node_int(struct sl_cfg *n, long *out)
{
    n->used = 1;
    if (n->kind != SL_CFG_SCALAR)
        return type_error(n, "an integer");
    char *end;
    errno = 0;
    const char *s = n->value;
    long v = strtol(s, &end, 0);
    if (end == s || errno) {
        return type_error(n, "an integer");
    }
    if (*end) {
        /* allow "1e6" style integers and "_" separators */
        double d = strtod(s, &end);
        if (*end || d != floor(d) || fabs(d) > 9.2e18)
            return type_error(n, "an integer");
        v = (long)d;
    }
    *out = v;
    return 0;
}

int sl_cfg_node_double(struct sl_cfg *n, double *out)
{
    n->used = 1;
    if (n->kind != SL_CFG_SCALAR)
        return type_error(n, "a number");
    char *end;
    errno = 0;
    double v = strtod(n->value, &end);
    if (end == n->value || *end || errno)
        return type_error(n, "a number");
    *out = v;
    return 0;
}

int sl_cfg_node_bool(struct sl_cfg *n, int *out)
{
    n->used = 1;
    if (n->kind == SL_CFG_SCALAR) {
        const char *s = n->value;
        if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on") || !strcmp(s, "1")) {
            *out = 1;
            return 0;
        }
        if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off") || !strcmp(s, "0")) {
            *out = 0;
            return 0;
        }
    }
    return type_error(n, "true or false");
}

int sl_cfg_int(struct sl_cfg *root, const char *path, long def, long *out)
{
    struct sl_cfg *n = lookup(root, path);
    *out = def;
    return n ? sl_cfg_node_int(n, out) : absent(root, path);
}

int sl_cfg_u64(struct sl_cfg *root, const char *path, uint64_t def, uint64_t *out)
{
    struct sl_cfg *n = lookup(root, path);
    *out = def;
    if (!n)
        return absent(root, path);
    if (n->kind != SL_CFG_SCALAR || n->value[0] == '-')
        return type_error(n, "a non-negative integer");
    char *end;
    errno = 0;
    uint64_t v = strtoull(n->value, &end, 0);
    if (end == n->value || *end || errno)
        return type_error(n, "a non-negative integer");
    *out = v;
    return 0;
}

int sl_cfg_double(struct sl_cfg *root, const char *path, double def, double *out)
{
    struct sl_cfg *n = lookup(root, path);
    *out = def;
    return n ? sl_cfg_node_double(n, out) : absent(root, path);
}

int sl_cfg_bool(struct sl_cfg *root, const char *path, int def, int *out)
{
    struct sl_cfg *n = lookup(root, path);
    *out = def;
    return n ? sl_cfg_node_bool(n, out) : absent(root, path);
}

int sl_cfg_size(struct sl_cfg *root, const char *path, uint64_t def, uint64_t *out)
{
    struct sl_cfg *n = lookup(root, path);
    *out = def;
    if (!n)
        return absent(root, path);
    if (n->kind != SL_CFG_SCALAR || sl_parse_size(n->value, out))
        return type_error(n, "a size (like 4096, 64K, 256M)");
    return 0;
}

int sl_cfg_strs(struct sl_cfg *root, const char *path, const char ***out, size_t *n)
{
    struct sl_cfg *node = lookup(root, path);
    *out = NULL;
    *n = 0;
    if (!node)
        return absent(root, path);
    if (node->kind == SL_CFG_SCALAR) {
        if (!strchr(node->value, ',')) {
            const char **v = sl_xcalloc(1, sizeof(*v));
            v[0] = node->value;
            *out = v;
            *n = 1;
            return 0;
        }
        /* "a,b,c": turn the scalar into a list of its parts */
        char *text = node->value;
        node->value = NULL;
        node->kind = SL_CFG_SEQ;
        char *save = NULL;
        for (char *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ')
                tok++;
            char *e = tok + strlen(tok);
            while (e > tok && e[-1] == ' ')
                *--e = '\0';
            struct sl_cfg *part = node_new(SL_CFG_SCALAR, node->line);
            part->value = sl_xstrdup(tok);
            node_add(node, part);
        }
        free(text);
    }
    if (node->kind != SL_CFG_SEQ)
        return type_error(node, "a list");
    const char **v = sl_xcalloc(node->n ? node->n : 1, sizeof(*v));
    for (size_t i = 0; i < node->n; i++) {
        struct sl_cfg *it = node->items[i];
        it->used = 1;
        if (it->kind != SL_CFG_SCALAR) {
            free(v);
            return type_error(it, "a string");
        }
        v[i] = it->value;
    }
    *out = v;
    *n = node->n;
    return 0;
}

void sl_cfg_mark_used(struct sl_cfg *node)
{
    if (!node)
        return;
    node->used = 1;
    for (size_t i = 0; i < node->n; i++)
        sl_cfg_mark_used(node->items[i]);
}

static struct sl_cfg *first_unused(struct sl_cfg *n)
{
    if (n->kind == SL_CFG_MAP || n->kind == SL_CFG_SEQ) {
        if (n->n == 0 && !n->used && n->parent)
            return n;
        for (size_t i = 0; i < n->n; i++) {
            struct sl_cfg *u = first_unused(n->items[i]);
            if (u)
                return u;
        }
        return NULL;
    }
    return n->used ? NULL : n;
}

int sl_cfg_check_unused(struct sl_cfg *root)
{
    struct sl_cfg *u = first_unused(root);
    if (!u)
        return 0;
    char *path = sl_cfg_path(u);
    const char *best = NULL;
    size_t bestd = (size_t)-1;
    if (u->key && u->parent && u->parent->kind == SL_CFG_MAP) {
        for (size_t i = 0; i < u->parent->n; i++) {
            struct sl_cfg *s = u->parent->items[i];
            if (s == u || !s->used)
                continue;
            size_t d = sl_edit_distance(u->key, s->key);
            if (d < bestd) {
                bestd = d;
                best = s->key;
            }
        }
        /* and the keys a getter asked for in the same map that the config lacks */
        for (size_t i = 0; i < nasked; i++) {
            if (asked[i].map != u->parent)
                continue;
            size_t d = sl_edit_distance(u->key, asked[i].key);
            if (d < bestd) {
                bestd = d;
                best = asked[i].key;
            }
        }
    }
    int rc;
    if (best && bestd <= 3)
        rc = sl_err_set(SL_ERR_CONFIG, "%s: unknown key '%s'\nhint: did you mean '%s'?",
                        sl_cfg_where(u), path, best);
    else
        rc = sl_err_set(SL_ERR_CONFIG, "%s: unknown key '%s'", sl_cfg_where(u), path);
    free(path);
    return rc;
}

/* ---- JSON ------------------------------------------------------------------------- */

static int looks_number(const char *s)
{
    char *end;
    if (!*s)
        return 0;
    errno = 0;
    strtod(s, &end);
    if (*end || errno)
        return 0;
    /* JSON numbers: no leading '+', no hex, no "inf"/"nan", no leading zeros like 007 */
    if (s[0] == '+' || strchr(s, 'x') || strchr(s, 'X') || strchr(s, 'n') || strchr(s, 'N') ||
        strchr(s, 'i') || strchr(s, 'I'))
        return 0;
    const char *d = s[0] == '-' ? s + 1 : s;
    if (d[0] == '0' && d[1] >= '0' && d[1] <= '9')
        return 0;
    if (d[0] == '.' || s[strlen(s) - 1] == '.')
        return 0;
    return 1;
}

int sl_cfg_to_json(const struct sl_cfg *n, struct sl_buf *out)
{
    int rc = 0;
    switch (n->kind) {
    case SL_CFG_NULL:
        return sl_buf_puts(out, "null");
    case SL_CFG_SCALAR:
        if (!n->quoted && (!strcmp(n->value, "true") || !strcmp(n->value, "false")))
            return sl_buf_puts(out, n->value);
        if (!n->quoted && looks_number(n->value))
            return sl_buf_puts(out, n->value);
        return sl_buf_json_str(out, n->value, strlen(n->value));
    case SL_CFG_SEQ:
        rc = sl_buf_putc(out, '[');
        for (size_t i = 0; i < n->n && !rc; i++) {
            if (i)
                rc = sl_buf_putc(out, ',');
            if (!rc)
                rc = sl_cfg_to_json(n->items[i], out);
        }
        return rc ? rc : sl_buf_putc(out, ']');
    case SL_CFG_MAP:
        rc = sl_buf_putc(out, '{');
        for (size_t i = 0; i < n->n && !rc; i++) {
            if (i)
                rc = sl_buf_putc(out, ',');
            if (!rc)
                rc = sl_buf_json_str(out, n->items[i]->key, strlen(n->items[i]->key));
            if (!rc)
                rc = sl_buf_putc(out, ':');
            if (!rc)
                rc = sl_cfg_to_json(n->items[i], out);
        }
        return rc ? rc : sl_buf_putc(out, '}');
    }
    return rc;
}
