#include "report/verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/trends.h"
#include "base/util.h"
#include "churn/engines.h"
#include "churn/runtime_heaps.h"

/* Functions are named while those named hold less than this share of the growth, and only
   those holding at least LEAST_SHARE of it. */
#define NAMED_SHARE 0.9
#define LEAST_SHARE 0.1
/* A function reached by this many stacks is named with its callers in the one that grew most. */
#define MANY_STACKS 4

static const char *binary(double v, char *buf, size_t len)
{
    return churn_report_binary(v, "B", buf, len);
}

/* "+72B", "-1.1KiB" */
static const char *signed_binary(double v, char *buf, size_t len)
{
    char b[32];
    snprintf(buf, len, "%s%s", v < 0 ? "" : "+", churn_report_binary(v, "B", b, sizeof b));
    return buf;
}

int churn_verdict_direction(double slope, double bound)
{
    if (bound >= 0 && slope <= bound && slope >= -bound)
        return 0;
    return slope < 0 ? -1 : 1;
}

/* "+72B", "+1.1KiB +-9.0KiB" (without the sign when unsigned): a bound that rounds to nothing
   is not printed, the fit's residuals being under half a byte. */
static void estimate(FILE *f, double v, double bound, int sign)
{
    char b[32], c[32];
    fputs(sign ? signed_binary(v, b, sizeof b) : binary(v, b, sizeof b), f);
    if (bound >= 0.5)
        fprintf(f, " +-%s", binary(bound, c, sizeof c));
}

static FILE *sentence(char **text, size_t *len)
{
    FILE *f = open_memstream(text, len);
    if (!f) {
        fputs("churn-analyze: out of memory\n", stderr);
        exit(1);
    }
    return f;
}

/* Closes f, whose text (open_memstream's) is there once it is closed. */
static void say(churn_verdict *v, FILE *f, char **text)
{
    if (fclose(f) != 0) {
        fputs("churn-analyze: out of memory\n", stderr);
        exit(1);
    }
    if (v->nsentences < CHURN_VERDICT_SENTENCES)
        v->sentences[v->nsentences++] = *text;
    else
        free(*text);
}

/* A function as the rankings name it: "name (module)" (the module by the name the program
   was run as: "redis-server [redis-check-rdb]"), or "module+0xstart". */
static void function_name(FILE *f, const churn_verdict *v, const churn_function *fn)
{
    const char *module = fn->module ? fn->module : "?";
    if (!fn->name)
        fprintf(f, "%s+0x%llx", module, (unsigned long long)fn->offset);
    else if (v->has_run_as && !strcmp(module, v->file))
        fprintf(f, "%s (%s [%s])", fn->name, v->run_as, v->file);
    else
        fprintf(f, "%s (%s)", fn->name, module);
}

/* The stack of the function row `row` (of table t, whose callsites are g's) that grew most, or
   held most at the end when levels. */
static uint64_t top_stack(const churn_growth *g, const churn_growth *t,
                          const churn_callsite *row, int levels)
{
    size_t index = (size_t)(row - t->sites) + 1;
    uint64_t best = 0;
    double most = 0;
    for (size_t i = 0; i < g->count; i++) {
        const churn_callsite *s = &g->sites[i];
        double by = levels ? (double)s->live_bytes : churn_fit_slope(&s->bytes_fit);
        if (s->parent == index && (!best || by > most)) {
            best = s->stack;
            most = by;
        }
    }
    return best;
}

static void describe(churn_verdict_function *d, churn_analysis *a, churn_functions *f,
                     const churn_growth *g, const churn_callsite *row, double value,
                     double total, int levels)
{
    d->row = row;
    d->fn = churn_functions_of(f, row);
    d->bytes_per_epoch = levels ? 0 : churn_fit_slope(&row->bytes_fit);
    d->bytes_bound = levels ? 0 : churn_fit_slope_bound(&row->bytes_fit);
    d->count_per_epoch = levels ? 0 : churn_fit_slope(&row->count_fit);
    d->share = total > 0 ? value / total : 0;
    d->retained = f == &a->functions
                      ? churn_report_retention(a, &f->growth, row)
                      : churn_growth_retention(&f->growth, row, churn_analysis_ending(a));
    d->stack = top_stack(g, &f->growth, row, levels);
    /* A function many stacks reach (an allocation helper of the program's own): the named
       callers of the stack that grew most say which of them grows. */
    d->ncallers =
        d->stack && d->fn->stacks >= MANY_STACKS
            ? churn_functions_callers(f, d->fn, d->stack, d->callers, CHURN_VERDICT_CALLERS)
            : 0;
}

