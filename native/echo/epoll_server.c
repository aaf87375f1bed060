/* epoll echo server: non-blocking sockets, level-triggered, one buffer per connection.
 * A connection reads only while it has nothing left to send; when a send comes up short
 * the rest stays in its buffer and it waits for EPOLLOUT (asked for only then), so a slow
 * reader holds at most one buffer and its bytes stay in order. The listener is level-triggered
 * too, so an accept that fails for want of fds (EMFILE) would wake the loop at once, forever:
 * the listener leaves the epoll set for a pause that grows while accepting keeps failing. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "echo.h"

#define CONN_BUF 16384u
#define MAX_EVENTS 256

struct econn {
  int fd;
  uint32_t len, off; /* pending output: buf[off, len) */
  bool eof;
  uint64_t last_active;
  struct econn *prev, *next;
  unsigned char buf[CONN_BUF];
};

struct eserver {
  int ep;
  const struct echo_server_config *cfg;
  struct echo_server_stats *st;
  uint64_t active;
  uint64_t now;           /* clock after the last epoll_wait */
  uint64_t accept_pause_ns, resume_at; /* resume_at != 0: the listener is out of the set */
  uint64_t next_tick;     /* next look for idle connections (idle_timeout_ns set) */
  struct econn *conns;
};

static void close_conn(struct eserver *s, struct econn *c) {
  epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
  echo_close_conn(c->fd);
  if (c->prev) c->prev->next = c->next; else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  free(c);
  s->active--;
}

static void want(struct eserver *s, struct econn *c, uint32_t events) {
  struct epoll_event ev = { .events = events, .data.ptr = c };
  epoll_ctl(s->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Sends what is pending. Returns false when the connection failed. */
static bool flush(struct eserver *s, struct econn *c) {
  while (c->off < c->len) {
    ssize_t n = send(c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return true;
      return false;
    }
    c->off += (uint32_t)n;
    s->st->bytes += (uint64_t)n;
    c->last_active = s->now;
  }
  c->off = c->len = 0;
  return true;
}

static void on_conn(struct eserver *s, struct econn *c, uint32_t events) {
  bool was_pending = c->off < c->len;
  if (was_pending) {
    if (!flush(s, c)) return close_conn(s, c);
    if (c->off < c->len) return;
    if (c->eof) return close_conn(s, c);
    want(s, c, EPOLLIN); /* drained: read again, stop asking for EPOLLOUT */
    return;
  }
  if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP))) return;
  /* Bounded rounds so one busy connection does not starve the others. */
  for (int round = 0; round < 4; round++) {
    ssize_t n = recv(c->fd, c->buf, CONN_BUF, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      return close_conn(s, c);
    }
    if (n == 0) return close_conn(s, c); /* peer done and nothing pending: close */
    c->last_active = s->now;
    c->off = 0;
    c->len = (uint32_t)n;
    if (!flush(s, c)) return close_conn(s, c);
    if (c->off < c->len) {
      want(s, c, EPOLLOUT);
      return;
    }
    if ((size_t)n < CONN_BUF) return;
  }
}

/* Tags for the two fds that are not connections (connections carry their pointer). */
static char listen_tag, stop_tag;

static void pause_accepting(struct eserver *s) {
  epoll_ctl(s->ep, EPOLL_CTL_DEL, s->cfg->listen_fd, NULL);
  s->accept_pause_ns = echo_next_accept_pause_ns(s->accept_pause_ns);
  s->resume_at = s->now + s->accept_pause_ns;
  s->st->accept_pauses++;
}

