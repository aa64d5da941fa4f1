/*
 * Symbolization test library, dlopened by sym_pie mid-run; the test strips its debug info
 * into a separate file reached through .gnu_debuglink.
 */
static volatile int work_done;

void lib_work(void (*record)(const char *));

__attribute__((noinline)) void lib_work(void (*record)(const char *))
{
    record("lib"); /* MARK:lib */
    work_done++;
}
