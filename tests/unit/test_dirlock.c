/* Tests for core/dirlock: one run at a time in a directory, ranks of an earlier run keep
 * the next one out, waiting, a lock file removed while waited for, nested holds. The other
 * runs are child processes holding the files with flock, as other sluice processes do. */
#include "tests/harness.h"

#include "core/alloc.h"
#include "core/dirlock.h"
#include "core/err.h"
#include "core/world.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child that locks DIR/.sluice/NAME with `how`, says so on `ready`, and exits when
 * `go` is closed or written to. With rm, it removes DIR/.sluice before exiting. */
static pid_t holder(const char *dir, const char *name, int how, int rm, int ready[2], int go[2])
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    close(ready[0]);
    close(go[1]);
    char p[700];
    snprintf(p, sizeof(p), "%s/.sluice", dir);
    mkdir(dir, 0777);
    mkdir(p, 0777);
    snprintf(p, sizeof(p), "%s/.sluice/%s", dir, name);
    int fd = open(p, O_RDWR | O_CREAT, 0666);
    if (fd < 0 || flock(fd, how) != 0)
        _exit(2);
    if (how == LOCK_EX) {
        const char *desc = "{\"pid\":4242,\"host\":\"elsewhere\",\"started\":\"T0\","
                           "\"command\":\"sluice extract --out x\"}\n";
        if (write(fd, desc, strlen(desc)) < 0)
            _exit(2);
    }
    char c = 1;
    if (write(ready[1], &c, 1) != 1)
        _exit(2);
    if (read(go[0], &c, 1) < 0)
        _exit(2);
    if (rm) {
        snprintf(p, sizeof(p), "%s/.sluice/lock", dir);
        unlink(p);
        snprintf(p, sizeof(p), "%s/.sluice/ranks.lock", dir);
        unlink(p);
        snprintf(p, sizeof(p), "%s/.sluice", dir);
        rmdir(p);
        rmdir(dir);
    }
    _exit(0);
}

struct child {
    pid_t pid;
    int ready[2], go[2];
};

static void start(struct child *c, const char *dir, const char *name, int how, int rm)
{
    REQUIRE(pipe(c->ready) == 0 && pipe(c->go) == 0);
    c->pid = holder(dir, name, how, rm, c->ready, c->go);
    REQUIRE(c->pid > 0);
    close(c->ready[1]);
    close(c->go[0]);
    char x;
    REQUIRE(read(c->ready[0], &x, 1) == 1); /* it holds the lock now */
    close(c->ready[0]);
}

/* Let the child go and reap it. */
static void stop(struct child *c)
{
    if (c->go[1] >= 0)
        close(c->go[1]);
    c->go[1] = -1;
    int status = 0;
    waitpid(c->pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void let_go(void *ctx, const char *dir, const char *holder_desc)
{
    struct child *c = ctx;
    (void)dir;
    CHECK_CONTAINS(holder_desc, "pid 4242 on host 'elsewhere', started T0: sluice extract");
    close(c->go[1]); /* it ends while we wait */
    c->go[1] = -1;
}

static char *lock_text(const char *dir)
{
    char *p = sl_dirlock_path(dir), buf[512] = "";
    FILE *f = fopen(p, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    free(p);
    return sl_xstrdup(buf);
}

TEST(dirlock_busy_names_the_holder)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/out", sl_test_tmpdir());
    struct sl_dirlock *l = NULL;
    struct child c;
    start(&c, dir, "lock", LOCK_EX, 0);
    struct sl_dirlock_opts o = { .command = "sluice clean --out out" };
    CHECK_EQ_INT(sl_dirlock_acquire(&l, sl_world_get(), dir, &o), SL_ERR_BUSY);
    CHECK(l == NULL);
    CHECK_CONTAINS(sl_err_msg(), "is in use by another run (pid 4242 on host 'elsewhere', "
                                 "started T0: sluice extract --out x)");
    CHECK_CONTAINS(sl_err_msg(), "--wait");
    stop(&c);
    /* free again: taken, described */
    REQUIRE(sl_dirlock_acquire(&l, sl_world_get(), dir, &o) == 0);
    char *t = lock_text(dir), want[64];
    snprintf(want, sizeof(want), "{\"pid\":%ld,", (long)getpid());
    CHECK_CONTAINS(t, want);
    CHECK_CONTAINS(t, "\"command\":\"sluice clean --out out\"");
    free(t);
    sl_dirlock_release(l);
}

TEST(dirlock_orphan_ranks_keep_the_next_run_out)
{
    /* a rank of an earlier run, its rank 0 gone: it holds ranks.lock shared only */
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/out", sl_test_tmpdir());
    struct child c;
    start(&c, dir, "ranks.lock", LOCK_SH, 0);
    struct sl_dirlock *l = NULL;
    CHECK_EQ_INT(sl_dirlock_acquire(&l, sl_world_get(), dir, NULL), SL_ERR_BUSY);
    CHECK_CONTAINS(sl_err_msg(), "still written by ranks of an earlier run");
    stop(&c);
    REQUIRE(sl_dirlock_acquire(&l, sl_world_get(), dir, NULL) == 0);
    sl_dirlock_release(l);
}

TEST(dirlock_wait)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/out", sl_test_tmpdir());
    struct child c;
    start(&c, dir, "lock", LOCK_EX, 0);
    struct sl_dirlock *l = NULL;
    struct sl_dirlock_opts o = { .wait = 1, .on_wait = let_go, .ctx = &c };
    REQUIRE(sl_dirlock_acquire(&l, sl_world_get(), dir, &o) == 0);
    CHECK(c.go[1] == -1); /* it waited */
    stop(&c);
    sl_dirlock_release(l);
}

TEST(dirlock_file_removed_while_waiting)
{
    /* the holder removes the directory as it ends (tokenize's parts folder): the waiter
     * must lock the file that is there now, not the removed one */
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/parts", sl_test_tmpdir());
    struct child c;
    start(&c, dir, "lock", LOCK_EX, 1);
    struct sl_dirlock *l = NULL;
    struct sl_dirlock_opts o = { .wait = 1, .on_wait = let_go, .ctx = &c };
    REQUIRE(sl_dirlock_acquire(&l, sl_world_get(), dir, &o) == 0);
    stop(&c);
    char *t = lock_text(dir), want[64];
    snprintf(want, sizeof(want), "{\"pid\":%ld,", (long)getpid());
    CHECK_CONTAINS(t, want); /* the lock file at the path is ours */
    free(t);
    /* and it is held: another process cannot take it */
    char *p = sl_dirlock_path(dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(p, O_RDWR);
        _exit(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    free(p);
    sl_dirlock_release(l);
}

TEST(dirlock_nested_in_one_process)
{
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/out", sl_test_tmpdir());
    struct sl_dirlock *a = NULL, *b = NULL;
    REQUIRE(sl_dirlock_acquire(&a, sl_world_get(), dir, NULL) == 0);
    REQUIRE(sl_dirlock_acquire(&b, sl_world_get(), dir, NULL) == 0);
    CHECK(a == b);
    sl_dirlock_release(b);
    /* still held after the inner release */
    char *p = sl_dirlock_path(dir);
    for (int round = 0; round < 2; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open(p, O_RDWR);
            _exit(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 ? 1 : 0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == round); /* held, then free */
        if (round == 0)
            sl_dirlock_release(a);
    }
    free(p);
}
