#include "symbols/frames.h"

#include <stdio.h>

#define INLINE_MAX 16

void churn_frame_where(uint64_t ip, const churn_frame *f, char *buf, size_t len)
{
    if (f->module)
        snprintf(buf, len, "%s+0x%llx", f->module, (unsigned long long)(ip - f->bias));
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)ip);
}

void churn_frame_function(uint64_t ip, const churn_frame *f, char *buf, size_t len)
{
    if (f->function)
        snprintf(buf, len, "%s", f->function);
    else if (f->entry && f->module)
        snprintf(buf, len, "%s+0x%llx", f->module, (unsigned long long)f->entry);
    else
        churn_frame_where(ip, f, buf, len);
}

static void format_frame(uint64_t ip, const churn_frame *f, char *buf, size_t len)
{
    char where[256], function[512];
    churn_frame_where(ip, f, where, sizeof where);
    churn_frame_function(ip, f, function, sizeof function);
    if (f->function && f->file)
        snprintf(buf, len, "%s (%s:%u)", f->function, f->file, f->line);
    else if (f->function || (f->entry && f->module))
        snprintf(buf, len, "%s (%s)", function, where);
    else
        snprintf(buf, len, "%s", where);
}

void churn_frames_missing(uint64_t stack, char *buf, size_t len)
{
    if (stack)
        snprintf(buf, len, "<stack %llu not in the trace>", (unsigned long long)stack);
    else
        snprintf(buf, len, "<no stack recorded>");
}

size_t churn_frames_each(const churn_frames_source *src, uint64_t stack, size_t max,
                         churn_frame_fn fn, void *ctx)
{
    size_t depth;
    const uint64_t *ips = churn_stack_defs_get(src->stacks, stack, &depth);
    char buf[1024];
    if (!ips) {
        churn_frames_missing(stack, buf, sizeof buf);
        fn(ctx, buf);
        return 1;
    }
    size_t emitted = 0, total = 0;
    uint64_t generation = churn_stack_defs_generation(src->stacks, stack);
    churn_frame frames[INLINE_MAX];
    /* Every recorded ip is a return address, the innermost one too (the return from the call
       of the allocation function): each is looked up at its call instruction, or an inlined
       allocation would show at the caller's next line. */
    for (size_t i = 0; i < depth; i++) {
        size_t n = churn_symbolizer_resolve(src->sym, ips[i], 1, generation, frames,
                                            INLINE_MAX);
        for (size_t k = 0; k < n; k++, total++) {
            if (max && emitted >= max)
                continue;
            format_frame(ips[i], &frames[k], buf, sizeof buf);
            fn(ctx, buf);
            emitted++;
        }
    }
    return total;
}
