// For test/t_churn_attach.sh: a C++ program that ends while churn is attached.  It prints
// its pid, waits for a line on stdin, keeps 200 strings (new) and allocates and deletes
// 200 arrays (new[], delete[]), then returns 7.
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

int main()
{
    printf("%d\n", (int)getpid());
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        return 2;
    std::vector<std::string *> keep;
    keep.reserve(200);
    for (int i = 0; i < 200; i++) {
        keep.push_back(new std::string(100, 'x'));
        int *a = new int[10];
        a[0] = i;
        __asm__ volatile("" : : "r"(a) : "memory");
        delete[] a;
    }
    printf("kept %zu\n", keep.size());
    return 7;
}
