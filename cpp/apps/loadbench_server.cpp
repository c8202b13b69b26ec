// BOOTSTRAP: replaced by the Beast server work.
#include <cstdio>
int main() {
    std::fprintf(stderr, "loadbench-server: not built yet\n");
    return 1;
}
