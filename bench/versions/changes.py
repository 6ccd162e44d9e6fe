#!/usr/bin/env python3
"""The version changes' speed (issue 40), run by bench/versions/run after the routing benchmark.

Three front nginx (the module, 1 worker each, so the two cores hold a front and wrk) before one
upstream nginx that serves JSON files in the newest version's shape:
  A: 2 versions, the 3 changes of each route in v2 (client v1 migrates through them);
  B: 20 versions, the same 3 changes in v20 (client v1 passes 19 versions to reach them);
  C: 2 versions, no change at all (today's routed request).
Scenarios, each against its baseline in the same round, rounds interleaved (the order rotates):
  1 KiB answer through 3 changes   A /api/v1/small   vs A /plain/small (plain proxy_pass)
  64 KiB answer through 3 changes  A /api/v1/big     vs A /plain/big
  a route no change applies to     A /api/v1/other   vs C /api/v1/other (routed, no changes)
  20 versions vs 2                 B /api/v1/small   vs A /api/v1/small
Prints per scenario the median ratio of the paired rounds and their spread (min-max), and
writes bench/results/version-changes-<date>T<HHMM>.json.
Environment: NGINX_BIN, SIGNIN_MODULE, ROUNDS (7), SECONDS_PER_ROUND (2), CONNECTIONS (32).
"""
import datetime
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NGINX = os.environ.get("NGINX_BIN", "/usr/sbin/nginx")
MODULE = os.path.abspath(os.environ.get("SIGNIN_MODULE", f"{ROOT}/build/modules/ngx_http_signin_module.so"))
ROUNDS = int(os.environ.get("ROUNDS", "7"))
SECS = int(os.environ.get("SECONDS_PER_ROUND", "2"))
CONNS = int(os.environ.get("CONNECTIONS", "32"))

