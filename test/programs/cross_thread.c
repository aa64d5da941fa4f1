/*
 * Producers allocate, consumers free: PRODUCERS threads malloc blocks in xt_alloc and pass
 * them through a queue to CONSUMERS threads, which free them.  The allocator hands a block a
 * consumer freed back to a producer, so an address is freed on one thread and allocated
 * again on another, often within one epoch; the program counts how often (a producer gets an
 * address still in the ring of recently freed ones).  LEFT blocks stay in the queue, live at
 * exit.  A consumer grows every fourth block with realloc before freeing it (the realloc
 * frees the old address inside the allocator, where a producer may get it at once).  Every
 * free must pair with its own allocation in the trace: none is a free of an object never
 * allocated, and exactly LEFT blocks of xt_alloc are left live.
 */
#include <pthread.h>

#include "probe.h"

#define PRODUCERS 8
#define CONSUMERS 8
#define PER_PRODUCER 20000
#define LEFT 7
#define QUEUE 64
#define RECENT 4096

static void *queue[QUEUE];
static unsigned q_head, q_tail, q_taken, q_limit;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_room = PTHREAD_COND_INITIALIZER, q_items = PTHREAD_COND_INITIALIZER;
static uintptr_t recent[RECENT]; /* addresses consumers freed lately, under q_lock */
static unsigned recent_pos;
static unsigned long reused, freed;

static __attribute__((noinline)) void *xt_alloc(unsigned i)
{
    size_t size = 16 + (i % 9) * 24;
    unsigned char *p = malloc(size);
    if (!p)
        die("malloc failed");
    memset(p, (int)(i & 0xff), size);
    return p;
}

static void *producer(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    for (unsigned k = 0; k < PER_PRODUCER; k++) {
        void *p = xt_alloc(id * PER_PRODUCER + k);
        pthread_mutex_lock(&q_lock);
        for (unsigned r = 0; r < RECENT; r++)
            if (recent[r] == (uintptr_t)p) {
                reused++;
                recent[r] = 0;
                break;
            }
        while (q_head - q_tail == QUEUE)
            pthread_cond_wait(&q_room, &q_lock);
        queue[q_head++ % QUEUE] = p;
        pthread_cond_signal(&q_items);
        pthread_mutex_unlock(&q_lock);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&q_lock);
        while (q_head == q_tail && q_taken < q_limit)
            pthread_cond_wait(&q_items, &q_lock);
        if (q_taken == q_limit) {
            pthread_cond_broadcast(&q_items);
            pthread_mutex_unlock(&q_lock);
            return NULL;
        }
        void *p = queue[q_tail++ % QUEUE];
        q_taken++;
        recent[recent_pos++ % RECENT] = (uintptr_t)p;
        freed++;
        pthread_cond_signal(&q_room);
        pthread_mutex_unlock(&q_lock);
        if (((uintptr_t)p >> 4) % 4 == 0) {
            void *q = realloc(p, 4096);
            if (!q)
                die("realloc failed");
            p = q;
        }
        free(p);
    }
}

int main(void)
{
    pthread_t p[PRODUCERS], c[CONSUMERS];
    q_limit = PRODUCERS * PER_PRODUCER - LEFT;
    phase("cross");
    for (unsigned i = 0; i < CONSUMERS; i++)
        if (pthread_create(&c[i], NULL, consumer, NULL))
            die("pthread_create failed");
    for (unsigned i = 0; i < PRODUCERS; i++)
        if (pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)i))
            die("pthread_create failed");
    for (unsigned i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (unsigned i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    phase("after");
    if (q_head - q_tail != LEFT || freed != q_limit)
        die("queue left %u blocks, %lu freed", q_head - q_tail, freed);
    phases_print();
    printf("blocks %d left %d reused %lu\n", PRODUCERS * PER_PRODUCER, LEFT, reused);
    return 0;
}
