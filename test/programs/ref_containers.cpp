/* C++ containers and smart pointers (test/t_referee.sh): vector growth, map and
   unordered_map inserts and erases, strings past the small-string buffer, shared_ptr and
   unique_ptr, aligned new.  A map of 10 entries and one vector stay live at exit. */
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

struct alignas(64) Wide {
    char bytes[64];
};

static std::map<int, std::string> *kept_map;
static std::vector<int> *kept_vector;

int main()
{
    long sum = 0;
    for (int round = 0; round < 50; ++round) {
        std::vector<int> v;
        for (int i = 0; i < 1000; ++i)
            v.push_back(i);
        std::map<int, std::string> m;
        for (int i = 0; i < 200; ++i)
            m[i] = std::string(40, (char)('a' + i % 26));
        for (int i = 0; i < 200; i += 2)
            m.erase(i);
        std::unordered_map<std::string, int> u;
        for (int i = 0; i < 100; ++i)
            u[std::to_string(i) + " is a key long enough to allocate"] = i;
        auto s = std::make_shared<std::vector<double>>(100, 1.0);
        auto w = std::make_unique<Wide[]>(4);
        auto one = std::unique_ptr<Wide>(new Wide());
        sum += (long)v.size() + (long)m.size() + (long)u.size() + (long)s->size() +
               w[0].bytes[0] + one->bytes[0];
    }
    kept_map = new std::map<int, std::string>;
    for (int i = 0; i < 10; ++i)
        (*kept_map)[i] = std::string(50, 'k');
    kept_vector = new std::vector<int>(123);
    return sum == 50L * (1000 + 100 + 100 + 100) ? 0 : 1;
}
