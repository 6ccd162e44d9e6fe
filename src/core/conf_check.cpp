// The checks of the sign-in settings that need no web server (signin/conf_check.hpp).
#include "signin/conf_check.hpp"

#include <utility>

namespace signin::conf {

namespace {

void error(Problems &out, std::string directive, std::string message) {
    out.push_back(Problem{std::move(directive), std::move(message), false});
}

// nginx -t quotes a directive's name: "signin_token_ttl"
std::string quoted(const std::string &name) { return "\"" + name + "\""; }

}  // namespace

bool has_error(const Problems &problems) {
    for (const Problem &p : problems) {
        if (!p.warning) return true;
    }
    return false;
}

Problems check_sessions(const Policy &policy) {
    Problems out;
    // every default is above zero: a zero is written by hand
    const std::pair<const char *, Millis> lifetimes[] = {{"signin_token_ttl", policy.token_ttl},
                                                         {"signin_session_ttl", policy.session_ttl},
                                                         {"signin_session_idle", policy.session_idle},
                                                         {"signin_bearer_ttl", policy.bearer_ttl}};
    for (const auto &[name, value] : lifetimes) {
        if (value > 0) continue;
        error(out, name, quoted(name) + " must be longer than 0 (every code or session would be dead on arrival)");
    }
    if (policy.audit_keep <= 0) error(out, "signin_audit_keep", "\"signin_audit_keep\" must be longer than 0");
    return out;
}

Problems check_passwords(const Policy &policy) {
    Problems out;
    const AttemptLimits &a = policy.attempts;
    if (a.backoff > a.backoff_max || a.register_backoff > a.register_backoff_max) {
        const char *name = a.backoff > a.backoff_max ? "signin_password_backoff" : "signin_password_register_backoff";
        error(out, name, "a signin_password_*backoff must not exceed its _max");
        return out;  // a zero window below is then beside the point
    }
    const std::pair<const char *, Millis> windows[] = {{"signin_password_address_window", a.address_window},
                                                       {"signin_password_backoff", a.backoff},
                                                       {"signin_password_register_backoff", a.register_backoff}};
    for (const auto &[name, value] : windows) {
        if (value > 0) continue;
        error(out, name, quoted(name) + " must be longer than 0 (a time window)");
        break;  // one at a time, as the first is fixed the next shows
    }
    return out;
}

Problems check_delivery(const Delivery &delivery) {
    Problems out;
    if (delivery.email && !delivery.http_api && !delivery.smtp) {
        error(out, "signin_email",
              "email sign-in needs \"signin_smtp\" (a mail relay) or \"signin_delivery\" (an HTTP mail API), or "
              "\"signin_email off\"");
    }
    if (delivery.hold <= 0) {
        error(out, "signin_delivery_timeout", "\"signin_delivery_timeout\" must be longer than 0");
    }
    return out;
}

Problems check_delivery_ways(const Delivery &delivery) {
    Problems out;
    if (delivery.http_api && delivery.smtp) {
        error(out, "signin_smtp",
              "signin_smtp and signin_delivery both send the emails: keep one (signin_smtp for a mail relay, "
              "signin_delivery for an HTTP mail API)");
    }
    return out;
}

Problems check_site(const Site &site) {
    Problems out;
    if (site.session_cache > 0 && !site.store.reads_may_block) {
        out.push_back(Problem{"signin_session_cache",
                              "\"signin_session_cache\" is for a store whose reads go over the network (this one is "
                              "read in memory): ignored",
                              true});
    }
    // the nodes that share a store share the key (it seals what the store keeps): a file each
    // node would make for itself by default would differ
    if (site.store.shared_by_nodes && !site.secret_key_named) {
        error(out, "signin_store",
              "a signin_store that several nodes share needs \"signin_secret_key FILE\", the same file on every node");
    }
    if (site.body_max > kBodyMaxLimit) error(out, "signin_body_max", "\"signin_body_max\" must not exceed 64k");
    return out;
}

Problems check_connections(const Connections &c) {
    Problems out;
    // each worker's connections=, and the one its event loop reads sessions over
    const std::size_t wanted = c.workers * (c.per_worker + 1) * c.nodes;
    if (wanted > c.limit) {
        out.push_back(Problem{
            "signin_store",
            "signin_store: " + std::to_string(c.nodes) + (c.nodes == 1 ? " node" : " nodes") + " x " +
                std::to_string(c.workers) + " worker processes x (connections=" + std::to_string(c.per_worker) +
                " + 1 for the session reads) = " +
                std::to_string(wanted) + " connections, but the database lets ordinary clients hold " +
                std::to_string(c.limit) +
                " (max_connections less the reserved ones): under load the rest are refused and their requests "
                "answer 503; lower connections=, or raise the database's max_connections",
            true});
    }
    return out;
}

Problems check_providers(std::size_t providers, bool fetch_named) {
    Problems out;
    if (providers > 0 && !fetch_named) {
        error(out, "signin_provider",
              "signin_provider needs \"signin_provider_fetch\": the internal location its calls to the provider go "
              "through (proxy_pass $signin_provider_url;)");
    }
    return out;
}

Problems check_admin(bool admin, bool mfa) {
    Problems out;
    if (admin && !mfa) {
        error(out, "signin_admin",
              "signin_admin needs \"signin_mfa on\": every change an administrator makes needs a session that "
              "passed a second factor");
    }
    return out;
}

}  // namespace signin::conf
