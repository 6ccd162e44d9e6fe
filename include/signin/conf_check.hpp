// The checks of the sign-in settings that need no web server: values out of range and settings
// that contradict each other. Each problem names the directive at fault, so that nginx -t can
// report it at that directive's line; anything else that holds the same settings (signin-admin, a
// test) can run the same checks. Valid C++17: the glue includes it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "signin/engine.hpp"
#include "signin/store.hpp"
#include "signin/types.hpp"

namespace signin::conf {

struct Problem {
    std::string directive;  // the directive whose value is at fault
    std::string message;    // one sentence, the directive's name in it
    bool warning = false;   // the setting is ignored and the server starts anyway
};
using Problems = std::vector<Problem>;

// Whether any problem stops the server (not a warning).
bool has_error(const Problems &problems);

// Sessions and tokens: a lifetime of zero (every code or session dead on arrival), an audit log
// kept for no time.
Problems check_sessions(const Policy &policy);

// Password limits: a backoff above its own maximum, a time window of zero.
Problems check_passwords(const Policy &policy);

// How the emails leave.
struct Delivery {
    bool email = true;      // email sign-in is on (signin_email)
    bool http_api = false;  // an HTTP mail API is named (signin_delivery)
    bool smtp = false;      // a mail relay is named (signin_smtp)
    Millis hold = 60000;    // how long a send holds its email (signin_delivery_timeout)
};
// Email sign-in with no way to send, and a hold of zero.
Problems check_delivery(const Delivery &delivery);
// Both ways named at once: each would send every email.
Problems check_delivery_ways(const Delivery &delivery);

// The store and the requests.
struct Site {
    StoreTraits store;                // the store's traits (store_traits of signin_store)
    bool secret_key_named = false;    // signin_secret_key is written
    Millis session_cache = 0;         // signin_session_cache (0: off)
    std::size_t body_max = 4096;      // signin_body_max
};
inline constexpr std::size_t kBodyMaxLimit = 64 * 1024;
// A store that several nodes share without a key file they all read, a session cache a store
// read in memory has no use for (warning), a request body limit above kBodyMaxLimit.
Problems check_site(const Site &site);

// A database's connections: what every node's workers may hold together against what the server
// lets ordinary clients hold (its max_connections less the reserved ones).
struct Connections {
    std::size_t workers = 1;     // worker_processes
    std::size_t per_worker = 0;  // signin_store's connections=
    std::size_t nodes = 1;       // signin_store's nodes=: the nginx nodes that share the database
    std::size_t limit = 0;       // what the server allows (pg_connection_limit)
};
// workers x (per_worker + 1, the event loop's connection for session reads) x nodes above the
// limit (warning: under load the last connections are refused, and those requests answer 503),
// with the arithmetic and what to change.
Problems check_connections(const Connections &c);

// Identity providers named without the internal location their calls go through.
Problems check_providers(std::size_t providers, bool fetch_named);

// The administrators' pages and API with no second factor: every change there needs a session that
// passed one, so nothing could ever be changed.
Problems check_admin(bool admin, bool mfa);

}  // namespace signin::conf
