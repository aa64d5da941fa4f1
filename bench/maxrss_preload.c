/*
 * Reports a process's own peak RSS at exit, for the benchmark's heaptrack runs.
 *
 * `heaptrack PROGRAM` is a shell script that starts PROGRAM, heaptrack_interpret and a
 * compressor as its children, so wait4() on it gives the largest peak of that whole tree, not
 * the traced program's.  Preloaded with BENCH_MAXRSS_OUT=FILE, every process of the tree
 * appends "EXE MAXRSS_KB" to FILE when it exits, and the benchmark keeps the line of the
 * traced executable.  getrusage(RUSAGE_SELF) at exit is the same figure wait4() would give
 * for that process, less whatever the last destructors touch.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

__attribute__((destructor)) static void report_maxrss(void)
{
    const char *out = getenv("BENCH_MAXRSS_OUT");
    if (!out)
        return;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        return;
    exe[n] = 0;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return;
    char line[PATH_MAX + 32];
    int len = snprintf(line, sizeof line, "%s %ld\n", exe, ru.ru_maxrss);
    int fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    /* one write() with O_APPEND: lines of processes exiting together do not interleave */
    if (write(fd, line, (size_t)len) != len)
        fprintf(stderr, "maxrss_preload: short write to %s\n", out);
    close(fd);
}
