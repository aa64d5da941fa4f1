#include "export/pprof.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export/protobuf.h"
#include "base/hash.h"
#include "base/util.h"

#define INLINE_MAX 16

/* Field numbers of pprof's profile.proto (github.com/google/pprof, proto/profile.proto). */
enum {
    PROFILE_SAMPLE_TYPE = 1,
    PROFILE_SAMPLE = 2,
    PROFILE_MAPPING = 3,
    PROFILE_LOCATION = 4,
    PROFILE_FUNCTION = 5,
    PROFILE_STRING_TABLE = 6,
    PROFILE_TIME_NANOS = 9,
    PROFILE_COMMENT = 13,
    PROFILE_DEFAULT_SAMPLE_TYPE = 14,
    VALUE_TYPE_TYPE = 1,
    VALUE_TYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1,
    SAMPLE_VALUE = 2,
    SAMPLE_LABEL = 3,
    LABEL_KEY = 1,
    LABEL_STR = 2,
    LABEL_NUM = 3,
    MAPPING_ID = 1,
    MAPPING_START = 2,
    MAPPING_LIMIT = 3,
    MAPPING_OFFSET = 4,
    MAPPING_FILENAME = 5,
    MAPPING_HAS_FUNCTIONS = 7,
    MAPPING_HAS_FILENAMES = 8,
    MAPPING_HAS_LINE_NUMBERS = 9,
    MAPPING_HAS_INLINE_FRAMES = 10,
    LOCATION_ID = 1,
    LOCATION_MAPPING_ID = 2,
    LOCATION_ADDRESS = 3,
    LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1,
    LINE_LINE = 2,
    FUNCTION_ID = 1,
    FUNCTION_NAME = 2,
    FUNCTION_SYSTEM_NAME = 3,
    FUNCTION_FILENAME = 4,
};

/* Interned keys: a string (the string table), a function (name and file string indices) or
   an ip (a location); the value is the index or id handed out in order. */
typedef struct key_slot {
    uint64_t a, b;
    uint64_t value; /* 0: empty */
} key_slot;

typedef struct key_table {
    key_slot *slots;
    size_t mask, count;
} key_table;

typedef struct builder {
    churn_pb profile, msg, line, packed;
    key_table strings, functions, locations;
    char **string_list; /* to compare strings that hash alike */
    size_t string_cap;
    const churn_export_window *w;
    const churn_pprof_options *o;
    churn_pb labels; /* every sample's, encoded once */
} builder;

