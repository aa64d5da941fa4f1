/* Changes the environment as programs do after they start: a new variable (glibc reallocates
   its array), an unset, clearenv (redis-server's setproctitle frees the array), and a
   variable again.  Prints whether CHURN_ROOT_PID was there first. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    printf("root %s\n", getenv("CHURN_ROOT_PID") ? "named" : "missing");
    if (setenv("ENV_CHANGE_A", "1", 1) || unsetenv("ENV_CHANGE_A") || clearenv() ||
        setenv("ENV_CHANGE_B", "2", 1)) {
        perror("env_change");
        return 1;
    }
    printf("env %s\n", getenv("ENV_CHANGE_B"));
    return 0;
}
