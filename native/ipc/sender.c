/* The sending process's loop for one cell, and the memcpy cell it is compared with. The
 * sender owns the clock: throughput runs from the receiver's READY to its REPORT (so every
 * message counted has arrived and been checked); pingpong times each round trip, without the
 * sender's own check of the reply (timed apart, check_ns). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "message.h"
#include "transport.h"

#define REPORT_TIMEOUT_MS 10000

static int stopped(const int *stop) { return __atomic_load_n(stop, __ATOMIC_RELAXED) != 0; }

/* Small messages read the clock every 64 messages, so that the clock is not what is measured. */
static uint64_t clock_mask(uint64_t bytes) { return bytes < 4096 ? 63 : 0; }

/* Waits for the receiver's READY or REPORT (a failed receiver sends REPORT at once, without
 * waiting for END). Gives up after REPORT_TIMEOUT_MS, or when told to stop. */
static int await_wire(int control, uint32_t kind, struct ipc_wire *w, const int *stop, struct ipc_error *e) {
  struct pollfd pfd = {control, POLLIN, 0};
  for (int waited = 0; waited < REPORT_TIMEOUT_MS;) {
    if (stop != NULL && stopped(stop)) return ipc_fail(e, IPC_STOPPED, "stopped");
    int n = poll(&pfd, 1, 50);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ipc_fail_errnum(e, errno, "poll");
    if (n == 0) {
      waited += 50;
      continue;
    }
    int rc = ipc_wire_recv(control, w, NULL, 0, NULL, e);
    if (rc < 0) return -1;
    if (rc == 0) return ipc_fail(e, IPC_PEER_GONE, "the receiving process ended during the run");
    if (w->kind == kind || w->kind == IPC_WIRE_REPORT) return 0;
  }
  return ipc_fail(e, IPC_PROTOCOL, "the receiving process did not answer within %d s", REPORT_TIMEOUT_MS / 1000);
}

/* The receiver's account of a cell that went wrong explains the sender's error (a receiver
 * that found wrong bytes closes its end, so the sender sees EPIPE): it wins. */
static void take_receiver_error(const struct ipc_wire *w, struct ipc_error *e) {
  if (w->error_kind == IPC_OK) return;
  if (e->kind != IPC_OK && e->kind != IPC_PEER_GONE && e->kind != IPC_ERRNO) return;
  memset(e, 0, sizeof *e);
  ipc_wire_get_error(w, e);
}

static int run_messages(struct ipc_side *s, const struct ipc_cell *cell, void *common, struct ipc_result *r,
                        uint64_t start, uint64_t *sent) {
  const struct ipc_transport *t = s->t;
  uint64_t mask = clock_mask(cell->message_bytes), seq = 0;
  long check_pause = ipc_test_pause_ms("IOLAB_IPC_SENDER_CHECK_PAUSE");
  int rc = 0;
  for (;; seq++) {
    if ((seq & mask) == 0) {
      if (stopped(s->stop)) {
        rc = ipc_fail(s->error, IPC_STOPPED, "stopped");
        break;
      }
      if (seq >= cell->min_messages && ipc_now_ns() - start >= cell->duration_ns) break;
    }
    unsigned char *b = t->build_buffer ? t->build_buffer(s, seq) : common;
    int spoil = (int64_t)seq == cell->fault_message;
    ipc_stamp(b, s->bytes, spoil && cell->fault_stale && seq > 0 ? seq - 1 : seq);
    if (spoil && !cell->fault_stale) b[ipc_fault_offset(s->bytes, seq)] ^= 0x5a;
    uint64_t t0 = cell->mode == IPC_PINGPONG ? ipc_now_ns() : 0;
    if (t->put(s, b) != 0) {
      rc = -1;
      break;
    }
    if (cell->mode == IPC_PINGPONG) {
      const void *reply;
      int got = t->get(s, &reply);
      if (got == 0) rc = ipc_fail(s->error, IPC_PEER_GONE, "the receiving process ended during the run");
      if (got <= 0) {
        rc = -1;
        break;
      }
      /* the round trip is the transport's: the check of the reply (a full compare under
       * --check full) is timed apart, the release (freeing the slot, unmapping) counts */
      uint64_t arrived = ipc_now_ns();
      ipc_sleep_ms(check_pause);
      if (ipc_check(reply, s->bytes, seq, cell->check_full, t->name, s->error) != 0) {
        rc = -1;
        break;
      }
      uint64_t checked = ipc_now_ns();
      r->check_ns += checked - arrived;
      if (t->release(s) != 0) {
        rc = -1;
        break;
      }
      if (r->round_trips != NULL) hist_add(r->round_trips, (arrived - t0) + (ipc_now_ns() - checked));
    }
  }
  *sent = seq;
  return rc;
}