/* The functions that hold the growth: by growth per epoch, or in a window of one epoch by
   what they hold live at its end. */
static void holders(churn_verdict *v, churn_analysis *a, const churn_report_options *o)
{
    churn_report_options all = *o;
    all.top = 0;
    size_t n;
    churn_callsite **rows = churn_report_functions(a, &all, &n);
    int levels = v->split.levels;
    double total = 0, named = 0;
    for (size_t i = 0; i < n; i++) {
        double by = levels ? (double)rows[i]->live_bytes : churn_fit_slope(&rows[i]->bytes_fit);
        if (by > 0)
            total += by;
    }
    for (size_t i = 0; i < n && v->nfunctions < CHURN_VERDICT_FUNCTIONS; i++) {
        double by = levels ? (double)rows[i]->live_bytes : churn_fit_slope(&rows[i]->bytes_fit);
        double bound = levels ? 0 : churn_fit_slope_bound(&rows[i]->bytes_fit);
        if (by < 0.5 || churn_verdict_direction(by, bound) <= 0 ||
            named >= NAMED_SHARE * total || (v->nfunctions && by < LEAST_SHARE * total))
            continue;
        describe(&v->functions[v->nfunctions++], a, &a->functions, &a->growth, rows[i], by,
                 total, levels);
        named += by;
    }
    free(rows);
}

/* The function whose own mmap calls grew most (or hold most, levels), and whose runtime's
   own heap that is, when one of its frames is a runtime heap's entry point. */
static void mappings(churn_verdict *v, churn_analysis *a)
{
    if (!a->sym)
        return;
    size_t n;
    churn_callsite **rows = churn_functions_sorted(&a->map_functions, 0, &n);
    const churn_callsite *best = NULL;
    double most = 0;
    for (size_t i = 0; i < n; i++) {
        double by = v->split.levels ? (double)rows[i]->live_bytes
                                    : churn_fit_slope(&rows[i]->bytes_fit);
        if (by >= 1 && (!best || by > most)) {
            best = rows[i];
            most = by;
        }
    }
    free(rows);
    if (!best)
        return;
    v->has_mapping = 1;
    describe(&v->mapping, a, &a->map_functions, &a->mappings, best, most, most,
             v->split.levels);
    /* a runtime's own heap, by the module that maps it or an entry point on the way */
    const char *module = v->mapping.fn->module;
    for (size_t i = 0; i < CHURN_N_RUNTIME_HEAPS && !v->runtime; i++)
        if ((module && strstr(module, churn_runtime_heaps[i].module)) ||
            churn_functions_stack_calls(&a->map_functions, v->mapping.stack,
                                        churn_runtime_heaps[i].symbol))
            v->runtime = &churn_runtime_heaps[i];
}

/* Own mmap is what outside grew that the program's own mappings explain, at most all of it:
   its bound is the one of the slope it took (mapped's or outside's), and not traced's that of
   the difference it is, or of outside when own mmap explains none of it. */
static void untraced_parts(churn_verdict *v)
{
    const churn_split *s = &v->split;
    double outside = s->v[CHURN_SPLIT_OUTSIDE], mapped = s->v[CHURN_SPLIT_MAPPED];
    double ceiling = outside > 0 ? outside : 0;
    double mine = mapped < 0 ? 0 : mapped > ceiling ? ceiling : mapped;
    v->part[CHURN_VERDICT_OWN_MMAP] = mine;
    v->part[CHURN_VERDICT_NOT_TRACED] = outside - mine;
    v->bound[CHURN_VERDICT_OWN_MMAP] = mapped > ceiling && ceiling > 0
                                           ? s->bound[CHURN_SPLIT_OUTSIDE]
                                           : s->bound[CHURN_SPLIT_MAPPED];
    v->bound[CHURN_VERDICT_NOT_TRACED] =
        mine > 0 ? s->unmapped_bound : s->bound[CHURN_SPLIT_OUTSIDE];
}

