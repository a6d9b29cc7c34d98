/* The commands of curate/. Declared here and gathered by cli/commands.h
 * into the command table of cli/main.c (docs/dev.md, Layers). */
#ifndef SL_CURATE_COMMANDS_H
#define SL_CURATE_COMMANDS_H

int cmd_reshard(int argc, const char **argv);
int cmd_download(int argc, const char **argv);
int cmd_extract(int argc, const char **argv);
int cmd_dedup(int argc, const char **argv);
int cmd_clean(int argc, const char **argv);
int cmd_filter(int argc, const char **argv);
int cmd_decontaminate(int argc, const char **argv);
int cmd_classifier(int argc, const char **argv);
int cmd_stats(int argc, const char **argv);

#endif
