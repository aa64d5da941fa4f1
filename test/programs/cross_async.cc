// 400 std::async tasks allocate blocks in async_alloc and 400 others delete them, handed over
// through a queue; LEFT blocks stay in the queue, live at exit.  Each delete runs on another
// thread than its new, and the allocator hands freed addresses to other threads again.
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <vector>

static const int TASKS = 400, PER_TASK = 50, LEFT = 5;
static std::mutex m;
static std::condition_variable cv;
static std::deque<char *> q;

__attribute__((noinline)) static char *async_alloc(int k)
{
    char *p = new char[16 + (k % 7) * 8];
    p[0] = (char)k;
    return p;
}

int main()
{
    std::vector<std::future<void>> tasks;
    for (int i = 0; i < TASKS; i++) {
        tasks.push_back(std::async(std::launch::async, [] {
            for (int k = 0; k < PER_TASK; k++) {
                char *p = async_alloc(k);
                std::lock_guard<std::mutex> g(m);
                q.push_back(p);
                cv.notify_one();
            }
        }));
        tasks.push_back(std::async(std::launch::async, [i] {
            for (int k = 0; k < (i < LEFT ? PER_TASK - 1 : PER_TASK); k++) {
                std::unique_lock<std::mutex> g(m);
                cv.wait(g, [] { return !q.empty(); });
                char *p = q.front();
                q.pop_front();
                g.unlock();
                delete[] p;
            }
        }));
    }
    for (auto &t : tasks)
        t.get();
    if (q.size() != (size_t)LEFT) {
        std::fprintf(stderr, "%zu blocks left, expected %d\n", q.size(), LEFT);
        return 1;
    }
    std::printf("blocks %d left %d\n", TASKS * PER_TASK, LEFT);
    return 0;
}
