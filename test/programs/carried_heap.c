/*
 * Objects a trace carries in without their addresses: `carried_heap fork OUT` keeps KEPT
 * blocks of KEPT_SIZE, forks, and the child (its trace begins at the fork, holding the
 * parent's blocks per callsite) runs EPOCHS epochs that each keep CHILD_KEPT blocks of
 * CHILD_SIZE and free as many temporaries, then writes to OUT the bytes its program counts
 * live: `live BYTES`, and its phases.  `carried_heap ring` keeps the same blocks and then
 * replaces blocks in SLOTS slots for EPOCHS_RING epochs, enough for a small ring to
 * overwrite the segments that allocated the kept ones; it prints the same line.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "probe.h"

#define KEPT 20000
#define KEPT_SIZE 1000
#define EPOCHS 6
#define CHILD_KEPT 50
#define CHILD_SIZE 2000
#define SLOTS 1000
#define EPOCHS_RING 300
#define PER_EPOCH 20000

static void *kept[KEPT];
static void *child_kept[EPOCHS * CHILD_KEPT];
static void *slot[SLOTS];
static size_t slot_size[SLOTS];

static __attribute__((noinline)) void keep_blocks(void)
{
    for (unsigned i = 0; i < KEPT; i++) {
        if (!(kept[i] = malloc(KEPT_SIZE)))
            die("malloc failed");
        fill(kept[i], KEPT_SIZE, i);
    }
}

static __attribute__((noinline)) void *child_block(unsigned i)
{
    void *p = malloc(CHILD_SIZE);
    if (!p)
        die("child: malloc failed");
    fill(p, CHILD_SIZE, i);
    return p;
}

static int child(const char *out)
{
    unsigned n = 0;
    for (unsigned e = 0; e < EPOCHS; e++) {
        phase_numbered("child", e);
        for (unsigned i = 0; i < CHILD_KEPT; i++) {
            child_kept[n] = child_block(n);
            n++;
            void *t = child_block(i);
            keep(t);
            free(t);
        }
        /* time for the writer to read the allocator's books at this epoch's end */
        usleep(20000);
    }
    phase("end");
    for (unsigned i = 0; i < KEPT; i++)
        if (!filled(kept[i], KEPT_SIZE, i))
            die("child: a kept block changed");
    FILE *f = fopen(out, "w");
    if (!f)
        die("cannot write %s", out);
    fprintf(f, "live %llu\n", (unsigned long long)KEPT * KEPT_SIZE + (unsigned long long)n * CHILD_SIZE);
    fclose(f);
    return 0;
}

static int ring(void)
{
    unsigned r = 1;
    for (unsigned e = 0; e < EPOCHS_RING; e++) {
        churn_epoch_begin();
        for (unsigned i = 0; i < PER_EPOCH; i++) {
            r = r * 1103515245u + 12345u;
            unsigned k = (r >> 8) % SLOTS;
            free(slot[k]);
            slot_size[k] = 64 + (r >> 20) % 512;
            if (!(slot[k] = malloc(slot_size[k])))
                die("malloc failed");
            memset(slot[k], 1, 8);
        }
        usleep(2000);
    }
    churn_epoch_begin();
    unsigned long long live = (unsigned long long)KEPT * KEPT_SIZE;
    for (unsigned k = 0; k < SLOTS; k++)
        live += slot[k] ? slot_size[k] : 0;
    printf("live %llu\n", live); /* stdout's buffer: allocated after the count */
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "fork") && strcmp(argv[1], "ring")) ||
        (!strcmp(argv[1], "fork") && argc != 3))
        die("usage: carried_heap fork OUT | carried_heap ring");
    keep_blocks();
    if (!strcmp(argv[1], "ring"))
        return ring();
    phase("parent");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork failed");
    if (pid == 0)
        _exit(child(argv[2]));
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
        die("the child failed");
    printf("child %d\n", (int)pid);
    return 0;
}
