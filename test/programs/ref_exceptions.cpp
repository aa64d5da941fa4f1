/* The C++ runtime's own allocations (test/t_referee.sh): libstdc++'s emergency exception pool,
   allocated when the library loads and never freed, and 1000 exceptions thrown and caught,
   each allocated by __cxa_allocate_exception and freed when caught, carrying a message long
   enough to allocate too.  Live at exit: the pool and one kept string. */
#include <stdexcept>
#include <string>

static std::string *kept;

__attribute__((noinline)) static void fail_at(int i)
{
    throw std::runtime_error("a message long enough to leave the small string buffer " +
                             std::to_string(i));
}

int main()
{
    int caught = 0;
    for (int i = 0; i < 1000; ++i) {
        try {
            fail_at(i);
        } catch (const std::exception &e) {
            caught += e.what()[0] == 'a';
        }
    }
    kept = new std::string(200, 'x');
    return caught == 1000 ? 0 : 1;
}
