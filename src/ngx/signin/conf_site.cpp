// The store and the site: where the store is and the key beside it, the site's origin and name, who
// may join, how clients are told apart, the request bodies, the thread pools; and what nginx -t
// checks of them once the http block is read (a store the worker user cannot reach is refused here,
// before the master makes its directory).
#include "signin_conf.h"
#include "signin_directives.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace signin_ngx {

// ---------------------------------------------------------------- directives

// A number=N parameter of signin_store (N from 1 to 10000); false after saying what is wrong.
static bool store_count(ngx_conf_t *cf, const ngx_str_t &v, std::size_t prefix, size_t *out) {
    const ngx_int_t n = ngx_atoi(v.data + prefix, v.len - prefix);
    if (n < 1 || n > 10000) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid \"%V\" (a number from 1 to 10000)", &v);
        return false;
    }
    *out = static_cast<size_t>(n);
    return true;
}

// signin_store postgresql://... [connections=N] [nodes=N]
static char *set_database_params(ngx_conf_t *cf, MainConf *m) {
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    for (ngx_uint_t i = 2; i < cf->args->nelts; i++) {
        const ngx_str_t &v = value[i];
        bool ok = false;
        if (v.len > 12 && ngx_strncmp(v.data, "connections=", 12) == 0) {
            ok = store_count(cf, v, 12, &m->store_connections);
        } else if (v.len > 6 && ngx_strncmp(v.data, "nodes=", 6) == 0) {
            ok = store_count(cf, v, 6, &m->store_nodes);
        } else if (v.len > 5 && ngx_strncmp(v.data, "size=", 5) == 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"%V\": size= is for a store in a directory, not a database", &v);
        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"", &v);
        }
        if (!ok) return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

static char *set_store(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->store_path.len) return const_cast<char *>("is duplicate");
    if (!note_line(cf, m, cmd)) return static_cast<char *>(NGX_CONF_ERROR);
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    m->store_path = value[1];
    // a database's URI: taken as written, with its connections instead of a size
    if (!signin::store_traits(sv(value[1])).in_directory) return set_database_params(cf, m);
    if (ngx_conf_full_name(cf->cycle, &m->store_path, 0) != NGX_OK) return static_cast<char *>(NGX_CONF_ERROR);
    for (ngx_uint_t i = 2; i < cf->args->nelts; i++) {
        if (ngx_strncmp(value[i].data, "size=", 5) == 0) {
            ngx_str_t s = {value[i].len - 5, value[i].data + 5};
            off_t size = ngx_parse_offset(&s);  // accepts k, m and g
            if (size == NGX_ERROR || size < 1024 * 1024) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid store size \"%V\" (at least 1m)", &value[i]);
                return static_cast<char *>(NGX_CONF_ERROR);
            }
            m->store_size = static_cast<size_t>(size);
            continue;
        }
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"", &value[i]);
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

static char *set_secret_key(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->secret_key_path.len) return const_cast<char *>("is duplicate");
    m->secret_key_path = static_cast<ngx_str_t *>(cf->args->elts)[1];
    if (ngx_conf_full_name(cf->cycle, &m->secret_key_path, 0) != NGX_OK) return static_cast<char *>(NGX_CONF_ERROR);
    return NGX_CONF_OK;
}

static char *set_origin(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    auto *m = static_cast<MainConf *>(conf);
    if (m->origin) return const_cast<char *>("is duplicate");
    auto *value = static_cast<ngx_str_t *>(cf->args->elts);
    return guard_conf(cf, "signin_origin", [&]() -> char * {
        std::string why;
        std::optional<signin::Origin> o = signin::parse_origin(sv(value[1]), &why);
        if (!o) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid signin_origin \"%V\": %s", &value[1], why.c_str());
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->origin = pool_object<signin::Origin>(cf->pool);
        if (m->origin == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
        *m->origin = std::move(*o);
        return NGX_CONF_OK;
    });
}

// signin_site_name NAME: {{site_name}} in the emails (default: the origin without its scheme).
static char *set_site_name(ngx_conf_t *cf, ngx_command_t *, void *conf) {
    return guard_conf(cf, "signin_site_name", [&]() -> char * {
        auto *m = static_cast<MainConf *>(conf);
        ngx_str_t name = static_cast<ngx_str_t *>(cf->args->elts)[1];
        std::string_view v = sv(name);
        if (v.empty() || v.size() > 100 || v.find_first_of("\r\n") != std::string_view::npos) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_site_name must be one line of 1 to 100 bytes");
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->emails->set_site_name(std::string(v));
        m->site_name = name;
        m->policy->mfa_issuer = std::string(v);  // the otpauth issuer too
        return NGX_CONF_OK;
    });
}

