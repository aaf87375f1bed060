/* The stream core's send side (stream.h: the send policy). */
#include <errno.h>
#include <sys/socket.h>

#include "stream/stream.h"

static void send_next(struct stream *s);

/* The send side stops on err: the queue goes, at once unless a send reads its front (then at
 * that send's CQE). */
static void fail(struct stream *s, int err) {
  if (!s->send_error) s->send_error = err;
  s->sends_stopped = true;
  if (!s->send_busy) byte_queue_free(&s->queue);
}

static void start(struct stream *s, int bid, uint32_t len) {
  s->send_busy = true;
  s->send_bid = bid;
  s->send_len = len;
  s->pool->ops->send(s);
}

/* The queue's front goes out, if nothing is in flight. */
static void send_next(struct stream *s) {
  uint32_t len;
  if (s->send_busy || s->sends_stopped || !byte_queue_front(&s->queue, &len)) return;
  start(s, -1, len);
}

int stream_send_buffer(struct stream *s, unsigned id, uint32_t len) {
  if (s->sends_stopped) {
    stream_pool_return(s->pool, id);
    return 0;
  }
  if (!s->send_busy && s->queue.bytes == 0) {
    start(s, (int)id, len);
  } else {
    int err = byte_queue_append(&s->queue, stream_pool_addr(s->pool, id), len, NULL);
    stream_pool_return(s->pool, id);
    if (err) {
      fail(s, err);
      return err;
    }
    s->pool->copied++;
  }
  stream_queued_changed(s);
  return 0;
}

int stream_send_bytes(struct stream *s, const void *data, uint32_t len, byte_queue_copy_fn copy) {
  if (s->sends_stopped) return 0;
  if (!s->send_busy && s->queue.bytes == 0 && len > 0 && s->pool->ops->try_send) {
    /* An error (a reset, a view that faults) is left to the queued send and the copy, which
     * report it as they would have. */
    long took = s->pool->ops->try_send(s, data, len);
    if (took >= (long)len) return 0;
    if (took > 0) {
      data = (const unsigned char *)data + took;
      len -= (uint32_t)took;
    }
  }
  int err = byte_queue_append(&s->queue, data, len, copy);
  if (err == -ENOMEM) fail(s, err);
  if (err) return err;
  send_next(s);
  stream_queued_changed(s);
  return 0;
}

void stream_prep_send(struct io_uring_sqe *sqe, const struct stream *s, int fd) {
  uint32_t len;
  if (s->send_bid >= 0) {
    io_uring_prep_send(sqe, fd, stream_pool_addr(s->pool, (unsigned)s->send_bid), s->send_len,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
  } else {
    /* The front as it was when the send was started: bytes appended since wait their turn. */
    io_uring_prep_send(sqe, fd, byte_queue_front(&s->queue, &len), s->send_len, MSG_NOSIGNAL);
  }
}

enum stream_send_end stream_send_done(struct stream *s, int res) {
  uint32_t sent = res > 0 ? (uint32_t)res : 0;
  bool dontwait = s->send_bid >= 0;
  s->send_busy = false;
  if (res < 0 && !(res == -EAGAIN && dontwait)) fail(s, res);
  else if (res == 0 && s->send_len > 0 && !dontwait) fail(s, -EPIPE);
  if (dontwait) {
    unsigned bid = (unsigned)s->send_bid;
    s->send_bid = -1;
    /* The socket took only part: the rest goes in front of what was given meanwhile. */
    if (sent < s->send_len) {
      if (s->sends_stopped) {
        if (!s->send_error) s->send_error = s->stop_error;
      } else if (byte_queue_prepend(&s->queue, stream_pool_addr(s->pool, bid) + sent, s->send_len - sent) < 0) {
        fail(s, -ENOMEM);
      } else {
        s->pool->copied++;
      }
    }
    stream_pool_return(s->pool, bid);
  } else if (s->queue.head) {
    byte_queue_consume(&s->queue, sent);
  }
  if (s->sends_stopped && s->queue.bytes) {
    if (!s->send_error) s->send_error = s->stop_error;
    byte_queue_free(&s->queue);
  }
  send_next(s);
  stream_queued_changed(s);
  if (s->send_error && !s->failure_told && !s->send_busy) {
    s->failure_told = true;
    return STREAM_SEND_FAILED;
  }
  return STREAM_SEND_GOES_ON;
}

void stream_send_stop(struct stream *s, int err) {
  if (s->sends_stopped) return;
  s->stop_error = err;
  if (s->queue.bytes && !s->send_busy) fail(s, err); /* with a send in flight: at its CQE */
  s->sends_stopped = true;
}

void stream_free(struct stream *s) { byte_queue_free(&s->queue); }
