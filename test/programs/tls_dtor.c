/*
 * Thread-specific data destructors that allocate and free after libchurn's own per-thread
 * destructor has run: the program's key is created in main, after libchurn's (made when the
 * first thread registered), and glibc runs key destructors in key order.  In the "work"
 * epoch THREADS threads each keep BLOCKS blocks in a state hung on the key and return; the
 * destructor frees them and the state, then allocates a farewell block and sets the key again,
 * so a second destructor round frees that one.  Every event of those rounds happens while the
 * thread is exiting and must reach the trace.
 */
#include <pthread.h>

#include "probe.h"

#define THREADS 4
#define BLOCKS 10
#define BLOCK_SIZE 200
#define FAREWELL_SIZE 333

struct state {
    void *blocks[BLOCKS];
};

static pthread_key_t key;
static pthread_barrier_t go;

static __attribute__((noinline)) void farewell_free(void *p)
{
    free(p);
}

static void destructor(void *value)
{
    struct state *s = value;
    if (s->blocks[0] == s) { /* the farewell block: second round */
        farewell_free(s);
        return;
    }
    for (unsigned i = 0; i < BLOCKS; i++) {
        if (!filled(s->blocks[i], BLOCK_SIZE, i))
            die("block %u broken at thread exit", i);
        free(s->blocks[i]);
    }
    free(s);
    struct state *farewell = malloc(FAREWELL_SIZE);
    if (!farewell)
        die("malloc failed in a key destructor");
    farewell->blocks[0] = farewell;
    pthread_setspecific(key, farewell);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&go);
    struct state *s = malloc(sizeof *s);
    if (!s)
        die("malloc failed");
    for (unsigned i = 0; i < BLOCKS; i++) {
        s->blocks[i] = malloc(BLOCK_SIZE);
        if (!s->blocks[i])
            die("malloc failed");
        fill(s->blocks[i], BLOCK_SIZE, i);
    }
    pthread_setspecific(key, s);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    if (pthread_key_create(&key, destructor) || pthread_barrier_init(&go, NULL, THREADS + 1))
        die("pthread setup failed");
    for (unsigned i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, NULL))
            die("pthread_create failed");
    phase("work");
    pthread_barrier_wait(&go);
    for (unsigned i = 0; i < THREADS; i++)
        if (pthread_join(t[i], NULL))
            die("pthread_join failed");
    phase("end");
    phases_print();
    printf("expect %d %d\n", THREADS * (BLOCKS + 2),
           THREADS * (BLOCKS * BLOCK_SIZE + (int)sizeof(struct state) + FAREWELL_SIZE));
    return 0;
}
