/* struct sl_manifest: the manifest.json of a stage's outputs (docs/formats/manifest.md):
 * what ran (version, stage, command, start, wall time, ranks, resumed, settings), the
 * inputs, the outputs with their figures, and the counts. Written in this order:
 *   sl_manifest_begin(&m, &head)               the header, up to "settings"
 *   sl_manifest_inputs(&m, inputs)             path and planned size of each input
 *   sl_manifest_output(&m, path, figures)      once per output file (none: an empty list)
 *   sl_manifest_counts(&m, main, counters)     the main counts, then the others by name
 *   sl_manifest_write(&m, path)                written atomically; m is released
 * sl_manifest_release frees a manifest given up before it is written.
 */
#ifndef SL_MANIFEST_H
#define SL_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

struct sl_counters;
struct sl_inputs;

struct sl_manifest_head {
    const char *stage; /* "clean" */
    int argc;          /* the command line */
    const char **argv;
    const char *started; /* "2024-05-01T12:00:00Z" */
    double wall_seconds;
    int ranks;
    int resumed;
    const char *settings_json; /* a JSON object (NULL: {}) */
    /* The layout of a manifest written before the stage runner's (tokenize's
     * PREFIX.manifest.json), kept so that its files do not change: the command's words
     * separated by ", " (not ","), and the inputs and outputs lists closed on their last
     * line ("...}],") instead of on their own. */
    int inline_lists;
};

struct sl_manifest {
    struct sl_buf b;
    int inline_lists;
    size_t outputs; /* listed so far */
};

/* One figure of an output file: "documents": 12. */
struct sl_manifest_figure {
    const char *name;
    uint64_t value;
};

void sl_manifest_begin(struct sl_manifest *m, const struct sl_manifest_head *h);
/* The "inputs" list (in may be NULL: none), and the start of "outputs". */
void sl_manifest_inputs(struct sl_manifest *m, const struct sl_inputs *in);
/* One output: its path (relative to the manifest's directory) and figures, in order. */
void sl_manifest_output(struct sl_manifest *m, const char *path,
                        const struct sl_manifest_figure *fig, size_t nfig);
/* The "counts" object: the counters named in `main` (NULL-terminated) in that order, 0
 * when absent, then every other counter of c sorted by name (so manifests compare equal
 * across rank counts). */
void sl_manifest_counts(struct sl_manifest *m, const char *const *main,
                        const struct sl_counters *c);
/* Write the manifest to path atomically and release m. 0, or <0 with a message. */
int sl_manifest_write(struct sl_manifest *m, const char *path);
void sl_manifest_release(struct sl_manifest *m);

/* The sluice version string ("0.1.0" or "0.1.0-3-gabcdef"). */
const char *sl_version(void);

#endif
