/*
 * A C++ library with a static object whose destructor deletes what its constructor made:
 * static destructors of a library run at its unload (__cxa_finalize), after libchurn's own
 * destructor when the library was initialised first.
 */
#include <vector>

struct Keeper {
    std::vector<int *> blocks;
    Keeper()
    {
        for (int i = 0; i < 555; i++)
            blocks.push_back(new int[50]);
    }
    ~Keeper()
    {
        for (int *b : blocks)
            delete[] b;
    }
};

static Keeper keeper;

extern "C" int late_cxx_linked(void)
{
    return (int)keeper.blocks.size();
}
