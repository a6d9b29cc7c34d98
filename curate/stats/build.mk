# curate/stats: `sluice stats`, aggregate statistics of documents (lengths, languages,
# sources, filter score histograms, a pipeline's funnel) as JSON and SVG.
LIB_SRCS += curate/stats/cmd_stats.c
