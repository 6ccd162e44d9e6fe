#!/usr/bin/env bash
# ngx_signin build driver.
#   ./build.sh          install what the build needs (apt-get), build the core and the nginx module
#                       (--no-install or SIGNIN_NO_APT=1: install nothing, for packagers and offline
#                       machines; what is missing is listed)
#   ./build.sh test     the same with the tests' packages too, then the core unit tests (ctest), the nginx tests (prove t/) and a
#                       short run of every fuzz target (FUZZ_SECONDS each, default 5)
#   ./build.sh run      build the module only, then serve nginx.conf.example on 127.0.0.1:$PORT from
#                       ./run/ (its store kept across runs; `run --fresh` starts over)
#   ./build.sh bench    the same as a plain build, then the benchmarks (bench/run)
#   ./build.sh deb      the Debian package (build/deb/libnginx-mod-http-signin_*.deb), checked by lintian
#   ./build.sh fuzz [S] every fuzz target (fuzz/, clang + libFuzzer + ASan/UBSan) for S seconds (60)
#   ./build.sh compat [VERSION...]  the nginx tests against Debian's nginx and each nginx VERSION
#                       built from source (default: 1.24.0 1.26.3 1.28.3 and the newest tag), from
#                       NGINX_GIT (a clone of github.com/nginx/nginx with its release tags; cloned
#                       into build/nginx.git when unset) or NGINX_TARBALLS (a directory of
#                       nginx-VERSION.tar.gz); writes build/compat.md
# NGINX_SRC=/path/to/nginx builds against that source tree (a release tarball's, or a checkout of
# nginx's repository with auto/configure) instead of Debian's nginx-dev.
# SIGNIN_SANITIZE=1 builds core, unit tests and module with AddressSanitizer and UBSan in
# build/sanitize/ (the normal build in build/ is left alone); `test` then runs the nginx tests with
# the sanitizers' runtime preloaded into nginx (SIGNIN_SANITIZE_PRELOAD) and fails on any report.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "${SIGNIN_SANITIZE:-}" in
    ""|0|OFF|off|no) SIGNIN_SANITIZE= ;;
    *) SIGNIN_SANITIZE=1 ;;
esac
BUILD="$ROOT/build${SIGNIN_SANITIZE:+/sanitize}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
# --no-install anywhere on the line is SIGNIN_NO_APT=1 (packagers, offline machines)
args=()
for a in "$@"; do
    if [ "$a" = --no-install ]; then SIGNIN_NO_APT=1; else args+=("$a"); fi
done
set -- "${args[@]+"${args[@]}"}"
cmd="${1:-build}"

log() { printf '==> %s\n' "$*" >&2; }

# ---------------------------------------------------------------- dependencies
# What each command needs, as Debian 12 names it. A plain build installs only the build's.
BUILD_PACKAGES=(
    nginx nginx-dev                       # the stock binary the module loads into, and its headers
    g++ make cmake pkg-config             # toolchain
    libsodium-dev libcjson-dev libicu-dev liblmdb-dev
    liboath-dev libqrencode-dev           # second factors: TOTP checks, the enrollment QR code
    libcbor-dev                           # passkeys: WebAuthn's CBOR (signatures by OpenSSL: libssl-dev)
    libpq-dev                             # signin_store postgresql://...: a store several nodes share
    libcurl4-openssl-dev                  # signin_smtp: SMTP, STARTTLS and SASL by libcurl (OpenSSL, as nginx)
    libcli11-dev                          # signin-admin's command line (header-only)
    libgtest-dev                          # core unit tests (built with the core)
    libpcre2-dev libssl-dev zlib1g-dev    # needed by nginx's configure for Debian's flags
)
TEST_PACKAGES=(
    oathtool                              # the tests make TOTP codes with another implementation
    gettext                               # msgfmt --check of every catalog (t/signin_languages.t)
    prometheus                            # promtool checks signin_metrics' output (t/signin_metrics.t)
    lmdb-utils                            # mdb_dump: the tests read the store as an operator would
    postgresql                            # a real PostgreSQL (initdb in a temp dir) for the shared store's tests
    perl                                  # prove and the t/*.t harness (core modules only)
    python3 python3-argon2                # cross-checks of password hashes by another implementation
    python3-jwt python3-cryptography      # an independent JOSE library verifies $signin_assertion
    python3-oauthlib                      # a second relying party of the module as an OpenID provider (t/signin_oidc_flow.t)
    python3-aiosmtpd openssl              # t/smtp-server: a real SMTP server, its throw-away CA made by openssl
    chromium                              # the browser tests of the pages (t/signin_pages_browser.t)
    clang libclang-rt-dev                 # fuzz/ (libFuzzer, ASan, UBSan): ./build.sh fuzz, and a short run in test
    curl ca-certificates procps
    dpkg-dev debhelper lintian file       # t/package.t builds, checks and installs the Debian package
)
# t/signin_smtp_exim.t sends to a real MTA: Debian's exim4, run by the test in the foreground from
# a configuration of its own. Asked for only where no other mail server is installed: Debian's
# MTAs conflict with each other, and apt-get would replace a site's postfix with it.
if [ -x /usr/sbin/exim4 ] || [ ! -e /usr/sbin/sendmail ]; then
    TEST_PACKAGES+=(exim4-daemon-light)
