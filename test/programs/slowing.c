/*
 * Per-epoch work that slows down as a structure grows: every epoch adds a batch of nodes to a
 * list that is never trimmed and then walks the whole list, as a garbage collector walks a
 * growing heap.  The analyzer must see epoch duration climb with the live heap.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "churn.h"

#define NODES_PER_EPOCH 2000

struct node {
    struct node *next;
    uint64_t value;
};

static __attribute__((noinline)) struct node *grow(struct node *head, uint64_t epoch)
{
    for (int i = 0; i < NODES_PER_EPOCH; i++) {
        struct node *n = malloc(sizeof *n);
        if (!n) {
            fprintf(stderr, "slowing: out of memory\n");
            exit(1);
        }
        n->value = epoch * NODES_PER_EPOCH + (uint64_t)i;
        n->next = head;
        head = n;
    }
    return head;
}

/* 200 passes over the list: the walk, not the allocations, dominates an epoch, and all but the
   first few epochs take well over the millisecond within which ticks share one reading of the
   CPU time (shim/record/epoch.c). */
static __attribute__((noinline)) uint64_t walk(const struct node *head)
{
    uint64_t sum = 0;
    for (int pass = 0; pass < 200; pass++)
        for (const struct node *n = head; n; n = n->next)
            sum += n->value ^ (uint64_t)pass;
    return sum;
}

int main(int argc, char **argv)
{
    int epochs = argc > 1 ? atoi(argv[1]) : 100;
    struct node *head = NULL;
    uint64_t check = 0;
    for (int e = 0; e < epochs; e++) {
        churn_epoch_begin();
        head = grow(head, (uint64_t)e);
        check += walk(head);
    }
    printf("slowing: %d epochs, checksum %llu\n", epochs, (unsigned long long)check);
    return 0;
}
