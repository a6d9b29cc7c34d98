/* Connected components of a graph whose edges are spread over MPI ranks, labelled by
 * their smallest vertex (for dedup: the first document in input order).
 *
 * With more than one rank: the Large-Star / Small-Star rounds of Kiveris et al.
 * ("Connected Components in MapReduce and Beyond", SoCC 2014): each round groups edges by
 * vertex with one all-to-all exchange, and the rounds repeat until the edge set stops
 * changing, when every component is a star around its minimum. No rank ever holds more
 * than its share of the edges. With one rank (or `local`): union-find.
 */
#ifndef SL_DEDUP_COMPONENTS_H
#define SL_DEDUP_COMPONENTS_H

#include <stddef.h>
#include <stdint.h>

#include "curate/dedup/lsh.h"

struct sl_world;

/* Collective. Takes ownership of *edges (n of them; freed). On success *labels holds
 * (vertex, root) pairs as struct dd_edge {u = vertex, v = root}: one per vertex that
 * touches any edge on any rank, the root included (v == u); spread over the ranks (which
 * rank holds which is unspecified). *rounds (may be NULL) gets the number of rounds. */
int dd_components(const struct sl_world *w, struct dd_edge *edges, size_t n, int force_star,
                  struct dd_edge **labels, size_t *nlabels, unsigned *rounds);

#endif