// A file's whole text, or nullopt (nginx -t says why).
std::optional<std::string> read_conf_file(ngx_conf_t *cf, ngx_command_t *cmd, ngx_str_t name, std::string &path) {
    if (ngx_conf_full_name(cf->cycle, &name, 1) != NGX_OK) return std::nullopt;
    path.assign(sv(name));
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno, "%V \"%s\" cannot be read", &cmd->name, path.c_str());
        return std::nullopt;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}


// signin_registration on|off [domain=DOMAIN ...] [file=PATH]: who may join, read now (and at
// every reload).
static char *set_registration(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    return guard_conf(cf, "signin_registration", [&]() -> char * {
        auto *m = static_cast<MainConf *>(conf);
        if (written(m, sv(cmd->name))) return const_cast<char *>("is duplicate");
        if (!note_line(cf, m, cmd)) return static_cast<char *>(NGX_CONF_ERROR);
        auto *value = static_cast<ngx_str_t *>(cf->args->elts);
        std::string_view flag = sv(value[1]);
        if (flag != "on" && flag != "off") {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_registration takes \"on\" or \"off\", not \"%V\"", &value[1]);
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        m->policy->allow_registration = flag == "on";
        if (cf->args->nelts == 2) return NGX_CONF_OK;
        if (!m->policy->allow_registration) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_registration off takes no domain= or file=");
            return static_cast<char *>(NGX_CONF_ERROR);
        }
        auto join = std::make_shared<signin::People>();
        for (ngx_uint_t i = 2; i < cf->args->nelts; i++) {
            std::string_view a = sv(value[i]);
            std::string text, what(a), why;
            if (a.rfind("domain=", 0) == 0) {
                text = "@" + std::string(a.substr(7));
            } else if (a.rfind("file=", 0) == 0) {
                auto file = read_conf_file(cf, cmd, ngx_str_t{value[i].len - 5, value[i].data + 5}, what);
                if (!file) return static_cast<char *>(NGX_CONF_ERROR);
                text = std::move(*file);
            } else {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\" (domain=DOMAIN or file=PATH)", &value[i]);
                return static_cast<char *>(NGX_CONF_ERROR);
            }
            auto people = signin::People::parse(text, &why);
            if (!people) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_registration \"%s\": %s", what.c_str(), why.c_str());
                return static_cast<char *>(NGX_CONF_ERROR);
            }
            join->add(*people);
        }
        m->policy->may_join = std::move(join);
        return NGX_CONF_OK;
    });
}


// signin_thread_pool NAME / signin_password_thread_pool NAME: the pool is added here, so that
// nginx's "unknown thread pool" names this line when no `thread_pool NAME ...;` declares it.
// nginx says so only once the whole file is read, and not what to write; a declaration may still
// follow the http block, so a pool not declared above this line is a warning that gives the line
// to add, and nginx's own check decides.
static char *set_thread_pool(ngx_conf_t *cf, ngx_command_t *cmd, void *conf) {
    char *rv = ngx_conf_set_str_slot(cf, cmd, conf);
    if (rv != NGX_CONF_OK) return rv;
    ngx_str_t name = static_cast<ngx_str_t *>(cf->args->elts)[1];
    // "default" needs no line: nginx makes that pool (32 threads) when it is used
    if (sv(name) != "default" && ngx_thread_pool_get(cf->cycle, &name) == nullptr) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "no \"thread_pool %V\" is declared above \"%V\": unless one follows, nginx refuses "
                           "this line; add \"thread_pool %V threads=4;\" to the main context (outside http { })",
                           &name, &cmd->name, &name);
    }
    return ngx_thread_pool_add(cf, &name) == nullptr ? static_cast<char *>(NGX_CONF_ERROR) : NGX_CONF_OK;
}

static ngx_conf_num_bounds_t ipv6_prefix_bounds = {ngx_conf_check_num_bounds, 1, 128};