static void parts(churn_verdict *v, churn_analysis *a)
{
    const churn_steady *w = &a->steady;
    v->split = churn_split_fit(&a->frag, w->first, w->last);
    for (size_t k = 0; k < CHURN_SPLIT_PARTS; k++) {
        v->part[k] = v->split.v[k];
        v->bound[k] = v->split.bound[k];
    }
    untraced_parts(v);
    churn_trends t = churn_trends_compute(&a->epochs, w->first, w->last);
    v->rss_per_epoch = t.rss_bytes_per_epoch;
    v->live_per_epoch = t.live_bytes_per_epoch;
    v->rss_bound = churn_fit_slope_bound(&a->epochs.fits.rss);
    v->live_bound = churn_fit_slope_bound(&a->epochs.fits.live);
    for (size_t i = 0; i < a->epochs.count && !v->has_rss; i++)
        v->has_rss = a->epochs.rows[i].has_summary && a->epochs.rows[i].rss_bytes;
}

/* "live +72B, slack +0B, ..." (levels: without signs) */
static void part_list(FILE *f, const churn_verdict *v)
{
    static const struct {
        int part;
        const char *name;
    } list[] = {{CHURN_SPLIT_LIVE, "live"},
                {CHURN_SPLIT_SLACK, "slack"},
                {CHURN_SPLIT_PINNED, "pinned"},
                {CHURN_SPLIT_FREE, "free-resident"},
                {CHURN_SPLIT_OVERHEAD, "allocator overhead"},
                {CHURN_VERDICT_OWN_MMAP, "own mmap"},
                {CHURN_VERDICT_NOT_TRACED, "not traced"},
                {CHURN_SPLIT_LIBCHURN, "libchurn"}};
    for (size_t i = 0; i < sizeof list / sizeof *list; i++) {
        int k = list[i].part;
        if (k == CHURN_SPLIT_FREE && v->split.free_with_outside)
            continue;
        /* At one epoch's end what nothing traced holds includes the code, stacks and
           libraries any process has: only growth tells untraced memory apart. */
        const char *name = list[i].name;
        if (k == CHURN_VERDICT_NOT_TRACED)
            name = v->split.levels              ? (v->split.free_with_outside
                                                       ? "free-resident and outside anything traced"
                                                       : "outside anything traced")
                   : v->split.free_with_outside ? "free-resident and not traced"
                                                : "not traced";
        fprintf(f, "%s%s ", i ? ", " : "", name);
        estimate(f, v->part[k], v->split.levels ? 0 : v->bound[k], !v->split.levels);
    }
}

/* "RSS grows about 6.3KiB +-1.2KiB per epoch over epochs 5..422 (95% bounds)", or that it does
   not measurably grow or shrink when the bound covers zero. */
static void slope_clause(FILE *f, const char *what, int plural, double slope, double bound,
                         const churn_steady *w)
{
    const char *s = plural ? "" : "s";
    unsigned long long first = w->first, last = w->last;
    int way = churn_verdict_direction(slope, bound);
    if (!way) {
        fprintf(f, "%s do%s not measurably grow or shrink over epochs %llu..%llu (", what,
                plural ? "" : "es", first, last);
        estimate(f, slope, bound, 1);
        fputs(" per epoch, 95% bounds)", f);
        return;
    }
    fprintf(f, "%s %s%s %s", what, way < 0 ? "shrink" : "grow", s,
            bound >= 0.5 ? "about " : "");
    estimate(f, way < 0 ? -slope : slope, bound, 0);
    fprintf(f, " per epoch over epochs %llu..%llu (%s)", first, last,
            bound < 0 ? "two readings: no bounds" : "95% bounds");
}

static void rss_sentence(churn_verdict *v, const churn_analysis *a)
{
    char *text, b[32];
    size_t len;
    FILE *f = sentence(&text, &len);
    const churn_steady *w = &a->steady;
    if (v->split.epochs && v->split.levels) {
        if (churn_report_single_epoch(a))
            fprintf(f, "In its only epoch RSS reached %s: ",
                    binary(v->part[CHURN_SPLIT_RSS], b, sizeof b));
        else
            fprintf(f, "At epoch %llu RSS was %s: ", (unsigned long long)v->split.first,
                    binary(v->part[CHURN_SPLIT_RSS], b, sizeof b));
        part_list(f, v);
    } else if (v->split.epochs) {
        slope_clause(f, "RSS", 0, v->part[CHURN_SPLIT_RSS], v->bound[CHURN_SPLIT_RSS], w);
        fputs(": ", f);
        part_list(f, v);
    } else if (v->has_rss) {
        slope_clause(f, "RSS", 0, v->rss_per_epoch, v->rss_bound, w);
        fputs(", live bytes ", f);
        estimate(f, v->live_per_epoch, v->live_bound, 1);
        fputs("; without events or an allocator model the rest is not split", f);
    } else {
        slope_clause(f, "Live bytes", 1, v->live_per_epoch, v->live_bound, w);
        fputs("; the trace has no RSS reading to split", f);
    }
    fputc('.', f);
    say(v, f, &text);
}

