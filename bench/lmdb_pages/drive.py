"""bench/lmdb_pages/run's driver: nginx with the bench's configuration (bench/run's Bench), a few
rounds of registrations for tokens, then each scenario for 5 seconds; prints the pages each LMDB
table added to the commits, in KiB a request, beside bench/run's own measure of the disk."""
import glob, importlib.machinery, importlib.util, os, re, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
loader = importlib.machinery.SourceFileLoader("bench_run", os.path.join(ROOT, "bench", "run"))
bench = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench_run", loader))
loader.exec_module(bench)

# LMDB numbers tables in the order a new environment opens them: 0 and 1 are its own (free
# pages, the table of tables), then the store's, as LmdbStore::open_tables opens them.
src = open(os.path.join(ROOT, "src", "store", "lmdb_store.cpp")).read()
body = src[src.index("void LmdbStore::open_tables()"):]
TABLES = ["(free pages)", "(tables)"] + re.findall(r'open\("(\w+)"', body[:body.index("kSchemaKey")])

work, scenarios = sys.argv[1], sys.argv[2:]


def counts():
    total = {}
    for path in glob.glob(os.path.join(work, "stats.*")):
        for line in open(path):
            f = line.split()
            key = TABLES[int(f[1])] if f[0] == "table" and int(f[1]) < len(TABLES) else f[0]
            total[key] = total.get(key, 0) + int(f[-1])
    return total


b = bench.Bench()
b.start()
try:
    stats = bench.WriteStats(b)
    pool = []
    for i in range(int(os.environ.get("PREP", "3"))):
        r = b.wrk("/auth/register", "register.lua", {"BENCH_TAG": "pages-%d-%d" % (os.getpid(), i)}, seconds=5)
        pool += b.new_tokens(r["requests"] - r["non2xx"])
    print("tokens prepared: %d" % len(pool))
    for name in scenarios:
        for path in glob.glob(os.path.join(work, "stats.*")):
            os.unlink(path)
        time.sleep(1.1)  # a new second: the hook compares the reset file's mtime
        with open(os.path.join(work, "reset"), "a") as f:
            f.write("x")
        before = stats.snapshot()
        if name == "login":
            r = b.wrk("/auth/login", "login.lua", {"BENCH_EMAIL": "bench@bench.example"})
        else:
            tf = os.path.join(work, "tokens")
            with open(tf, "w") as f:
                f.write("\n".join(pool) + "\n")
            r = b.wrk("/auth/session" if name == "session" else "/auth/token", "exchange.lua",
                      {"BENCH_TOKENS": tf, "BENCH_ORIGIN": b.origin})
            nxt = r.pop("next", None) or [len(pool) + 1] * bench.THREADS
            pool[:] = [tok for j, tok in enumerate(pool, 1) if j >= nxt[(j - 1) % bench.THREADS]]
        w = bench.WriteStats.between(before, stats.snapshot(), r["requests"])
        time.sleep(0.5)
        c = counts()
        n = r["requests"]
        pages = sum(v for k, v in c.items() if k in TABLES)
        print("%s: %.0f req/s (%d not 2xx), %.1f jobs a batch; LMDB pages %.2f KiB a request, the disk %.2f"
              % (name, r["rps"], r["non2xx"], w["jobs_per_batch"] or 0, pages * 4.0 / n, w["written_kib_per_request"] or 0))
        for t in TABLES:
            if c.get(t):
                print("  %-22s %5.2f KiB a request" % (t, c[t] * 4.0 / n))
        if c.get("unknown"):
            print("  (pages of no known table: %d)" % c["unknown"])
finally:
    b.stop()
