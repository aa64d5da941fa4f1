// CHURN_EPOCH_AT targets: a C function and a C++ constructor called a known number of times,
// each followed by a known allocation, so every epoch they begin holds exactly one of them.
#include <cstdio>
#include <cstdlib>

extern "C" __attribute__((noinline)) void handle_delivery(int i)
{
    void *volatile p = std::malloc(64 + (size_t)i % 7);
    std::free(p);
}

namespace app {
struct Request {
    __attribute__((noinline)) explicit Request(int id) : id(id), body(new char[100]) {}
    ~Request() { delete[] body; }
    int id;
    char *body;
};
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 50;
    for (int i = 0; i < n; i++)
        handle_delivery(i);
    for (int i = 0; i < n; i++) {
        app::Request r(i);
        if (r.id != i)
            return 1;
    }
    std::printf("epoch_at: %d deliveries, %d requests\n", n, n);
    return 0;
}
