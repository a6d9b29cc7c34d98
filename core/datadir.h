/* sluice's data directory: the files an installed sluice ships besides the binary
 * (configs/: pipelines, models, Punkt sentence-splitter models; examples/). */
#ifndef SL_DATADIR_H
#define SL_DATADIR_H

/* $SLUICE_DATA_DIR, else PREFIX/share/sluice beside an installed binary (PREFIX/bin or
 * PREFIX/libexec/sluice), else the source tree of a build (SRC/build/sluice): the first
 * that has configs/pipelines/. NULL when none is found. Found once, then remembered. */
const char *sl_data_dir(void);

#endif
