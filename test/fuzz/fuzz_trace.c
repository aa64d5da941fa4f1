/*
 * libFuzzer over the whole analyzer: each input is a trace file (written to a memfd and read
 * through /proc/self/fd, as churn-analyze reads any file) analyzed into the JSON report or
 * the text report.  Built by `make fuzz` and test/t_fuzz.sh with analyzer/main.c's main
 * renamed churn_analyze_main; seeds in test/fuzz/corpus, crashes kept in
 * test/fuzz/regressions.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int churn_analyze_main(int argc, char **argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* no symbol cache: the inputs name modules at random */
    setenv("CHURN_SYMBOL_CACHE", "off", 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("trace", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    for (size_t done = 0; done < size;) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) {
            close(fd);
            return 0;
        }
        done += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    char prog[] = "churn-analyze", json[] = "--json", o[] = "-o", out[] = "/dev/null";
    char *json_argv[] = {prog, json, o, out, path, NULL};
    char *text_argv[] = {prog, o, out, path, NULL};
    optind = 0; /* getopt starts afresh for every input */
    if (size % 2)
        churn_analyze_main(4, text_argv);
    else
        churn_analyze_main(5, json_argv);
    close(fd);
    return 0;
}