fi
BENCH_PACKAGES=(wrk valgrind)  # valgrind: bench/instructions (callgrind)
PACKAGE_PACKAGES=(dpkg-dev debhelper lintian)  # ./build.sh deb

# Installs the missing packages of the lists given (apt-get, with sudo when not root). With
# SIGNIN_NO_APT=1 (packagers, offline machines) nothing is installed: the missing are listed.
install_deps() {
    local missing=()
    local p
    for p in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$p")
        fi
    done
    ((${#missing[@]})) || return 0
    if [ -n "${SIGNIN_NO_APT:-}" ]; then
        log "SIGNIN_NO_APT is set: not installing ${missing[*]}"
        return 0
    fi
    log "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The tests' Node.js with npm (OpenAPI validation, the browser walks): this machine kind may ship
# its own build, so ask for the command, not the package.
install_node() {
    command -v npm >/dev/null 2>&1 || install_deps nodejs npm
}

# ---------------------------------------------------------------- build
# The core's unit tests (signin_unit, ctest) and signin-admin, for `test` and the tests' use: the
# module does not need this, its nginx build compiles the core itself (config.make).
build_core() {
    log "building the core, its unit tests and signin-admin (CMake)"
    cmake -S "$ROOT" -B "$BUILD/core" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
        ${SIGNIN_SANITIZE:+-DSIGNIN_SANITIZE=ON} >/dev/null
    cmake --build "$BUILD/core" -j "$JOBS"
}

# Configures an nginx tree with --add-dynamic-module=$ROOT and runs its `make modules`: the rules
# config.make adds build core and glue with CMake inside that tree's objs/, and the module is
# relinked only when that archive changed.
build_module() {
    local src flags
    if [ -n "${NGINX_SRC:-}" ]; then
        src="$(cd "$NGINX_SRC" && pwd)"
        # as Debian builds its nginx: with the debug log (the tests read it for secrets), TLS, HTTP/2
        flags=(--with-compat --with-threads --with-debug --with-http_realip_module --with-http_auth_request_module
               --with-http_ssl_module --with-http_v2_module)
    else
        src=/usr/share/nginx/src
        # shellcheck disable=SC1091
        . /usr/share/nginx/src/conf_flags
        flags=("${NGX_CONF_FLAGS[@]}")
    fi
    local tree="$BUILD/nginx"
    # configure records the module names (one per src/ngx/*/ngx_http_*_module.cpp) and the addon's
    # config: a change there means reconfigure. Sources, headers and CMakeLists.txt are tracked by
    # the CMake build that config.make runs.
    local stamp
    stamp="$( { echo "$src"; printf '%s\n' "${flags[@]}"; echo "sanitize=$SIGNIN_SANITIZE";
                cat "$ROOT/config" "$ROOT/config.make"; ls -R "$ROOT"/src/ngx; } | sha256sum | cut -c1-16)"
    if [ ! -f "$tree/.stamp" ] || [ "$(cat "$tree/.stamp")" != "$stamp" ]; then
        log "configuring nginx from $src"
        rm -rf "$tree"
        mkdir -p "$tree"
        cp -a "$src/." "$tree/"
        rm -rf "$tree/objs" "$tree/Makefile"
        # a release tarball has ./configure; a checkout of nginx's repository has auto/configure
        local configure=./configure
        [ -x "$tree/configure" ] || configure=auto/configure
        (cd "$tree" && SIGNIN_SANITIZE="$SIGNIN_SANITIZE" $configure "${flags[@]}" --add-dynamic-module="$ROOT" \
            >"$tree/configure.log" 2>&1) || {
            tail -30 "$tree/configure.log" >&2
            exit 1
        }
        echo "$stamp" >"$tree/.stamp"
    fi
    log "building the nginx module (core and glue with it)"
    # Debian's tree has only headers: build the module for its /usr/sbin/nginx. A full source tree
    # builds its own nginx binary as well, which the tests and `run` then use.
    local target=modules
    [ -n "${NGINX_SRC:-}" ] && [ -f "$tree/src/core/nginx.c" ] && target=build
    make -C "$tree" -j "$JOBS" -f objs/Makefile "$target" >"$tree/make.log" 2>&1 || {
        grep -E "error:|Error [0-9]" -A3 "$tree/make.log" | head -60 >&2
        exit 1
    }
    mkdir -p "$BUILD/modules"
    # replace, never overwrite in place: a running nginx has the old file mapped
    if ! cmp -s "$tree/objs/ngx_http_signin_module.so" "$BUILD/modules/ngx_http_signin_module.so"; then
        cp "$tree/objs/ngx_http_signin_module.so" "$BUILD/modules/.ngx_http_signin_module.so.new"
        mv -f "$BUILD/modules/.ngx_http_signin_module.so.new" "$BUILD/modules/ngx_http_signin_module.so"
    fi
    log "module: $BUILD/modules/ngx_http_signin_module.so"
}

nginx_bin() {
    if [ -n "${NGINX_BIN:-}" ]; then echo "$NGINX_BIN";
    elif [ -n "${NGINX_SRC:-}" ] && [ -x "$BUILD/nginx/objs/nginx" ]; then echo "$BUILD/nginx/objs/nginx";
    else echo /usr/sbin/nginx; fi
}

build_all() {
    install_deps "${BUILD_PACKAGES[@]}"
    build_core
    build_module
}

# ---------------------------------------------------------------- npm packages of the tests
# t/package.json + t/package-lock.json (the OpenAPI validator of t/versions_openapi.t) into t/node_modules
install_test_npm() {
    [ -f "$ROOT/t/package-lock.json" ] || return 0
    if [ ! -d "$ROOT/t/node_modules" ] || [ "$ROOT/t/package-lock.json" -nt "$ROOT/t/node_modules" ]; then
        log "installing the tests' npm packages"
        (cd "$ROOT/t" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    fi
}

# ---------------------------------------------------------------- commands
# The engine's unit tests again, each over a schema of its own in a real PostgreSQL (t/pg-server:
# initdb in a temporary directory, a loopback port), and the PostgreSQL-only cases of
# t/unit/pg_store_test.cpp. Skipped, with the reason, where no PostgreSQL server can start.
pg_unit_tests() {
    local dir url rc=0
    dir="$(mktemp -d)"
    if ! url="$("$ROOT/t/pg-server" start "$dir/pg")"; then
        log "SKIP unit tests on PostgreSQL: t/pg-server could not start a server (above)"
        rm -rf "$dir"
        return 0
    fi
    SIGNIN_TEST_PG="$url" "$BUILD/core/signin_unit" --gtest_brief=1 || rc=$?
    "$ROOT/t/pg-server" stop "$dir/pg"
    rm -rf "$dir"
    return "$rc"
}

# The HTTP tests that use the store, again with %%STORE%% a schema of a real PostgreSQL
# (t/lib/SigninTest.pm). Left out: the tests of LMDB itself (its file, map size, backup, crash
# recovery, a store that cannot be opened), the package, and
# t/signin_pg_nodes.t, which starts its own server. Of the API versions' tests, only
# t/versions_pin.t keeps anything in the store (the accounts' pinned versions).
PG_HTTP_SKIP='package|signin_store|signin_store_flood|signin_crash|signin_failclosed|signin_config|signin_admin|signin_pg_nodes'
pg_http_tests() {
    local dir url rc=0 files
    dir="$(mktemp -d)"
    if ! url="$("$ROOT/t/pg-server" start "$dir/pg")"; then
        log "SKIP nginx tests over PostgreSQL: t/pg-server could not start a server (above)"
        rm -rf "$dir"
        return 0
    fi
    files="$(ls "$ROOT"/t/signin_*.t "$ROOT"/t/passwords_*.t "$ROOT"/t/limits_*.t "$ROOT"/t/versions_pin.t |
        grep -Ev "/($PG_HTTP_SKIP)\.t$")"
    # shellcheck disable=SC2086
    SIGNIN_TEST_PG="$url" prove -j "${TEST_JOBS:-2}" -I "$ROOT/t/lib" $files || rc=$?
    "$ROOT/t/pg-server" stop "$dir/pg"
    rm -rf "$dir"
    return "$rc"
}

run_tests() {
    log "unit tests (ctest)"
    (cd "$BUILD/core" && ctest --output-on-failure -j "$JOBS")
    log "unit tests on PostgreSQL"
    pg_unit_tests
    install_test_npm
    log "nginx tests (prove t/)"
    export NGINX_BIN="$(nginx_bin)"
    export SIGNIN_MODULE="$BUILD/modules/ngx_http_signin_module.so"
    export SIGNIN_ADMIN="$BUILD/core/signin-admin"
    export SIGNIN_ROOT="$ROOT"
    if [ -n "$SIGNIN_SANITIZE" ]; then
        # the instrumented module runs inside an uninstrumented nginx: the ASan runtime must be
        # the first library of the process, so t/lib/SigninTest.pm starts nginx with it preloaded
        # (GCC links UBSan's own runtime too; it may come later, but is preloaded with it)
        local lib preload=""
        for lib in libasan.so libubsan.so; do
            preload="${preload:+$preload }$(readlink -f "$(g++ -print-file-name="$lib")")"
        done
        export SIGNIN_SANITIZE_PRELOAD="$preload"
        log "sanitizers: nginx runs with LD_PRELOAD=$SIGNIN_SANITIZE_PRELOAD"
    fi
    local files=("$ROOT"/t/*.t) kept=() f
    if [ -n "$SIGNIN_SANITIZE" ]; then
        # these two build the module again without the sanitizers (a plain nginx tree, the
        # package), which the plain suite already does: nothing of theirs runs instrumented
        log "sanitizers: t/build_plain.t and t/package.t are left to the plain suite"
        for f in "${files[@]}"; do
            case "$f" in */build_plain.t | */package.t) ;; *) kept+=("$f") ;; esac
        done
        files=("${kept[@]}")
    fi
    prove -j "${TEST_JOBS:-2}" -I "$ROOT/t/lib" "${files[@]}"
    log "nginx tests again over PostgreSQL (SIGNIN_TEST_PG)"
    pg_http_tests
    log "fuzz targets, ${FUZZ_SECONDS:-5} s each (fuzz/run)"
    FUZZ_SECONDS="${FUZZ_SECONDS:-5}" "$ROOT/fuzz/run"
}

# ./build.sh compat [VERSION...]: each version's tree from NGINX_TARBALLS or NGINX_GIT, built with
# the module in build/compat/VERSION/ (its own nginx binary), then prove t/ against it; Debian's
# nginx (the plain build) is the first row. One log per version beside build/compat.md.
compat_source() {
    local v="$1" dest="$2"
    rm -rf "$dest"
    mkdir -p "$dest"
    if [ -n "${NGINX_TARBALLS:-}" ]; then
        tar -xzf "$NGINX_TARBALLS/nginx-$v.tar.gz" -C "$dest" --strip-components=1
    else
        git -C "$NGINX_GIT" archive "release-$v" | tar -x -C "$dest"
    fi
}

compat_row() {  # VERSION SOURCE LOG: one line of the table from a run's log
    local v="$1" from="$2" logf="$3" result files tests failed
    result="$(grep -Eo '^Result: [A-Z]+' "$logf" | tail -1 | cut -d' ' -f2)"
    files="$(grep -Eo 'Files=[0-9]+' "$logf" | tail -1 | cut -d= -f2)"
    tests="$(grep -Eo 'Tests=[0-9]+' "$logf" | tail -1 | cut -d= -f2)"
    failed="$(grep -E '^/.*\.t +\(Wstat' "$logf" | sed -e 's#.*/t/##' -e 's# .*##' | tr '\n' ' ')"
    if [ -z "$result" ]; then
        result="not built"
        failed="$(grep -E 'error:' "$logf" | head -1 | sed 's#.*/src/#src/#' | cut -c1-120)"
    fi
    printf '| %s | %s | %s | %s | %s | %s |\n' "$v" "$from" "${files:--}" "${tests:--}" "$result" "${failed:--}"
}

compat() {
    local versions=("$@") out="$ROOT/build/compat" v
    if [ -z "${NGINX_TARBALLS:-}" ]; then
        NGINX_GIT="${NGINX_GIT:-$ROOT/build/nginx.git}"
        if [ ! -d "$NGINX_GIT" ]; then
            log "cloning nginx's repository into $NGINX_GIT"
            git clone --bare --quiet https://github.com/nginx/nginx.git "$NGINX_GIT"
        fi
        [ ${#versions[@]} -gt 0 ] || versions=(1.24.0 1.26.3 1.28.3
            "$(git -C "$NGINX_GIT" tag -l 'release-1.*' | sed 's/^release-//' | sort -V | tail -1)")
    fi
    [ ${#versions[@]} -gt 0 ] || { echo "build.sh compat: name the versions of NGINX_TARBALLS" >&2; exit 2; }
    mkdir -p "$out"
    install_test_npm
    export SIGNIN_ROOT="$ROOT"
    local rows=() debian
    debian="$(/usr/sbin/nginx -v 2>&1 | sed 's#.*nginx/##')"
    log "compat: Debian's nginx $debian"
    ( export NGINX_BIN=/usr/sbin/nginx SIGNIN_MODULE="$BUILD/modules/ngx_http_signin_module.so"
      export SIGNIN_ADMIN="$BUILD/core/signin-admin"
      prove -j "${TEST_JOBS:-2}" -I "$ROOT/t/lib" "$ROOT"/t/*.t ) >"$out/debian-$debian.log" 2>&1 || true
    rows+=("$(compat_row "$debian" "Debian 12 nginx + nginx-dev" "$out/debian-$debian.log")")
    for v in "${versions[@]}"; do
        log "compat: nginx $v from source"
        ( set -e
          compat_source "$v" "$out/src/nginx-$v"
          export NGINX_SRC="$out/src/nginx-$v"
          export SIGNIN_ADMIN="$BUILD/core/signin-admin"  # the core does not depend on nginx: the plain build's
          BUILD="$out/$v"
          build_module
          export NGINX_BIN="$BUILD/nginx/objs/nginx" SIGNIN_MODULE="$BUILD/modules/ngx_http_signin_module.so"
          "$NGINX_BIN" -V 2>&1 | head -1
          # (t/package.t is about Debian's nginx and its package: the first row runs it)
          prove -j "${TEST_JOBS:-2}" -I "$ROOT/t/lib" $(ls "$ROOT"/t/*.t | grep -v '/package\.t$') ) >"$out/$v.log" 2>&1 || true
        rows+=("$(compat_row "$v" "source (${NGINX_TARBALLS:+tarball}${NGINX_TARBALLS:-git tag release-$v})" "$out/$v.log")")
    done
    {
        echo "# ngx_signin against nginx versions ($(date -u +%Y-%m-%d), $(uname -m), ./build.sh compat)"
        echo
        echo "| nginx | built from | test files | tests | result | failed files |"
        echo "| --- | --- | --- | --- | --- | --- |"
        printf '%s\n' "${rows[@]}"
    } >"$ROOT/build/compat.md"
    cat "$ROOT/build/compat.md"
    ! grep -qE '\| (FAIL|not built) \|' "$ROOT/build/compat.md"
}

# ./build.sh deb: the Debian package libnginx-mod-http-signin_<version>_<arch>.deb in build/deb/,
# built from the tracked files the way Debian's own libnginx-mod-* are (debian/rules), then
# checked by lintian (build/deb/lintian.txt; an error fails the build).
build_deb() {
    local out="$BUILD/deb"
    rm -rf "$out"
    mkdir -p "$out/src"
    if [ -d "$ROOT/.git" ]; then
        (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$out/src"
    else
        (cd "$ROOT" && tar --exclude=./build --exclude=./run --exclude=node_modules -cf - .) | tar -xf - -C "$out/src"
    fi
    log "building the Debian package (dpkg-buildpackage)"
    # a package is never built with the sanitizers (config reads SIGNIN_SANITIZE)
    (cd "$out/src" && unset SIGNIN_SANITIZE && DEB_BUILD_OPTIONS="parallel=$JOBS" \
        dpkg-buildpackage -b -us -uc >"$out/build.log" 2>&1) || {
        tail -40 "$out/build.log" >&2
        return 1
    }
    local deb
    deb="$(ls "$out"/libnginx-mod-http-signin_*.deb)"
    log "lintian $deb"
    lintian --no-tag-display-limit "$deb" >"$out/lintian.txt" 2>&1 || true
    cat "$out/lintian.txt" >&2
    if grep -q '^E:' "$out/lintian.txt"; then
        echo "build.sh deb: lintian reports errors" >&2
        return 1
    fi
    log "package: $deb"
}

# ./build.sh run [--fresh]: serves nginx.conf.example from ./run/ (its store kept across runs;
# --fresh starts over) on 127.0.0.1:$PORT, after checking the port is free.
serve_example() {
    local port="${PORT:-8080}"
    local prefix="$ROOT/run"
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "build.sh run: 127.0.0.1:$port is in use; choose another port: PORT=9000 ./build.sh run" >&2
        exit 1
    fi
    [ "${1:-}" = "--fresh" ] && rm -rf "$prefix"
    mkdir -p "$prefix/modules" "$prefix/logs" "$prefix/temp" "$prefix/html"
    chmod 755 "$prefix"
    ln -sfn "$BUILD/modules/ngx_http_signin_module.so" "$prefix/modules/ngx_http_signin_module.so"
    cp -r "$ROOT/examples/." "$prefix/html/" 2>/dev/null || true
    sed -e "s/127\.0\.0\.1:8080/127.0.0.1:$port/g" "$ROOT/nginx.conf.example" >"$prefix/nginx.conf"
    "$(nginx_bin)" -p "$prefix" -c "$prefix/nginx.conf" -t -q
    local u="http://127.0.0.1:$port"
    cat >&2 <<EOF

ngx_signin serves nginx.conf.example at $u/   (prefix $prefix: its store stays there across
runs; ./build.sh run --fresh starts over)
  $u/app/            a "legacy" app only signed-in people reach: it sends you to the sign-in page
  $u/auth/           the sign-in page;  $u/auth/account  the account page
  $u/_dev/mailbox    the emails sent (with each code and link): open it in another tab
  $u/staff/          a location only the role "staff" passes (signin-admin role add EMAIL staff)
  $u/api/openapi.json  the versioned API's OpenAPI document (?version=v2)
  $u/signin-metrics  Prometheus metrics;  $u/admin/emails  previews of every email
  or with curl:
    curl -si -H 'content-type: application/json' -d '{"email":"you@example.com"}' $u/auth/register
    curl -s $u/_dev/mailbox          # the emails the dev mailbox received (code inside)
    curl -si -H 'content-type: application/json' -H 'origin: $u' \\
         -d '{"email":"you@example.com","code":"CODE"}' $u/auth/session
  Ctrl-C stops it.
EOF
    exec "$(nginx_bin)" -p "$prefix" -c "$prefix/nginx.conf" -g 'daemon off;'
}

case "$cmd" in
    build) build_all ;;
    test) install_deps "${TEST_PACKAGES[@]}"; install_node; build_all; run_tests ;;
    run) install_deps "${BUILD_PACKAGES[@]}"; build_module; serve_example "${2:-}" ;;
    bench) install_deps "${BENCH_PACKAGES[@]}"; build_all; export NGINX_BIN="$(nginx_bin)"; exec "$ROOT/bench/run" ;;
    fuzz) install_deps clang libclang-rt-dev "${BUILD_PACKAGES[@]}"; exec "$ROOT/fuzz/run" "${2:-${FUZZ_SECONDS:-60}}" ;;
    deb) install_deps "${BUILD_PACKAGES[@]}" "${PACKAGE_PACKAGES[@]}"; build_deb ;;
    compat) shift; install_deps "${TEST_PACKAGES[@]}" git; install_node; build_all; compat "$@" ;;
    deps) install_deps "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" "${BENCH_PACKAGES[@]}" "${PACKAGE_PACKAGES[@]}"; install_node ;;
    *) echo "usage: $0 [--no-install] [build|test|run [--fresh]|bench|deb|fuzz [SECONDS]|compat [VERSION...]|deps]" >&2; exit 2 ;;
esac
