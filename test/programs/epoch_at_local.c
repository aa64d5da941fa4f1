/* A function named as epoch_at.cc's handle_delivery but local to this file, so the executable's
   .symtab holds the name twice, this local definition first (ELF puts locals before globals):
   CHURN_EPOCH_AT's name means the global one (t_epoch_at.sh). */
#include <stdlib.h>

static __attribute__((noinline)) void handle_delivery(int i)
{
    void *volatile p = malloc(1000 + (size_t)i);
    free(p);
}

/* kept, never called: the local definition stays in the executable */
void (*volatile epoch_at_local_delivery)(int) = handle_delivery;