static const char *retention_words(const churn_retained *r)
{
    switch (r->kind) {
    case CHURN_RETENTION_LEAKED:
        return "leaked";
    case CHURN_RETENTION_KEPT:
        return "kept until the exit's teardown freed it";
    case CHURN_RETENTION_RECLAIMED:
        return "reclaimed in bulk";
    case CHURN_RETENTION_LIVE:
        return "live at end";
    default:
        return "steady";
    }
}

/* Objects per epoch as the rankings print them: three significant digits below 1000 (a
   fraction stays one), whole numbers above (2000, not %g's 2e+03). */
static const char *count_rate(double v, char *buf, size_t len)
{
    snprintf(buf, len, v > -1000 && v < 1000 ? "%+.3g" : "%+.0f", v);
    return buf;
}

static void holder_clause(FILE *f, const churn_verdict *v, const churn_verdict_function *d)
{
    char b[32], rate[32];
    int levels = v->split.levels;
    function_name(f, v, d->fn);
    if (!d->fn->name && d->fn->caller && !d->ncallers) /* as the rankings name it */
        fprintf(f, " (called from %s)", d->fn->caller);
    for (size_t i = 0; i < d->ncallers; i++)
        fprintf(f, i ? " from %s" : ", called by %s", d->callers[i]);
    if (d->ncallers)
        fputc(',', f);
    if (levels)
        fprintf(f, " holds %s live at the end, %.0f%% of what is live, %s",
                binary((double)d->row->live_bytes, b, sizeof b), 100 * d->share,
                retention_words(&d->retained));
    else {
        fputs(d->bytes_bound >= 0.5 ? " holds about " : " holds ", f);
        estimate(f, d->bytes_per_epoch, d->bytes_bound, 1);
        fprintf(f, " per epoch (%s objects), %.0f%% of the live growth, %s",
                count_rate(d->count_per_epoch, rate, sizeof rate), 100 * d->share,
                retention_words(&d->retained));
    }
    if (d->fn->type)
        fprintf(f, ", type %s", d->fn->type);
}

static void holders_sentence(churn_verdict *v, const churn_analysis *a)
{
    char *text;
    size_t len;
    FILE *f = sentence(&text, &len);
    for (size_t i = 0; i < v->nfunctions; i++) {
        if (i)
            fputs("; ", f);
        holder_clause(f, v, &v->functions[i]);
    }
    if (!v->nfunctions && v->split.levels)
        fputs("No function holds anything live at the end", f);
    else if (!v->nfunctions)
        fprintf(f, "No function's live bytes measurably grow over epochs %llu..%llu",
                (unsigned long long)a->steady.first, (unsigned long long)a->steady.last);
    fputc('.', f);
    say(v, f, &text);
}

/* What the shim's blind-spot detector said of the growth, when it warned. */
static void shim_words(FILE *f, const churn_verdict *v)
{
    if (!v->shim_said)
        return;
    const churn_untraced *u = &v->shim;
    if (u->file)
        fputs(" (the shim: copy-on-write pages of a file the program mapped privately and "
              "wrote)",
              f);
    else if (u->engine)
        fprintf(f,
                " (the shim: mappings of %s's own heap, outside malloc by design; objects "
                "on %s are not traced)",
                churn_engines[u->engine - 1].name, churn_engines[u->engine - 1].heap);
    else if (u->runtime)
        fprintf(f, " (the shim: %s keeps %s on memory of its own)",
                churn_runtime_heaps[u->runtime - 1].name,
                churn_runtime_heaps[u->runtime - 1].objects);
    else if (u->module)
        fprintf(f, " (the shim's likely culprit: %s)", u->module);
}