static uint64_t hash_string(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void table_init(key_table *t)
{
    t->mask = 1023;
    t->count = 0;
    t->slots = churn_xcalloc(t->mask + 1, sizeof *t->slots);
}

static size_t slot_of(const key_table *t, uint64_t a, uint64_t b)
{
    return churn_hash64(a ^ churn_hash64(b)) & t->mask;
}

static void table_grow(key_table *t)
{
    key_slot *old = t->slots;
    size_t old_size = t->mask + 1;
    t->mask = old_size * 2 - 1;
    t->slots = churn_xcalloc(t->mask + 1, sizeof *t->slots);
    for (size_t i = 0; i < old_size; i++) {
        if (!old[i].value)
            continue;
        size_t j = slot_of(t, old[i].a, old[i].b);
        while (t->slots[j].value)
            j = (j + 1) & t->mask;
        t->slots[j] = old[i];
    }
    free(old);
}

/* The slot of (a, b), or the empty slot where it belongs (value 0). */
static key_slot *table_find(builder *bd, key_table *t, uint64_t a, uint64_t b, const char *s)
{
    if ((t->count + 1) * 2 > t->mask + 1)
        table_grow(t);
    size_t j = slot_of(t, a, b);
    for (; t->slots[j].value; j = (j + 1) & t->mask)
        if (t->slots[j].a == a && t->slots[j].b == b &&
            (!s || strcmp(bd->string_list[t->slots[j].value - 1], s) == 0))
            return &t->slots[j];
    return &t->slots[j];
}

/* The string's index in the string table, added at the end of the profile when new. */
static uint64_t str(builder *bd, const char *s)
{
    key_slot *k = table_find(bd, &bd->strings, hash_string(s), 0, s);
    if (!k->value) {
        churn_reserve(&bd->string_list, &bd->string_cap, bd->strings.count + 1,
                      sizeof *bd->string_list);
        bd->string_list[bd->strings.count] = churn_xstrdup(s);
        *k = (key_slot){hash_string(s), 0, ++bd->strings.count};
    }
    return k->value - 1;
}

static void value_type(builder *bd, unsigned field, const char *type, const char *unit)
{
    churn_pb_clear(&bd->msg);
    churn_pb_uint(&bd->msg, VALUE_TYPE_TYPE, str(bd, type));
    churn_pb_uint(&bd->msg, VALUE_TYPE_UNIT, str(bd, unit));
    churn_pb_message(&bd->profile, field, &bd->msg);
}

static uint64_t function(builder *bd, const char *name, const char *file)
{
    uint64_t n = str(bd, name), f = str(bd, file);
    key_slot *k = table_find(bd, &bd->functions, n, f, NULL);
    if (k->value)
        return k->value;
    *k = (key_slot){n, f, ++bd->functions.count};
    churn_pb_clear(&bd->msg);
    churn_pb_uint(&bd->msg, FUNCTION_ID, k->value);
    churn_pb_uint(&bd->msg, FUNCTION_NAME, n);
    churn_pb_uint(&bd->msg, FUNCTION_SYSTEM_NAME, n);
    churn_pb_uint(&bd->msg, FUNCTION_FILENAME, f);
    churn_pb_message(&bd->profile, PROFILE_FUNCTION, &bd->msg);
    return k->value;
}

/* The Mapping of module id (mappings() writes one per module, in the map's order), 0 none. */
static uint64_t mapping_id(const churn_module_map *m, uint64_t module)
{
    return m->by_id && module < CHURN_MODULES_MAX ? m->by_id[module] : 0;
}

/* A location per recorded return address, its lines innermost (inlined) first as pprof
   wants, keyed also by the stack's module generation (an ip of a library unloaded and
   replaced at the same address after it).  Every recorded ip returns from a call (the
   innermost from the call of the allocation function), so its lines are those of the call
   instruction, and the address written is the call's last byte, ip - 1: profile.proto lets a
   non-leaf address sit inside its call instruction, and pprof, when asked to symbolize again
   (-symbolize=force), looks the address up as written, so it finds the same lines. */
static uint64_t location(builder *bd, uint64_t ip, uint64_t generation)
{
    key_slot *k = table_find(bd, &bd->locations, ip, generation, NULL);
    if (k->value)
        return k->value;
    uint64_t id = bd->locations.count + 1;
    const churn_analysis *a = bd->w->a;
    churn_frame frames[INLINE_MAX];
    size_t n = churn_symbolizer_resolve(a->sym, ip, 1, generation, frames, INLINE_MAX);
    churn_pb loc = {0};
    churn_pb_uint(&loc, LOCATION_ID, id);
    /* the mapping the names come from (frames.h), not the newest module at ip */
    uint64_t mapping = n && frames[0].module ? mapping_id(&a->modules, frames[0].module_id) : 0;
    if (mapping)
        churn_pb_uint(&loc, LOCATION_MAPPING_ID, mapping);
    churn_pb_uint(&loc, LOCATION_ADDRESS, ip ? ip - 1 : ip);
    for (size_t i = 0; i < n; i++) {
        char name[512];
        churn_frame_function(ip, &frames[i], name, sizeof name);
        churn_pb_clear(&bd->line);
        churn_pb_uint(&bd->line, LINE_FUNCTION_ID,
                      function(bd, name, frames[i].file ? frames[i].file : ""));
        churn_pb_uint(&bd->line, LINE_LINE, frames[i].line);
        churn_pb_message(&loc, LOCATION_LINE, &bd->line);
    }
    churn_pb_message(&bd->profile, PROFILE_LOCATION, &loc);
    churn_pb_free(&loc);
    /* The table may have grown while functions were added. */
    k = table_find(bd, &bd->locations, ip, generation, NULL);
    *k = (key_slot){ip, generation, id};
    bd->locations.count++;
    return id;
}

/* A location with one function and no address, for values that have no stack. */
static uint64_t pseudo_location(builder *bd, const char *name)
{
    uint64_t id = bd->locations.count + 1;
    bd->locations.count++;
    churn_pb loc = {0};
    churn_pb_uint(&loc, LOCATION_ID, id);
    churn_pb_clear(&bd->line);
    churn_pb_uint(&bd->line, LINE_FUNCTION_ID, function(bd, name, ""));
    churn_pb_message(&loc, LOCATION_LINE, &bd->line);
    churn_pb_message(&bd->profile, PROFILE_LOCATION, &loc);
    churn_pb_free(&loc);
    return id;
}

static void sample(builder *bd, const uint64_t *locs, size_t nlocs, const int64_t *values)
{
    churn_pb_clear(&bd->msg);
    churn_pb_clear(&bd->packed);
    for (size_t i = 0; i < nlocs; i++)
        churn_pb_varint(&bd->packed, locs[i]);
    churn_pb_message(&bd->msg, SAMPLE_LOCATION_ID, &bd->packed);
    churn_pb_clear(&bd->packed);
    for (size_t i = 0; i < bd->o->nmetrics; i++)
        churn_pb_varint(&bd->packed, (uint64_t)values[i]);
    churn_pb_message(&bd->msg, SAMPLE_VALUE, &bd->packed);
    if (bd->labels.len) {
        churn_reserve(&bd->msg.data, &bd->msg.cap, bd->msg.len + bd->labels.len, 1);
        memcpy(bd->msg.data + bd->msg.len, bd->labels.data, bd->labels.len);
        bd->msg.len += bd->labels.len;
    }
    churn_pb_message(&bd->profile, PROFILE_SAMPLE, &bd->msg);
}

static void labels(builder *bd)
{
    for (size_t i = 0; i < bd->o->nlabels; i++) {
        const churn_pprof_label *l = &bd->o->labels[i];
        churn_pb_clear(&bd->line);
        churn_pb_uint(&bd->line, LABEL_KEY, str(bd, l->key));
        if (l->str)
            churn_pb_uint(&bd->line, LABEL_STR, str(bd, l->str));
        else
            churn_pb_uint(&bd->line, LABEL_NUM, (uint64_t)l->num);
        churn_pb_message(&bd->labels, SAMPLE_LABEL, &bd->line);
    }
}

static int64_t site_value(const builder *bd, size_t m, size_t site)
{
    const churn_metric *metric = bd->o->metrics[m];
    return bd->o->signed_values ? metric->site(bd->w, site)
                                : churn_metric_site(metric, bd->w, site);
}

static int64_t rest_value(const builder *bd, size_t m)
{
    const churn_metric *metric = bd->o->metrics[m];
    if (!bd->o->signed_values)
        return churn_metric_rest(metric, bd->w);
    return metric->rest ? metric->rest(bd->w) : 0;
}

static void samples(builder *bd)
{
    const churn_analysis *a = bd->w->a;
    int64_t *values = churn_xcalloc(bd->o->nmetrics, sizeof *values);
    uint64_t *locs = NULL;
    size_t locs_cap = 0;
    for (size_t i = 0; i < a->growth.count; i++) {
        int any = 0;
        for (size_t m = 0; m < bd->o->nmetrics; m++)
            any |= (values[m] = site_value(bd, m, i)) != 0;
        if (!any)
            continue;
        size_t depth;
        const uint64_t *ips =
            churn_stack_defs_get(&a->stacks, a->growth.sites[i].stack, &depth);
        churn_reserve(&locs, &locs_cap, depth ? depth : 1, sizeof *locs);
        if (ips) {
            uint64_t generation =
                churn_stack_defs_generation(&a->stacks, a->growth.sites[i].stack);
            for (size_t d = 0; d < depth; d++)
                locs[d] = location(bd, ips[d], generation);
        } else {
            char name[64];
            snprintf(name, sizeof name, "<stack %llu not in the trace>",
                     (unsigned long long)a->growth.sites[i].stack);
            locs[0] = pseudo_location(bd, name);
            depth = 1;
        }
        sample(bd, locs, depth, values);
    }
    int any = 0;
    for (size_t m = 0; m < bd->o->nmetrics; m++)
        any |= (values[m] = rest_value(bd, m)) != 0;
    if (any) {
        uint64_t loc = pseudo_location(bd, CHURN_REST_FRAME);
        sample(bd, &loc, 1, values);
    }
    free(values);
    free(locs);
}

static void mappings(builder *bd)
{
    const churn_module_map *mods = &bd->w->a->modules;
    for (size_t i = 0; i < mods->count; i++) {
        const churn_module_range *m = &mods->items[i];
        if (m->start >= m->end)
            continue; /* an unload's own id (format.h, MODULE): no location is in it */
        churn_pb_clear(&bd->msg);
        churn_pb_uint(&bd->msg, MAPPING_ID, i + 1);
        churn_pb_uint(&bd->msg, MAPPING_START, m->start);
        churn_pb_uint(&bd->msg, MAPPING_LIMIT, m->end);
        churn_pb_uint(&bd->msg, MAPPING_OFFSET, m->start - m->bias);
        churn_pb_uint(&bd->msg, MAPPING_FILENAME, str(bd, m->name));
        churn_pb_uint(&bd->msg, MAPPING_HAS_FUNCTIONS, 1);
        churn_pb_uint(&bd->msg, MAPPING_HAS_FILENAMES, 1);
        churn_pb_uint(&bd->msg, MAPPING_HAS_LINE_NUMBERS, 1);
        churn_pb_uint(&bd->msg, MAPPING_HAS_INLINE_FRAMES, 1);
        churn_pb_message(&bd->profile, PROFILE_MAPPING, &bd->msg);
    }
}

static int gzip_write(FILE *out, const churn_pb *data)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* 16 + 15 window bits: a gzip member, as pprof reads. */
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        errno = ENOMEM;
        return -1;
    }
    unsigned char chunk[1 << 16];
    z.next_in = data->data;
    z.avail_in = (uInt)data->len;
    int rc;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        rc = deflate(&z, Z_FINISH);
        size_t n = sizeof chunk - z.avail_out;
        if (n && fwrite(chunk, 1, n, out) != n) {
            deflateEnd(&z);
            return -1;
        }
    } while (rc == Z_OK);
    deflateEnd(&z);
    return rc == Z_STREAM_END ? 0 : (errno = EIO, -1);
}

