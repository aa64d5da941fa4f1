/* Cross-thread frees through std::async (test/t_referee.sh): 400 tasks each allocate a block
   of 200 objects, 400 other tasks delete them, each consumer keeping nothing; 5 objects made
   by the producers of the first round stay live at exit.  Every figure but the temporaries
   and the peak is the same in every run. */
#include <future>
#include <vector>

static const int PER_BLOCK = 200;
static int *kept[5];

static int **produce(int round)
{
    int **block = new int *[PER_BLOCK];
    for (int i = 0; i < PER_BLOCK; ++i)
        block[i] = new int(round + i);
    return block;
}

static void consume(std::future<int **> f, int round)
{
    int **block = f.get();
    for (int i = 0; i < PER_BLOCK; ++i) {
        if (round == 0 && i < 5)
            kept[i] = block[i];
        else
            delete block[i];
    }
    delete[] block;
}

int main()
{
    std::vector<std::future<void>> consumers;
    consumers.reserve(400);
    for (int round = 0; round < 100; ++round) {
        for (int k = 0; k < 4; ++k) {
            auto made = std::async(std::launch::async, produce, round);
            consumers.emplace_back(std::async(std::launch::async, consume, std::move(made),
                                              round * 4 + k));
        }
    }
    for (auto &c : consumers)
        c.get();
    return kept[4] ? 0 : 1;
}
