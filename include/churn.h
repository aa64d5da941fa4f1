/*
 * libchurn public API.
 *
 * A program marks the start of each epoch (a request, a delivery, a time slice) by calling
 * churn_epoch_begin().  The call costs nothing when libchurn is not preloaded: churn_epoch is
 * a weak reference that stays NULL unless libchurn.so is in the process, so the same binary
 * runs unchanged with and without the tracer, and needs no link flag.
 *
 * libchurn.so exports churn_epoch_begin as well, for programs that cannot include this header:
 * dlsym(RTLD_DEFAULT, "churn_epoch_begin"), a weak declaration of their own, or Python's
 * ctypes.CDLL(None).churn_epoch_begin() under LD_PRELOAD (docs/usage.md, epochs).
 */
#ifndef CHURN_H
#define CHURN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Begins a new epoch and returns its number (the first epoch of a process is 0). */
uint64_t churn_epoch(void) __attribute__((weak));

/* Returns the current epoch number. */
uint64_t churn_epoch_current(void) __attribute__((weak));

static inline uint64_t churn_epoch_begin(void)
{
    return churn_epoch ? churn_epoch() : 0;
}

#ifdef __cplusplus
}
#endif

#endif
