/* The rule one return address reduces to (cfi.c keeps them, cfi_parse.c computes them from
   the CFI), private to the two.  Kind in the low two bits; a step's CFA register, where the
   caller's rbp is and the CFA's offset above them. */
#ifndef CHURN_CFI_RULE_H
#define CHURN_CFI_RULE_H

#include <stdint.h>

enum { KIND_EMPTY, KIND_STEP, KIND_END, KIND_SLOW };
#define RULE_KIND(r) ((r) & 3u)
#define RULE_CFA_RBP 4u                            /* CFA = rbp + offset, else rsp + offset */
#define RULE_RBP_SAVED 8u                          /* caller's rbp at CFA - 8 * slot */
#define RULE_RBP_SLOT(r) (((r) >> 4) & 0xffu)
#define RULE_CFA_OFF(r) ((r) >> 12)
#define CFA_OFF_MAX ((1u << 20) - 1)

/* The rule for code at ip (a return address - 1), read from the CFI of the loaded object
   that holds it, inside a dl_iterate_phdr callback so that the object stays mapped while it
   is read.  *unloaded is set when the loader unloaded something since the last call: the
   rules cached for other addresses may describe code that is gone. */
uint32_t churn_cfi_read_rule(uintptr_t ip, int *unloaded);
/* The same search for the FDE holding ip: the code it describes in [*lo, *hi), or -1. */
int churn_cfi_read_extent(uintptr_t ip, uintptr_t *lo, uintptr_t *hi, int *unloaded);

/* The rule for code at ip that no loaded object holds: code a runtime generated (jitrule.c). */
uint32_t churn_cfi_generated_rule(uintptr_t ip);

#endif
