/*
 * A recorded stack as the text reports print it: one string per frame, inlined frames
 * included, innermost first, each at most 1,023 bytes, where a long function name gives up
 * its middle before its location does.  "function (file:line)" when the symbolizer knows the
 * source, "function (module+0xoffset)" when it knows only the function, "module+0xstart
 * (module+0xoffset)" when no symbol names the function but the module's call frame
 * information says where it starts, "module+0xoffset" when it knows none of these,
 * "0xaddress" outside every module.
 */
#ifndef CHURN_FRAMES_H
#define CHURN_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "read/stacks.h"
#include "symbols/symbolize.h"

typedef void (*churn_frame_fn)(void *ctx, const char *frame);

typedef struct churn_frames_source {
    const churn_stack_defs *stacks;
    churn_symbolizer *sym;
} churn_frames_source;

/* Where frame f of recorded ip is: "module+0xoffset", or "0xaddress" outside every module.
   The module and its bias are the frame's own, of the module map of its stack's generation
   (where a library was unloaded and another loaded at its addresses, the newest module at
   ip may be another one, with another bias). */
void churn_frame_where(uint64_t ip, const churn_frame *f, char *buf, size_t len);

/* Copies text (len bytes) into out, cap bytes with the NUL; when it does not fit, "..."
   takes the place of its middle, so that both ends stay (a C++ name's scopes and its
   parameters), cut between UTF-8 characters. */
void churn_frame_fit(char *out, size_t cap, const char *text, size_t len);

/* The name of frame f's function: its own (shortened in its middle to fit), else
   "module+0xstart" (churn_frame's entry), else where the frame is (churn_frame_where). */
void churn_frame_function(uint64_t ip, const churn_frame *f, char *buf, size_t len);

/* Calls fn for the first `max` frames of stack id (all when max is 0); returns how many
   frames the whole stack has. */
/* The label of a stack the trace does not define (or of "no stack"). */
void churn_frames_missing(uint64_t stack, char *buf, size_t len);

size_t churn_frames_each(const churn_frames_source *src, uint64_t stack, size_t max,
                         churn_frame_fn fn, void *ctx);

#endif