int ipc_send_cell(int control, const struct ipc_cell *cell, struct ipc_result *r, const int *stop) {
  memset(&r->error, 0, sizeof r->error);
  r->messages = r->elapsed_ns = r->check_ns = 0;
  struct ipc_error *e = &r->error;
  const struct ipc_transport *t = ipc_transport_at(cell->transport);
  if (t == NULL || cell->message_bytes < IPC_MIN_MESSAGE) return ipc_fail(e, IPC_PROTOCOL, "bad cell");
  struct ipc_side s = {.t = t, .sender = 1, .mode = cell->mode, .bytes = (size_t)cell->message_bytes,
                       .control_fd = control, .stop = stop, .error = e};
  for (int i = 0; i < IPC_MAX_FDS; i++) s.fds[i] = -1;

  void *common = NULL;
  if (t->build_buffer == NULL) {
    common = ipc_buffer(e, s.bytes);
    if (common == NULL) return -1;
    ipc_pattern_fill(common, s.bytes);
  }
  int peer[IPC_MAX_FDS], npeer = 0, rc = -1;
  struct ipc_wire w;
  if (t->create(&s, peer, &npeer) != 0) {
    for (int i = 0; i < npeer; i++) close(peer[i]);
    goto out;
  }
  memset(&w, 0, sizeof w);
  w.transport = cell->transport;
  w.mode = (uint32_t)cell->mode;
  w.message_bytes = cell->message_bytes;
  w.check_full = cell->check_full;
  rc = ipc_wire_send(control, IPC_WIRE_CELL, &w, peer, npeer, e);
  for (int i = 0; i < npeer; i++) close(peer[i]);
  if (rc != 0) goto out;
  rc = -1;
  if (await_wire(control, IPC_WIRE_READY, &w, stop, e) != 0) goto out;
  if (w.error_kind != IPC_OK) {
    ipc_wire_get_error(&w, e);
    goto out;
  }

  uint64_t start = ipc_now_ns(), sent = 0;
  int run = run_messages(&s, cell, common, r, start, &sent);
  uint64_t loop_end = ipc_now_ns();
  /* After a failed run, later errors must not hide its cause: they go to scratch. */
  struct ipc_error scratch = {0}, *after = run == 0 ? e : &scratch;
  if (e->kind != IPC_PEER_GONE) {
    /* end the run in-band and on the control socket, so the receiver reports (and, after an
     * error here, is ready for the next cell) */
    s.error = after;
    int finished = t->finish(&s);
    s.error = e;
    memset(&w, 0, sizeof w);
    w.messages = sent;
    if ((finished != 0 || ipc_wire_send(control, IPC_WIRE_END, &w, NULL, 0, after) != 0) && run == 0) goto out;
  }
  if (await_wire(control, IPC_WIRE_REPORT, &w, NULL, after) == 0) take_receiver_error(&w, e);
  else if (run == 0) goto out;
  if (e->kind != IPC_OK) goto out;
  /* pingpong: the round trips' time, so round trips/s leave out the sender's checks too */
  r->elapsed_ns = (cell->mode == IPC_PINGPONG ? loop_end - r->check_ns : ipc_now_ns()) - start;
  if (cell->mode == IPC_THROUGHPUT && w.messages != sent) {
    ipc_fail(e, IPC_CHECK, "%s delivered %llu of %llu messages", t->name, (unsigned long long)w.messages,
             (unsigned long long)sent);
    goto out;
  }
  r->messages = sent;
  rc = 0;
out:
  t->destroy(&s);
  ipc_buffer_free(common, s.bytes);
  return rc;
}

int ipc_memcpy_cell(const struct ipc_cell *cell, struct ipc_result *r, const int *stop) {
  memset(&r->error, 0, sizeof r->error);
  size_t len = (size_t)cell->message_bytes;
  unsigned char *src = ipc_buffer(&r->error, len), *dst = src ? ipc_buffer(&r->error, len) : NULL;
  if (dst == NULL) {
    ipc_buffer_free(src, len);
    return -1;
  }
  ipc_pattern_fill(src, len);
  uint64_t mask = clock_mask(len), n = 0, start = ipc_now_ns(), now = start;
  int rc = 0;
  for (;;) {
    memcpy(dst, src, len);
    __asm__ __volatile__("" ::: "memory"); /* the copy's result counts as used */
    n++;
    if ((n & mask) == 0) {
      now = ipc_now_ns();
      if (n >= cell->min_messages && now - start >= cell->duration_ns) break;
      if (stopped(stop)) {
        rc = ipc_fail(&r->error, IPC_STOPPED, "stopped");
        break;
      }
    }
  }
  r->messages = n;
  r->elapsed_ns = now - start;
  ipc_buffer_free(src, len);
  ipc_buffer_free(dst, len);
  return rc;
}