# the upstream speaks the newest version: full_name, status "enabled", tier
CHANGES = """            field_renamed /name /full_name on GET /small;
            value_mapped /status active enabled on GET /small;
            field_added /tier 'default="free"' on GET /small;
            field_renamed /items/*/name /items/*/full_name on GET /big;
            value_mapped /items/*/status active enabled on GET /big;
            field_added /items/*/tier 'default="free"' on GET /big;
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def item(i):
    return {"id": i, "full_name": f"Person number {i}", "status": "enabled", "tier": "pro",
            "email": f"person{i}@example.com", "address": {"street": "1 Long Road", "postcode": "N1 9GU"}}


def bodies():
    small = item(1)
    small["notes"] = "x" * (1024 - len(json.dumps(small)) - 12)
    big = {"items": []}
    while len(json.dumps(big)) < 64 * 1024 - 200:
        big["items"].append(item(len(big["items"])))
    return {"small": json.dumps(small), "big": json.dumps(big), "other": json.dumps(small)}


def common(prefix, workers):
    return (f"worker_processes {workers};\npid {prefix}/nginx.pid;\nerror_log {prefix}/error.log warn;\n"
            "events { worker_connections 4096; }\n")


def temp_paths(prefix):
    return (f"client_body_temp_path {prefix}/body; proxy_temp_path {prefix}/proxy; fastcgi_temp_path {prefix}/fcgi;"
            f" uwsgi_temp_path {prefix}/uwsgi; scgi_temp_path {prefix}/scgi;")


def front_conf(prefix, port, up_port, versions, changes):
    lines = [f"load_module {MODULE};", common(prefix, 1), "http {", "    access_log off;",
             "    " + temp_paths(prefix), "    keepalive_requests 1000000;",
             f"    upstream backend {{ server 127.0.0.1:{up_port}; keepalive 32; keepalive_requests 1000000; }}",
             "    proxy_http_version 1.1;", '    proxy_set_header Connection "";',
             "    api_versions {", "        strategy path;"]
    for k in range(1, versions + 1):
        lines.append(f"        version v{k} {{")
        if k == 1:
            lines.append("            controller @up { GET /small; GET /big; GET /other; }")
        if k == versions and changes:
            lines.append(CHANGES.rstrip("\n"))
        lines.append("        }")
    lines += ["    }", "    server {", f"        listen 127.0.0.1:{port} backlog=4096;",
              "        location /plain/ { proxy_pass http://backend; }",
              "        location /api/ { api_versions_route; }",
              "        location @up { proxy_pass http://backend; }", "    }", "}"]
    return "\n".join(lines) + "\n"


def up_conf(prefix, port):
    return (common(prefix, 1) + "http {\n    access_log off;\n    " + temp_paths(prefix) +
            "\n    keepalive_requests 1000000;\n    types { } default_type application/json;\n"
            f"    server {{ listen 127.0.0.1:{port} backlog=4096; root {prefix}/html; }}\n}}\n")


def start(prefix, conf):
    os.makedirs(prefix, exist_ok=True)
    with open(f"{prefix}/nginx.conf", "w") as f:
        f.write(conf)
    subprocess.run([NGINX, "-p", prefix, "-c", f"{prefix}/nginx.conf"], check=True)


def wrk(url):
    out = subprocess.run(["wrk", "-t1", f"-c{CONNS}", f"-d{SECS}s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out:
        sys.exit(f"wrk saw non-2xx answers for {url}:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def main():
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed")
    base = tempfile.mkdtemp(prefix="ngx_signin_bench_changes.")
    os.chmod(base, 0o755)
    up_port, ports = free_port(), {name: free_port() for name in "ABC"}
    prefixes = [f"{base}/up"] + [f"{base}/{n}" for n in "ABC"]
    try:
        for d in ("api", "plain"):
            os.makedirs(f"{base}/up/html/{d}")
            for name, text in bodies().items():
                with open(f"{base}/up/html/{d}/{name}", "w") as f:
                    f.write(text)
        start(f"{base}/up", up_conf(f"{base}/up", up_port))
        for name, (versions, changes) in {"A": (2, True), "B": (20, True), "C": (2, False)}.items():
            start(f"{base}/{name}", front_conf(f"{base}/{name}", ports[name], up_port, versions, changes))
        time.sleep(0.3)
        url = {n: f"http://127.0.0.1:{p}" for n, p in ports.items()}
        # the migration runs: a v1 client gets "name", "active", no "tier"
        answer = json.loads(urllib.request.urlopen(url["A"] + "/api/v1/small").read())
        assert "name" in answer and answer["status"] == "active" and "tier" not in answer, answer
        answer = json.loads(urllib.request.urlopen(url["B"] + "/api/v1/big").read())
        assert "name" in answer["items"][3] and "tier" not in answer["items"][3], answer["items"][3]
        scenarios = [
            ("1 KiB through 3 changes vs plain proxy", url["A"] + "/api/v1/small", url["A"] + "/plain/small", 0.85),
            ("64 KiB through 3 changes vs plain proxy", url["A"] + "/api/v1/big", url["A"] + "/plain/big", 0.5),
            ("route with no change vs routed, no changes", url["A"] + "/api/v1/other", url["C"] + "/api/v1/other", 0.98),
            ("20 versions vs 2 (1 KiB, 3 changes)", url["B"] + "/api/v1/small", url["A"] + "/api/v1/small", 0.95),
        ]
        ratios = {s[0]: [] for s in scenarios}
        rps = {s[0]: ([], []) for s in scenarios}
        for r in range(ROUNDS):
            for i in range(len(scenarios)):
                name, subject, baseline, _ = scenarios[(i + r) % len(scenarios)]
                # subject and baseline back to back, their order alternating per round
                a, b = (wrk(subject), wrk(baseline)) if r % 2 == 0 else tuple(reversed((wrk(baseline), wrk(subject))))
                ratios[name].append(a / b)
                rps[name][0].append(a)
                rps[name][1].append(b)
            print(f"round {r + 1}: " + "  ".join(f"{v[-1]:.3f}" for v in ratios.values()), file=sys.stderr)
        now = datetime.datetime.now(datetime.timezone.utc)
        date, stamp = now.strftime("%Y-%m-%d"), now.strftime("%Y-%m-%dT%H%M")
        print(f"\nversion changes: {os.cpu_count()} cores, wrk -t1 -c{CONNS}, {ROUNDS} rounds x {SECS}s, 1 worker per front")
        print(f"{'scenario':46} {'median':>7} {'min':>7} {'max':>7} {'target':>7}  subject/baseline req/s (medians)")
        result = {"benchmark": "version-changes", "date": date, "cores": os.cpu_count(), "rounds": ROUNDS,
                  "seconds_per_round": SECS, "connections": CONNS, "scenarios": []}
        for name, _, _, target in scenarios:
            v = ratios[name]
            med = statistics.median(v)
            print(f"{name:46} {med:7.3f} {min(v):7.3f} {max(v):7.3f} {target:7.2f}  "
                  f"{statistics.median(rps[name][0]):.0f}/{statistics.median(rps[name][1]):.0f}")
            result["scenarios"].append({"name": name, "ratios": [round(x, 3) for x in v], "median": round(med, 3),
                                        "target": target, "subject_rps": rps[name][0], "baseline_rps": rps[name][1]})
        os.makedirs(f"{ROOT}/bench/results", exist_ok=True)
        out = f"{ROOT}/bench/results/version-changes-{stamp}.json"
        with open(out, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {out}")
    finally:
        for p in prefixes:
            try:
                with open(f"{p}/nginx.pid") as f:
                    os.kill(int(f.read()), 3)  # QUIT
            except (OSError, ValueError):
                pass
        time.sleep(0.5)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
