/*
 * A program that execs itself with an environment of its own making, as `env -i` does: the
 * new image prints every variable it was given.  Without the shim in that environment the
 * new image is not traced, and must find exactly the variables the program passed.
 * `exec_env` runs execve with {A=1}, then the new image (`exec_env print`) prints them.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"

extern char **environ;

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "print")) {
        for (char **e = environ; *e; e++)
            printf("%s\n", *e);
        return 0;
    }
    keep(malloc(100));
    char *args[] = {argv[0], "print", NULL};
    char *env[] = {"A=1", NULL};
    execve(argv[0], args, env);
    die("cannot exec %s", argv[0]);
}
