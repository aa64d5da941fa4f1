/* The live follower's tail (analyzer/live/tail.c) alone, for t_follow_key.sh: follows the
   trace argv[1] and prints every segment it begins ("begin SEQ key|delta restart|on") and
   every warning it gives.  Each line "SECONDS" on stdin polls that long, then prints "idle",
   so that the test can change the file between polls.  With argv[2], the poll that begins
   segment argv[2] prints "held" there and waits for a line on stdin before it goes on: the
   test changes the file inside a poll, as a follower stopped (SIGSTOP, a busy machine) finds
   it when it runs again. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "live/tail.h"

static long long hold_at = -1;

static void on_begin(void *ctx, const churn_segment_info *s, int restart)
{
    (void)ctx;
    printf("begin %llu %s %s\n", (unsigned long long)s->seq, s->delta ? "delta" : "key",
           restart ? "restart" : "on");
    if ((long long)s->seq == hold_at) {
        char line[64];
        printf("held\n");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
            exit(1);
    }
}

static void on_records(void *ctx, const uint8_t *raw, size_t len)
{
    (void)ctx, (void)raw, (void)len;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3)
        return 2;
    if (argc == 3)
        hold_at = atoll(argv[2]);
    churn_tail *t = churn_tail_open(argv[1]);
    churn_tail_sink sink = {on_begin, on_records, NULL};
    churn_warnings w = {0};
    size_t said = 0;
    char line[64], err[256];
    while (fgets(line, sizeof line, stdin)) {
        double until = now_s() + atof(line);
        while (now_s() < until) {
            enum churn_tail_result r = churn_tail_poll(t, &sink, 1u << 20, &w, err, sizeof err);
            if (r == CHURN_TAIL_FAILED || r == CHURN_TAIL_REPLACED) {
                printf("failed %s\n", r == CHURN_TAIL_FAILED ? err : "replaced");
                return 1;
            }
            if (r == CHURN_TAIL_IDLE)
                usleep(20000);
        }
        for (; said < w.count; said++)
            printf("warning %s\n", w.lines[said]);
        printf("idle\n");
        fflush(stdout);
    }
    churn_tail_close(t);
    churn_warnings_free(&w);
    return 0;
}
