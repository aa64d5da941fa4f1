/*
 * fork under the shim: `fork DIR`.  The parent keeps a few blocks, then forks two children.
 * Each child runs its own known pattern in its own epoch (CHILD_ALLOCS mallocs of CHILD_SIZE,
 * CHILD_FREES freed), writes its phase lines to DIR/child<N>.out and leaves, the first
 * through exit(), the second through _exit() as children usually do.  Meanwhile the parent
 * runs a different pattern in the epoch with the same number, so a trace holding the other
 * process's events shows up as wrong counts.  The parent prints its phases and each child's
 * pid (`child N PID`), and checks that the children exited with status 0.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

#define KEPT 5
#define KEPT_SIZE 300
#define CHILD_ALLOCS 7
#define CHILD_FREES 5
#define CHILD_SIZE 321
#define PARENT_ALLOCS 11
#define PARENT_SIZE 123

static void *kept[KEPT];

static __attribute__((noinline)) void *child_block(unsigned i)
{
    void *p = malloc(CHILD_SIZE);
    if (!p)
        die("child: malloc failed");
    fill(p, CHILD_SIZE, i);
    return p;
}

static __attribute__((noinline)) void *parent_block(unsigned i)
{
    void *p = malloc(PARENT_SIZE);
    if (!p)
        die("parent: malloc failed");
    fill(p, PARENT_SIZE, i);
    return p;
}

static void write_phases(const char *dir, int child)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/child%d.out", dir, child);
    if (!freopen(path, "w", stdout))
        die("child %d: cannot write %s", child, path);
    phases_print();
    if (fflush(stdout))
        die("child %d: cannot write %s", child, path);
}

static __attribute__((noreturn)) void run_child(const char *dir, int child)
{
    void *blocks[CHILD_ALLOCS];
    probe_phase_count = 0;
    for (unsigned i = 0; i < KEPT; i++)
        if (!filled(kept[i], KEPT_SIZE, i))
            die("child %d: a block inherited from the parent was overwritten", child);
    phase("child");
    for (unsigned i = 0; i < CHILD_ALLOCS; i++)
        blocks[i] = child_block(i);
    for (unsigned i = 0; i < CHILD_FREES; i++) {
        if (!filled(blocks[i], CHILD_SIZE, i))
            die("child %d: block %u was overwritten", child, i);
        free(blocks[i]);
    }
    phase("child_end");
    write_phases(dir, child);
    if (child == 1)
        exit(0);
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fork DIR\n");
        return 2;
    }
    for (unsigned i = 0; i < KEPT; i++) {
        kept[i] = malloc(KEPT_SIZE);
        if (!kept[i])
            die("malloc failed");
        fill(kept[i], KEPT_SIZE, i);
    }
    pid_t children[2];
    for (int c = 0; c < 2; c++) {
        fflush(stdout);
        children[c] = fork();
        if (children[c] < 0)
            die("fork failed");
        if (children[c] == 0)
            run_child(argv[1], c + 1);
    }
    phase("parent");
    void *blocks[PARENT_ALLOCS];
    for (unsigned i = 0; i < PARENT_ALLOCS; i++)
        blocks[i] = parent_block(i);
    for (unsigned i = 0; i < PARENT_ALLOCS; i++) {
        if (!filled(blocks[i], PARENT_SIZE, i))
            die("parent: block %u was overwritten", i);
        free(blocks[i]);
    }
    phase("parent_end");
    for (int c = 0; c < 2; c++) {
        int status;
        if (waitpid(children[c], &status, 0) != children[c])
            die("waitpid failed");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            die("child %d ended with wait status %d", c + 1, status);
    }
    phases_print();
    for (int c = 0; c < 2; c++)
        printf("child %d %d\n", c + 1, (int)children[c]);
    return 0;
}
