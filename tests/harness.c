/* The unit-test runner: registration, failure reporting, temporary directories. */
#include "tests/harness.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static struct sl_test *head, *tail;
static int current_failed;
static jmp_buf stop_jmp;
static char tmpdir[512];

void sl_test_register(struct sl_test *t)
{
    if (tail)
        tail->next = t;
    else
        head = t;
    tail = t;
}

void sl_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "  %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    current_failed = 1;
}

void sl_test_stop(void)
{
    longjmp(stop_jmp, 1);
}

const char *sl_test_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof(tmpdir), "%s/sluice-test-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(1);
        }
    }
    return tmpdir;
}

const char *sl_test_fixture(const char *rel)
{
    static char path[1024];
    const char *dir = getenv("SLUICE_TEST_DATA");
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/fixtures", rel);
    return path;
}

const char *sl_test_write(const char *name, const void *data, size_t n)
{
    static char path[1024];
    snprintf(path, sizeof(path), "%s/%s", sl_test_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        perror(path);
        exit(1);
    }
    fclose(f);
    return path;
}

static void remove_tmpdir(void)
{
    if (!tmpdir[0])
        return;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    tmpdir[0] = '\0';
}

/* Run one test; 1 if it passed. Separate from main so longjmp clobbers nothing there. */
static int run_one(struct sl_test *t)
{
    current_failed = 0;
    if (setjmp(stop_jmp) == 0)
        t->fn();
    return !current_failed;
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    const char *filter = argc > 1 ? argv[1] : NULL;
    /* no compiled-vocabulary cache unless a test asks for one (in its own folder) */
    setenv("SLUICE_CACHE_DIR", "", 1);
    for (struct sl_test *t = head; t; t = t->next) {
        if (filter && strncmp(t->name, filter, strlen(filter)) != 0)
            continue;
        if (!run_one(t)) {
            fprintf(stderr, "FAIL %s (%s)%s%s\n", t->name, t->file, tmpdir[0] ? ", files kept in " : "",
                    tmpdir);
            tmpdir[0] = '\0';
            failed++;
        } else {
            remove_tmpdir();
            passed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
