// Objects of named classes built in the memory operator new returned, one callsite each,
// 200 epochs: a queue kept one per epoch (its constructor out of line, as workerd's
// DeleteQueue), a templated holder, a class inside a namespace made through a factory, and
// plain data (no constructor: no type) and a struct whose constructor is inlined (no call:
// no type either).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "churn.h"

namespace app {

class DeleteQueue {
public:
    __attribute__((noinline)) DeleteQueue();
    long pending[20];
};

DeleteQueue::DeleteQueue() { memset(pending, 0, sizeof pending); }

template <typename T> class Holder {
public:
    __attribute__((noinline)) explicit Holder(int n) : value(n) {}
    T value;
};

class Session {
public:
    __attribute__((noinline)) Session(int id) : id(id) { name[0] = 0; }
    int id;
    char name[44];
};

__attribute__((noinline)) Session *make_session(int id) { return new Session(id); }

struct Inline {
    Inline() : x(7) {}
    long x;
};

} // namespace app

std::vector<void *> kept;

int main()
{
    for (int e = 0; e < 200; e++) {
        churn_epoch_begin();
        kept.push_back(new app::DeleteQueue());
        kept.push_back(new app::Holder<double>(e));
        kept.push_back(app::make_session(e));
        kept.push_back(new long[3]());
        kept.push_back(new app::Inline());
    }
    churn_epoch_begin();
    std::printf("%zu objects\n", kept.size());
    return kept.size() == 1000 ? 0 : 1;
}
