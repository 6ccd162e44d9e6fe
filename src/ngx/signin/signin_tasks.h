// Thread tasks of the sign-in module, in the shape of nginx's own thread offloads
// (ngx_http_file_cache.c): each task lives in a pool of its own (it may outlive the request that
// started it) and carries a timer while it runs (nginx 1.25.4, ticket #2162: a worker that is
// shutting down exits once no timer is left, and would drop requests whose task is still running).
// Used by the jobs (signin_jobs.cpp) and the session reads (signin_reads.cpp).
#pragma once

#include "ngx_signin_nginx.h"

#include <new>

namespace signin_ngx {

inline constexpr ngx_msec_t kTaskTimer = 60000;  // as nginx's thread offloads: alert after a minute

// An event handler's body: nothing may reach nginx, so an exception is logged where it stops.
template <class F>
void guarded(const char *what, F &&f) noexcept {
    guard_log(ngx_cycle->log, NGX_LOG_ALERT, what, f);
}

// The task's timer went off before the task ended: nginx's alert, and the task keeps its event.
inline bool task_overdue(ngx_event_t *ev) {
    if (ev->timedout) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0, "signin: a thread task took too long");
        ev->timedout = 0;
        return true;
    }
    if (ev->timer_set) ngx_del_timer(ev);
    return false;
}

// A thread task whose ctx is a T, in a pool of its own. T has `ngx_pool_t *pool` and
// `ngx_thread_task_t *task`.
template <class T>
T *new_task(void (*run)(void *, ngx_log_t *), ngx_event_handler_pt done) {
    ngx_log_t *log = ngx_cycle->log;
    ngx_pool_t *pool = ngx_create_pool(512, log);
    if (pool == nullptr) return nullptr;
    ngx_thread_task_t *task = ngx_thread_task_alloc(pool, sizeof(T));
    if (task == nullptr) {
        ngx_destroy_pool(pool);
        return nullptr;
    }
    T *t = new (task->ctx) T();
    t->pool = pool;
    t->task = task;
    task->handler = run;
    task->event.handler = done;
    task->event.data = t;
    task->event.log = log;
    return t;
}

template <class T>
void delete_task(T *t) {
    ngx_pool_t *pool = t->pool;
    t->~T();
    ngx_destroy_pool(pool);  // the task and its event with it
}

// Posts a task filled in by its caller (the thread may run it at once), with its timer.
template <class T>
ngx_int_t post_task(ngx_thread_pool_t *threads, T *t) {
    if (ngx_thread_task_post(threads, t->task) != NGX_OK) return NGX_ERROR;
    ngx_add_timer(&t->task->event, kTaskTimer);
    return NGX_OK;
}

// signin_thread_pool, where the jobs' reads and write batches run (nullptr before the worker set
// it: set_job_pools).
ngx_thread_pool_t *job_write_pool();

}  // namespace signin_ngx
