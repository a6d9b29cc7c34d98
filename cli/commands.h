/* The commands of the sluice binary. Each is implemented in its component's folder and
 * registered in the table in cli/main.c. A command gets argv[0] = its name and returns
 * 0 (ok), 1 (failure) or 2 (usage error); it prints its own usage on -h (stdout, 0). */
#ifndef SL_CLI_COMMANDS_H
#define SL_CLI_COMMANDS_H

int cmd_reshard(int argc, const char **argv);
int cmd_download(int argc, const char **argv);
int cmd_extract(int argc, const char **argv);
int cmd_tokenize(int argc, const char **argv);
int cmd_tokenizer(int argc, const char **argv);
int cmd_dataset(int argc, const char **argv);
int cmd_dedup(int argc, const char **argv);
int cmd_clean(int argc, const char **argv);
int cmd_decontaminate(int argc, const char **argv);
int cmd_filter(int argc, const char **argv);
int cmd_classifier(int argc, const char **argv);
int cmd_stats(int argc, const char **argv);
int cmd_train(int argc, const char **argv);
int cmd_generate(int argc, const char **argv);
int cmd_export(int argc, const char **argv);
int cmd_run(int argc, const char **argv);

#endif
