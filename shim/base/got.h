/* got.c: a loaded object's imports, by the GOT slots its code calls them through. */
#ifndef CHURN_GOT_H
#define CHURN_GOT_H

#include <stdint.h>

typedef struct churn_got_slot {
    const char *name; /* the symbol imported */
    void **slot;
    int lazy; /* a JUMP_SLOT not bound yet: it points into the object's own PLT */
    uintptr_t relro_lo, relro_hi; /* the object's RELRO pages */
} churn_got_slot;
typedef void (*churn_got_fn)(const churn_got_slot *s, void *ctx);

/* fn on each import of the object loaded at base under that name (dl_iterate_phdr's). */
void churn_got_each(uintptr_t base, const char *name, churn_got_fn fn, void *ctx);
/* Points the slot at to, through the RELRO protection; 0, or -1 when it cannot. */
int churn_got_set(const churn_got_slot *s, void *to);

#endif