static void on_listen(struct eserver *s) {
  for (;;) {
    int fd = accept4(s->cfg->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN) pause_accepting(s); /* EMFILE, ENFILE, ENOBUFS, ENOMEM */
      return;
    }
    s->accept_pause_ns = 0;
    echo_accepted(fd);
    if (s->cfg->max_conns && s->active >= s->cfg->max_conns) {
      echo_close_conn(fd);
      s->st->refused++;
      continue;
    }
    struct econn *c = malloc(sizeof(*c));
    if (!c) {
      echo_close_conn(fd);
      continue;
    }
    memset(c, 0, offsetof(struct econn, buf));
    c->fd = fd;
    c->last_active = s->now;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
      echo_close_conn(fd);
      free(c);
      continue;
    }
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->active++;
    s->st->connections++;
    if (s->active > s->st->peak_conns) s->st->peak_conns = s->active;
  }
}

/* epoll_wait's timeout: until the listener comes back or the next idle check (-1: none). */
static int wait_ms(const struct eserver *s) {
  uint64_t until = s->resume_at;
  if (s->next_tick && (!until || s->next_tick < until)) until = s->next_tick;
  if (!until) return -1;
  return until <= s->now ? 0 : (int)((until - s->now + 999999u) / 1000000u);
}

static void on_timers(struct eserver *s) {
  if (s->resume_at && s->now >= s->resume_at) {
    s->resume_at = 0;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &listen_tag };
    epoll_ctl(s->ep, EPOLL_CTL_ADD, s->cfg->listen_fd, &ev);
    on_listen(s);
  }
  if (s->next_tick && s->now >= s->next_tick) {
    for (struct econn *c = s->conns, *next; c; c = next) {
      next = c->next;
      if (s->now - c->last_active >= s->cfg->idle_timeout_ns) {
        s->st->idle_closed++;
        close_conn(s, c);
      }
    }
    s->next_tick = s->now + echo_idle_tick_ns(s->cfg->idle_timeout_ns);
  }
}

int echo_epoll_serve(const struct echo_server_config *cfg, struct echo_server_stats *st) {
  struct eserver s;
  memset(&s, 0, sizeof(s));
  s.cfg = cfg;
  s.st = st;
  snprintf(st->setup, sizeof(st->setup), "level-triggered, %u B buffer per connection", CONN_BUF);
  s.ep = epoll_create1(EPOLL_CLOEXEC);
  if (s.ep < 0) {
    st->syscall = "epoll_create1";
    return -errno;
  }
  struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &listen_tag };
  int ret = 0;
  if (epoll_ctl(s.ep, EPOLL_CTL_ADD, cfg->listen_fd, &ev) < 0) {
    ret = -errno;
    st->syscall = "epoll_ctl";
  }
  ev.data.ptr = &stop_tag;
  if (ret == 0 && epoll_ctl(s.ep, EPOLL_CTL_ADD, cfg->stop_fd, &ev) < 0) {
    ret = -errno;
    st->syscall = "epoll_ctl";
  }
  struct epoll_event events[MAX_EVENTS];
  bool stopping = false;
  s.now = echo_now_ns();
  if (cfg->idle_timeout_ns) s.next_tick = s.now + echo_idle_tick_ns(cfg->idle_timeout_ns);
  while (ret == 0 && !stopping) {
    int n = epoll_wait(s.ep, events, MAX_EVENTS, wait_ms(&s));
    s.now = echo_now_ns();
    if (n < 0) {
      if (errno == EINTR) continue;
      ret = -errno;
      st->syscall = "epoll_wait";
      break;
    }
    for (int i = 0; i < n; i++) {
      void *p = events[i].data.ptr;
      if (p == &stop_tag) stopping = true;
      else if (p == &listen_tag) on_listen(&s);
    }
    /* Connections after the listener, in a second pass: a connection closed above cannot
     * be in this batch (close_conn runs only from here). */
    for (int i = 0; i < n && !stopping; i++) {
      void *p = events[i].data.ptr;
      if (p != &stop_tag && p != &listen_tag) on_conn(&s, p, events[i].events);
    }
    if (!stopping) on_timers(&s);
  }
  while (s.conns) close_conn(&s, s.conns);
  close(s.ep);
  return ret;
}
