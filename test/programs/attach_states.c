/*
 * For test/t_attach_reasons.sh: processes in the states churn attach must refuse, each
 * for its true reason.  Each prints its pid first and ends when its stdin does.
 *
 *   attach_states leader   the main thread exits (pthread_exit); another thread reads stdin
 *                          and exits the process with status 3
 *   attach_states vfork    vforks; the child prints its own pid, reads stdin to its end and
 *                          exits with status 4 without an exec; the parent, suspended until
 *                          then, exits with 5 when the child's status was 4
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void read_to_end(void)
{
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
}

static void *reader(void *arg)
{
    (void)arg;
    read_to_end();
    exit(3);
}

__attribute__((noinline)) static int vfork_mode(void)
{
    pid_t child = vfork();
    if (child < 0)
        return 2;
    if (child == 0) {
        /* no stdio stream: the child runs on its parent's memory until it exits */
        char line[16];
        int n = snprintf(line, sizeof line, "%d\n", (int)getpid());
        if (write(1, line, (size_t)n) != n)
            _exit(2);
        read_to_end();
        _exit(4);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
        return 2;
    return WEXITSTATUS(status) == 4 ? 5 : 2;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    printf("%d\n", (int)getpid());
    fflush(stdout);
    if (!strcmp(argv[1], "leader")) {
        pthread_t t;
        if (pthread_create(&t, NULL, reader, NULL))
            return 2;
        pthread_exit(NULL);
    }
    if (!strcmp(argv[1], "vfork"))
        return vfork_mode();
    return 2;
}