/* The largest part of RSS's growth other than live objects, in words. */
static void rest_sentence(churn_verdict *v)
{
    static const int others[] = {CHURN_VERDICT_OWN_MMAP, CHURN_VERDICT_NOT_TRACED,
                                 CHURN_SPLIT_LIBCHURN,   CHURN_SPLIT_PINNED,
                                 CHURN_SPLIT_SLACK,      CHURN_SPLIT_FREE,
                                 CHURN_SPLIT_OVERHEAD};
    if (!v->split.epochs) {
        char *text;
        size_t len;
        FILE *f = sentence(&text, &len);
        fputs("The rest of RSS is not split into its parts: that needs a trace with events "
              "(CHURN_EVENTS=1) and an allocator model (not --model none).",
              f);
        say(v, f, &text);
        return;
    }
    int levels = v->split.levels, best = -1, unmeasured = 0;
    for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
        int k = others[i];
        double bound = levels ? 0 : v->bound[k];
        if (v->part[k] >= 1 && churn_verdict_direction(v->part[k], bound) <= 0)
            unmeasured = 1;
        else if (v->part[k] >= 1 && (best < 0 || v->part[k] > v->part[best]))
            best = k;
    }
    char *text, b[32], c[32], amount[80] = "";
    size_t len;
    FILE *f = sentence(&text, &len);
    const char *per = levels ? " at the end" : " per epoch";
    if (best >= 0 && !levels && v->bound[best] >= 0.5)
        snprintf(amount, sizeof amount, "about %s +-%s", binary(v->part[best], b, sizeof b),
                 binary(v->bound[best], c, sizeof c));
    else if (best >= 0)
        binary(v->part[best], amount, sizeof amount);
    switch (best) {
    case CHURN_VERDICT_OWN_MMAP:
        fprintf(f, "The program's own mmap calls hold %s%s", amount, per);
        if (v->has_mapping) {
            fputs(", most of it from ", f);
            function_name(f, v, v->mapping.fn);
            if (v->mapping.fn->caller)
                fprintf(f, " (called from %s)", v->mapping.fn->caller);
        }
        fputs(": pages no allocator hands out, so no object in them is traced", f);
        if (v->runtime)
            fprintf(f, "; %s keeps %s there", v->runtime->name, v->runtime->objects);
        else if (v->shim_said && v->shim.engine) /* a collected runtime's heap, by the shim */
            fprintf(f, "; they are %s's own heap, outside malloc by design: objects on %s",
                    churn_engines[v->shim.engine - 1].name,
                    churn_engines[v->shim.engine - 1].heap);
        break;
    case CHURN_VERDICT_NOT_TRACED:
        amount[0] = amount[0] == 'a' ? 'A' : amount[0]; /* "About", opening the sentence */
        if (levels)
            fprintf(f,
                    "%s at the end is %s (the program's code, stacks and libraries among "
                    "it): no allocation, no mmap call of the program and not libchurn "
                    "holds it",
                    amount,
                    v->split.free_with_outside ? "free-resident or outside anything traced"
                                               : "outside anything traced");
        else
            fprintf(f,
                    "%s per epoch is %s: no allocation, no mmap call of the program and not "
                    "libchurn holds it",
                    amount,
                    v->split.free_with_outside ? "free-resident or not traced" : "not traced");
        shim_words(f, v);
        break;
    case CHURN_SPLIT_LIBCHURN:
        fprintf(f,
                "The largest other part is libchurn's own memory, %s%s: the tracer's, not "
                "the program's",
                amount, per);
        break;
    case CHURN_SPLIT_PINNED:
        fprintf(f,
                "The largest other part is pinned in partly used spans, %s%s: survivors keep "
                "pages the allocator cannot give back (who pins: below)",
                amount, per);
        break;
    case CHURN_SPLIT_SLACK:
        fprintf(f, "The largest other part is slack, %s%s: usable bytes past what was asked",
                amount, per);
        break;
    case CHURN_SPLIT_FREE:
        fprintf(f, "The largest other part is free memory the allocator keeps resident, %s%s",
                amount, per);
        break;
    case CHURN_SPLIT_OVERHEAD:
        fprintf(f,
                "The largest other part is the allocator's overhead, %s%s: heap its books "
                "count that no object or free chunk explains",
                amount, per);
        break;
    default:
        fputs(levels       ? "Nothing but live objects holds memory at the end"
              : unmeasured ? "No other part of RSS measurably grows"
                           : "No other part of RSS grows",
              f);
    }
    fputc('.', f);
    say(v, f, &text);
}

