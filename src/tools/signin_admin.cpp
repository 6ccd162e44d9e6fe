// signin-admin: operate on an ngx_signin LMDB store from the shell (while nginx runs).
#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
        std::fprintf(stderr, "usage: signin-admin --store DIR COMMAND ...\n");
        return 2;
    }
    return 2;
}