int churn_export_pprof(FILE *out, const churn_export_window *w)
{
    const churn_metric **all = churn_xcalloc(churn_metrics_count, sizeof *all);
    for (size_t m = 0; m < churn_metrics_count; m++)
        all[m] = &churn_metrics[m];
    churn_pprof_options o = {all, churn_metrics_count, "inuse_space", 0, NULL, 0};
    int rc = churn_export_pprof_with(out, w, &o);
    free(all);
    return rc;
}

int churn_export_pprof_with(FILE *out, const churn_export_window *w,
                            const churn_pprof_options *o)
{
    builder bd;
    memset(&bd, 0, sizeof bd);
    bd.w = w;
    bd.o = o;
    table_init(&bd.strings);
    table_init(&bd.functions);
    table_init(&bd.locations);
    str(&bd, ""); /* index 0 is the empty string */
    for (size_t m = 0; m < o->nmetrics; m++)
        value_type(&bd, PROFILE_SAMPLE_TYPE, o->metrics[m]->pprof_type,
                   strcmp(o->metrics[m]->unit, "bytes") == 0 ? "bytes" : "count");
    labels(&bd);
    mappings(&bd);
    samples(&bd);
    churn_pb_uint(&bd.profile, PROFILE_TIME_NANOS, w->a->info->start_realtime_ns);
    char comment[128];
    snprintf(comment, sizeof comment, "libchurn trace of pid %llu, epochs %llu..%llu",
             (unsigned long long)w->a->info->pid,
             (unsigned long long)(w->a->window.has_first ? w->a->window.first : w->a->first_epoch),
             (unsigned long long)(w->a->window.has_last ? w->a->window.last : w->a->last_epoch));
    churn_pb_uint(&bd.profile, PROFILE_COMMENT, str(&bd, comment));
    char note[256];
    if (churn_analysis_estimate_note(w->a, note, sizeof note))
        churn_pb_uint(&bd.profile, PROFILE_COMMENT, str(&bd, note));
    churn_pb_uint(&bd.profile, PROFILE_DEFAULT_SAMPLE_TYPE, str(&bd, o->default_type));
    /* The string table goes last: every string is known by now. */
    for (size_t i = 0; i < bd.strings.count; i++)
        churn_pb_bytes(&bd.profile, PROFILE_STRING_TABLE, bd.string_list[i],
                       strlen(bd.string_list[i]));
    int rc = gzip_write(out, &bd.profile);
    for (size_t i = 0; i < bd.strings.count; i++)
        free(bd.string_list[i]);
    free(bd.string_list);
    free(bd.strings.slots);
    free(bd.functions.slots);
    free(bd.locations.slots);
    churn_pb_free(&bd.profile);
    churn_pb_free(&bd.msg);
    churn_pb_free(&bd.line);
    churn_pb_free(&bd.packed);
    churn_pb_free(&bd.labels);
    return rc;
}