static int named_in(const churn_verdict *v, const char *module)
{
    for (size_t i = 0; i < v->nfunctions; i++)
        if (!v->functions[i].fn->name && v->functions[i].fn->module &&
            !strcmp(v->functions[i].fn->module, module))
            return 1;
    return v->has_mapping && !v->mapping.fn->name && v->mapping.fn->module &&
           !strcmp(v->mapping.fn->module, module);
}

/* A function the verdict names by its module and offset hides its name: the debug files of
   its module name it, from the Debian package that would carry them (symbols/dbgsym.h). */
static void debug_step(churn_verdict *v, churn_analysis *a)
{
    size_t n;
    churn_report_debug *d = churn_report_debug_info(a, &n);
    char *text;
    size_t len;
    FILE *f = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *base = strrchr(d[i].m.path, '/');
        base = base ? base + 1 : d[i].m.path;
        if (d[i].m.from != CHURN_DEBUG_NONE || !d[i].package || !named_in(v, base))
            continue;
        if (!f) {
            f = sentence(&text, &len);
            fputs("Next: debug files name what the verdict shows as module+offset: Debian's", f);
        }
        fprintf(f, " %s-dbgsym (for %s)", d[i].package, base);
    }
    if (f) {
        fputs(", or a debuginfod server (DEBUGINFOD_URLS).", f);
        say(v, f, &text);
    }
    free(d);
}

static void next_steps(churn_verdict *v, churn_analysis *a)
{
    char *text;
    size_t len;
    FILE *f;
    if (churn_report_single_epoch(a)) {
        f = sentence(&text, &len);
        fprintf(f, "Next: mark units of work as epochs with %s.", CHURN_REPORT_EPOCH_SOURCES);
        say(v, f, &text);
    }
    const churn_runtime_heap *runtime = v->runtime ? v->runtime
                                        : v->shim_said && v->shim.runtime
                                            ? &churn_runtime_heaps[v->shim.runtime - 1]
                                            : NULL;
    if (runtime) {
        f = sentence(&text, &len);
        fprintf(f, "Next: %s in the environment sends %s to malloc, where they are traced.",
                runtime->setting, runtime->objects);
        say(v, f, &text);
    }
    if (v->shim_said && v->shim.engine) {
        const churn_engine *e = &churn_engines[v->shim.engine - 1];
        f = sentence(&text, &len);
        if (!strcmp(e->heap, "the JS heap"))
            fputs(
                "Next: a heap snapshot of the JS heap (node --heapsnapshot-signal=SIGUSR2, or "
                "the inspector's) names the objects libchurn cannot see.",
                f);
        else
            fprintf(f, "Next: %s's own heap profiler names the objects on %s.", e->name,
                    e->heap);
        say(v, f, &text);
    }
    debug_step(v, a);
    /* A collection inside the window: the fit mixes the ramp it ended with the one after. */
    const churn_verdict_function *top = v->nfunctions ? &v->functions[0] : NULL;
    if (top && top->retained.reclaimed_count &&
        top->retained.kind != CHURN_RETENTION_RECLAIMED &&
        top->retained.reclaimed_epoch >= a->steady.first &&
        top->retained.reclaimed_epoch < a->steady.last) {
        f = sentence(&text, &len);
        fprintf(f, "Next: --epochs %llu: fits the growth since the bulk free in epoch %llu.",
                (unsigned long long)top->retained.reclaimed_epoch + 1,
                (unsigned long long)top->retained.reclaimed_epoch);
        say(v, f, &text);
    }
}

void churn_verdict_make(churn_analysis *a, const churn_report_options *o, churn_verdict *v)
{
    memset(v, 0, sizeof *v);
    churn_report_types(a);
    v->has_run_as = churn_report_run_as(o, v->file, v->run_as, sizeof v->file);
    parts(v, a);
    holders(v, a, o);
    mappings(v, a);
    v->shim_said = churn_report_untraced_of(a, &v->shim);
    rss_sentence(v, a);
    holders_sentence(v, a);
    rest_sentence(v);
    next_steps(v, a);
}

void churn_verdict_free(churn_verdict *v)
{
    for (size_t i = 0; i < v->nsentences; i++)
        free(v->sentences[i]);
    memset(v, 0, sizeof *v);
}