Directives site_directives() {
    static ngx_command_t table[] = {
        {ngx_string("signin_store"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE123, guarded_directive<set_store>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_origin"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_origin, NGX_HTTP_MAIN_CONF_OFFSET, 0,
         nullptr},
        {ngx_string("signin_secret_key"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, guarded_directive<set_secret_key>,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_site_name"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, set_site_name,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_registration"), NGX_HTTP_MAIN_CONF | NGX_CONF_1MORE, set_registration,
         NGX_HTTP_MAIN_CONF_OFFSET, 0, nullptr},
        {ngx_string("signin_client"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, ngx_http_set_complex_value_slot,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, client), nullptr},
        {ngx_string("signin_client_ipv6_prefix"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         policy_num<&signin::Policy::attempts, &signin::AttemptLimits::client_ipv6_prefix>, NGX_HTTP_MAIN_CONF_OFFSET,
         0, &ipv6_prefix_bounds},
        {ngx_string("signin_body_max"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, noted<ngx_conf_set_size_slot>,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, body_max), nullptr},
        {ngx_string("signin_thread_pool"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1, guarded_directive<set_thread_pool>,
         NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, thread_pool_name), nullptr},
        {ngx_string("signin_password_thread_pool"), NGX_HTTP_MAIN_CONF | NGX_CONF_TAKE1,
         guarded_directive<set_thread_pool>, NGX_HTTP_MAIN_CONF_OFFSET, offsetof(MainConf, password_pool_name),
         nullptr},
    };
    return table;
}

// ---------------------------------------------------------------- checks

// The user the workers will run as, decided as ngx_core_module decides it: the `user` line read so
// far, or nginx's default user for a master started as root. nullopt when the workers will be this
// process's own user (not root: no check needed) or when the user does not exist (nginx says so).
struct WorkerUser {
    std::string name;
    uid_t uid;
    gid_t gid;
};

static std::optional<WorkerUser> worker_user(ngx_conf_t *cf) {
    if (geteuid() != 0) return std::nullopt;
    auto *ccf = reinterpret_cast<ngx_core_conf_t *>(ngx_get_conf(cf->cycle->conf_ctx, ngx_core_module));
    if (ccf != nullptr && ccf->user != static_cast<ngx_uid_t>(NGX_CONF_UNSET_UINT)) {
        return WorkerUser{ccf->username ? ccf->username : "", ccf->user, ccf->group};
    }
    // no `user` line above the http block: nginx will use its built-in user and group
    const passwd *pw = getpwnam(NGX_USER);
    const group *gr = getgrnam(NGX_GROUP);
    if (pw == nullptr || gr == nullptr) return std::nullopt;
    return WorkerUser{NGX_USER, pw->pw_uid, gr->gr_gid};
}

// The first existing directory on the way to `path` that `u` may not search (nothing below it can
// be opened by that user), or "". The kernel answers, in a child that takes the user's identity as
// a worker does (groups included, ACLs too), so no rule of permissions is guessed here. Directories
// that do not exist yet are made by the master, searchable (init_module). "" as well when the
// question cannot be asked (fork fails): the store's own open then says what is wrong.
static std::string unsearchable_parent(const std::string &path, const WorkerUser &u) {
    std::vector<std::string> dirs{"/"};
    std::string_view p = path;
    while (p.size() > 1 && p.back() == '/') p.remove_suffix(1);
    for (std::size_t i = 1; i < p.size(); i++) {
        if (p[i] != '/') continue;
        struct stat st;
        std::string dir(p.substr(0, i));
        if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) break;
        dirs.push_back(std::move(dir));
    }
    if (dirs.size() > 250) dirs.resize(250);  // an exit status counts them
    const pid_t pid = fork();
    if (pid < 0) return {};
    if (pid == 0) {
        if (setgid(u.gid) != 0 || initgroups(u.name.c_str(), u.gid) != 0 || setuid(u.uid) != 0) _exit(255);
        for (std::size_t i = 0; i < dirs.size(); i++) {
            if (access(dirs[i].c_str(), X_OK) != 0) _exit(static_cast<int>(i + 1));
        }
        _exit(0);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return {};
    }
    if (!WIFEXITED(status)) return {};
    const int n = WEXITSTATUS(status);
    return n >= 1 && static_cast<std::size_t>(n) <= dirs.size() ? dirs[static_cast<std::size_t>(n - 1)] : std::string();
}

// The secret key's default path: beside the store, never in it ("<store>.key").
static bool default_key_path(ngx_conf_t *cf, MainConf *m) {
    if (m->secret_key_path.len != 0) return true;
    ngx_str_t dir = m->store_path;
    while (dir.len > 1 && dir.data[dir.len - 1] == '/') dir.len--;
    m->secret_key_path.len = dir.len + 4;
    m->secret_key_path.data = static_cast<u_char *>(ngx_pnalloc(cf->pool, dir.len + 5));
    if (m->secret_key_path.data == nullptr) return false;
    *ngx_cpymem(ngx_cpymem(m->secret_key_path.data, dir.data, dir.len), ".key", 4) = '\0';
    return true;
}

// A store in a directory that the worker user cannot reach: every sign-in and gated request would
// answer 503. Refused now, before the master makes its directory (init_module).
static bool store_reachable(ngx_conf_t *cf, const MainConf *m) {
    auto u = worker_user(cf);
    if (!u) return true;
    const std::string path(sv(m->store_path));
    const std::string dir = unsearchable_parent(path, *u);
    if (dir.empty()) return true;
    log_at(cf, NGX_LOG_EMERG, m, "signin_store",
           "signin_store \"" + path + "\" cannot be reached by the worker user \"" + u->name +
               "\": that user may not search \"" + dir +
               "\", so every sign-in and gated request would answer 503; put the store where \"" + u->name +
               "\" can reach it (e.g. under /var/lib/nginx), or let it search \"" + dir +
               "\" (chmod o+x, or a group of that user)");
    return false;
}

// nginx -t with a database: what every node's workers may hold against what the server allows
// (asked over one connection). Only under -t: a start or reload does not wait for the database.
// A server that cannot be asked is said, and is no error: it may be down while nginx is tested.
static void check_database_connections(ngx_conf_t *cf, MainConf *m) {
    signin::conf::Connections c;
    auto *ccf = reinterpret_cast<ngx_core_conf_t *>(ngx_get_conf(cf->cycle->conf_ctx, ngx_core_module));
    // worker_processes read so far (a line below the http block is not: nginx's default, 1)
    if (ccf != nullptr && ccf->worker_processes != NGX_CONF_UNSET && ccf->worker_processes > 0) {
        c.workers = static_cast<std::size_t>(ccf->worker_processes);
    }
    c.per_worker = m->store_connections;
    c.nodes = m->store_nodes;
    try {
        c.limit = signin::pg_connection_limit(std::string(sv(m->store_path)));
    } catch (const std::exception &e) {
        std::string why = e.what();  // libpq's message runs over lines: one line in the log
        for (char &ch : why) {
            if (ch == '\n' || ch == '\t') ch = ' ';
        }
        log_at(cf, NGX_LOG_NOTICE, m, "signin_store",
               "signin_store: the database's max_connections could not be read, so the connections were not "
               "checked: " + why);
        return;
    }
    report(cf, m, signin::conf::check_connections(c));
}

char *check_site(ngx_conf_t *cf, MainConf *m) {
    if (m->store_path.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_api and signin_require need \"signin_store\"");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    if (m->origin == nullptr) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "signin_api and signin_require need \"signin_origin\"");
        return static_cast<char *>(NGX_CONF_ERROR);
    }
    signin::conf::Site site;
    site.store = signin::store_traits(sv(m->store_path));
    if (site.store.in_directory && !store_reachable(cf, m)) return static_cast<char *>(NGX_CONF_ERROR);
    if (!m->has_api) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "signin_require is used but no location has \"signin_api\": nobody can sign in");
    }
    site.secret_key_named = m->secret_key_path.len != 0;
    site.session_cache = static_cast<signin::Millis>(m->session_cache);
    site.body_max = m->body_max;
    if (!report(cf, m, signin::conf::check_site(site))) return static_cast<char *>(NGX_CONF_ERROR);
    if (site.store.shared_by_nodes && ngx_test_config) check_database_connections(cf, m);
    if (!default_key_path(cf, m)) return static_cast<char *>(NGX_CONF_ERROR);
    m->thread_pool = ngx_thread_pool_add(cf, &m->thread_pool_name);
    if (m->thread_pool == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    // Argon2id jobs: signin_thread_pool unless a pool of their own is named
    m->password_pool = m->thread_pool;
    if (m->password_pool_name.len != 0) {
        m->password_pool = ngx_thread_pool_add(cf, &m->password_pool_name);
        if (m->password_pool == nullptr) return static_cast<char *>(NGX_CONF_ERROR);
    }
    return NGX_CONF_OK;
}

}  // namespace signin_ngx
