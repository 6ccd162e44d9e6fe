/* Counts the pages each LMDB table adds to a commit, in every process that loads it (LD_PRELOAD
 * with a copy of LMDB patched by ./run: mdb_page_alloc reports each page it hands to a cursor,
 * with the cursor's table, and mdb_txn_commit reports its dirty list before writing it).
 * Each process writes its totals to $SIGNIN_PAGES_DIR/stats.<pid> every 50 commits; a change of
 * $SIGNIN_PAGES_DIR/reset's mtime zeroes them. A diagnostic for bench/README.md, not the module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern void (*mdb_hook_alloc)(unsigned dbi, size_t pgno, int num);
extern void (*mdb_hook_commit)(void *dirty_list);

typedef struct { size_t mid; void *mptr; } ID2;  /* LMDB's MDB_ID2: page number, page */
#define MAXPG (1u << 23)                          /* 32 GiB of 4 KiB pages */

static unsigned char *table_of;  /* page number -> table + 1 */
static long pages[256], commits, unknown;
static time_t reset_seen;
static char dir[256];

static void dump(void) {
    char path[300];
    snprintf(path, sizeof path, "%s/stats.%d", dir, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "commits %ld\nunknown %ld\n", commits, unknown);
    for (int i = 0; i < 256; ++i)
        if (pages[i]) fprintf(f, "table %d %ld\n", i, pages[i]);
    fclose(f);
}

static void on_alloc(unsigned dbi, size_t pgno, int num) {
    for (int i = 0; i < num && pgno + i < MAXPG; ++i) table_of[pgno + i] = (unsigned char)(dbi + 1);
}

static void on_commit(void *p) {
    const ID2 *dl = p;
    char path[300];
    struct stat st;
    snprintf(path, sizeof path, "%s/reset", dir);
    if (stat(path, &st) == 0 && st.st_mtime != reset_seen) {
        reset_seen = st.st_mtime;
        memset(pages, 0, sizeof pages);
        commits = unknown = 0;
    }
    ++commits;
    for (size_t i = 1; i <= dl[0].mid; ++i) {
        size_t pg = dl[i].mid;
        if (pg < MAXPG && table_of[pg]) pages[table_of[pg] - 1]++;
        else unknown++;
    }
    if (commits % 50 == 0) dump();
}

__attribute__((constructor)) static void init(void) {
    const char *d = getenv("SIGNIN_PAGES_DIR");
    snprintf(dir, sizeof dir, "%s", d ? d : "/tmp");
    table_of = calloc(MAXPG, 1);
    if (!table_of) return;
    mdb_hook_alloc = on_alloc;
    mdb_hook_commit = on_commit;
}
