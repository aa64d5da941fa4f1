/*
 * The demo workload: `request_loop N` serves N synthetic requests, each one epoch.  A request
 * makes a handful of short-lived temporaries, leaks one 48-byte session record
 * (remember_session: a session cache that is never evicted) and parks one 4096-byte response
 * (stash_response) that release_response frees exactly DELAY requests later.  These are the
 * three shapes the analyzer must tell apart: garbage of the same epoch, delayed garbage whose
 * live total stays flat, and a leak that grows by one object per epoch.  The program checks
 * its own data, so it also fails when the tracer corrupts memory.  `request_loop N steady`
 * serves the same requests without the leak, for runs that must hold a flat live set (the
 * soak, bench/soak.sh).  A last argument MS waits MS milliseconds after each request, as a
 * server waits for its next client (`make demo`: epochs long enough for the allocator's books
 * to be read at the end of each).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "churn.h"

#define DELAY 8
#define RESPONSE_BYTES 4096

struct session {
    struct session *next;
    uint64_t request;
    char user[32];
};
_Static_assert(sizeof(struct session) == 48, "the leak the tests look for is 48 bytes");

static struct session *sessions;
static int leaking = 1;
static unsigned char *parked[DELAY];

static __attribute__((noreturn)) void die(const char *what, uint64_t request)
{
    fprintf(stderr, "request_loop: %s (request %llu)\n", what, (unsigned long long)request);
    exit(1);
}

static __attribute__((noinline)) char *read_request_line(uint64_t request)
{
    size_t len = 40 + request % 200;
    char *line = malloc(len + 1);
    if (!line)
        die("out of memory", request);
    memset(line, 'a' + (int)(request % 26), len);
    line[len] = '\0';
    return line;
}

static __attribute__((noinline)) uint64_t *parse_headers(const char *line, uint64_t request)
{
    uint64_t *headers = calloc(8, 3 * sizeof(uint64_t));
    if (!headers)
        die("out of memory", request);
    for (size_t i = 0; i < 8 * 3; i++)
        headers[i] = (uint64_t)(unsigned char)line[i % 40] + i;
    return headers;
}

/* The reply grows twice, as a buffer of unknown final size does. */
static __attribute__((noinline)) char *format_reply(const uint64_t *headers, uint64_t request)
{
    size_t cap = 32;
    char *reply = malloc(cap);
    if (!reply)
        die("out of memory", request);
    memset(reply, 'r', cap);
    for (size_t grow = 0; grow < 2; grow++) {
        char *bigger = realloc(reply, cap * 16);
        if (!bigger)
            die("out of memory", request);
        if (bigger[cap - 1] != 'r')
            die("realloc lost the reply's contents", request);
        memset(bigger + cap, 'r', cap * 15);
        reply = bigger;
        cap *= 16;
    }
    reply[cap - 1] = (char)headers[request % 24];
    return reply;
}

static __attribute__((noinline)) char *copy_route(const char *line, uint64_t request)
{
    char *route = strndup(line, 24);
    if (!route)
        die("out of memory", request);
    return route;
}

static __attribute__((noinline)) void remember_session(uint64_t request)
{
    struct session *s = malloc(sizeof *s);
    if (!s)
        die("out of memory", request);
    s->request = request;
    snprintf(s->user, sizeof s->user, "user-%llu", (unsigned long long)request);
    s->next = sessions;
    sessions = s;
}

static __attribute__((noinline)) void release_response(uint64_t request)
{
    unsigned char *old = parked[request % DELAY];
    if (!old)
        return;
    uint64_t made;
    memcpy(&made, old, sizeof made);
    if (made + DELAY != request || old[RESPONSE_BYTES - 1] != (unsigned char)made)
        die("a parked response was overwritten", request);
    free(old);
    parked[request % DELAY] = NULL;
}

static __attribute__((noinline)) void stash_response(uint64_t request)
{
    unsigned char *response = malloc(RESPONSE_BYTES);
    if (!response)
        die("out of memory", request);
    memset(response, 0, RESPONSE_BYTES);
    memcpy(response, &request, sizeof request);
    response[RESPONSE_BYTES - 1] = (unsigned char)request;
    parked[request % DELAY] = response;
}

static __attribute__((noinline)) void handle_request(uint64_t request)
{
    char *line = read_request_line(request);
    uint64_t *headers = parse_headers(line, request);
    char *route = copy_route(line, request);
    char *reply = format_reply(headers, request);
    if (strlen(route) != 24 || reply[511] != 'r')
        die("temporaries were overwritten", request);
    free(reply);
    free(route);
    free(headers);
    free(line);
    if (leaking)
        remember_session(request);
    release_response(request);
    stash_response(request);
}

/* Runs after the last request, in its epoch, so the delayed blocks do not outlive the run. */
static __attribute__((noinline)) void release_all_responses(uint64_t requests)
{
    for (uint64_t r = requests; r < requests + DELAY; r++)
        release_response(r);
}

static void check_sessions(uint64_t requests)
{
    uint64_t expect = requests;
    for (struct session *s = sessions; s; s = s->next) {
        if (expect == 0 || s->request != expect - 1)
            die("the session list is corrupt", expect);
        expect--;
    }
    if (expect != 0)
        die("sessions are missing", expect);
}

int main(int argc, char **argv)
{
    char *end;
    errno = 0;
    unsigned long long requests = argc >= 2 ? strtoull(argv[1], &end, 10) : 0;
    int ok = argc >= 2 && argc <= 4 && !errno && !*end && requests > 0;
    int arg = 2;
    leaking = !(argc > arg && !strcmp(argv[arg], "steady"));
    arg += !leaking;
    unsigned long pause_ms = 0;
    if (ok && argc > arg) {
        errno = 0;
        pause_ms = strtoul(argv[arg], &end, 10);
        ok = !errno && !*end && *argv[arg] && pause_ms <= 60000 && argc == arg + 1;
    }
    if (!ok) {
        fprintf(stderr, "usage: request_loop N [steady] [MS] (N >= 1 requests; steady: no leak; "
                        "MS: milliseconds to wait after each request)\n");
        return 2;
    }
    struct timespec pause = {(time_t)(pause_ms / 1000), (long)(pause_ms % 1000) * 1000000};
    for (uint64_t r = 0; r < requests; r++) {
        churn_epoch_begin();
        handle_request(r);
        if (pause_ms)
            nanosleep(&pause, NULL);
    }
    release_all_responses(requests);
    check_sessions(leaking ? requests : 0);
    return 0;
}
