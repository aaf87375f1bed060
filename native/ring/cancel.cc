#include "cancel.h"

#include <errno.h>

#include <algorithm>


namespace iolab {

// user_data of the cancels' own CQEs (never an Op's address).
static char cancel_any_tag;
static char cancel_one_tag;

void RingCancel::Track(Op* op) {
  op->prev = nullptr;
  op->next = in_kernel_;
  if (in_kernel_ != nullptr) in_kernel_->prev = op;
  in_kernel_ = op;
  op->in_kernel = true;
  op->cancel_sent = false;
}

void RingCancel::Untrack(Op* op) {
  if (!op->in_kernel) return;
  if (op->prev != nullptr) op->prev->next = op->next;
  else in_kernel_ = op->next;
  if (op->next != nullptr) op->next->prev = op->prev;
  op->prev = op->next = nullptr;
  op->in_kernel = false;
}

void RingCancel::Submit() {
  int ret = io_uring_submit(ring_);
  stats_->submit_calls++;
  if (ret > 0) {
    stats_->sqes_submitted += ret;
    *unsubmitted_ -= std::min<unsigned>(*unsubmitted_, unsigned(ret));
  }
}

// A free SQE; when the SQ is full, what is queued goes to the kernel first to make room.
struct io_uring_sqe* RingCancel::FreeSqe() {
  struct io_uring_sqe* sqe = io_uring_get_sqe(ring_);
  if (sqe != nullptr) return sqe;
  Submit();
  if (sqpoll_) io_uring_sqring_wait(ring_);  // the SQ thread takes the SQEs in its own time
  return io_uring_get_sqe(ring_);
}

void RingCancel::CancelAll() {
  for (Op* op = in_kernel_; op != nullptr; op = op->next) op->cancel_sent = false;
  if (any_refused_) {
    each_due_ = true;
  } else {
    any_due_ = true;
  }
  Resume();
}

void RingCancel::Resume() {
  if (any_due_) {
    struct io_uring_sqe* sqe = FreeSqe();
    if (sqe == nullptr) return;  // still due
    io_uring_prep_cancel64(sqe, 0, int(any_flags_));
    io_uring_sqe_set_data(sqe, &cancel_any_tag);
    (*unsubmitted_)++;
    any_due_ = false;
  }
  if (each_due_) CancelEach();
  if (wanted_due_) {
    wanted_due_ = false;
    for (Op* op = in_kernel_; op != nullptr; op = op->next) {
      if (!op->cancel_wanted || op->cancel_sent) continue;
      if (!CancelOne(op)) {
        wanted_due_ = true;
        break;
      }
    }
  }
  if (*unsubmitted_ > 0) Submit();
}

// One ASYNC_CANCEL by op's user_data; false when no SQE is free.
bool RingCancel::CancelOne(Op* op) {
  struct io_uring_sqe* sqe = FreeSqe();
  if (sqe == nullptr) return false;
  io_uring_prep_cancel64(sqe, reinterpret_cast<uintptr_t>(op), 0);
  io_uring_sqe_set_data(sqe, &cancel_one_tag);
  (*unsubmitted_)++;
  op->cancel_sent = true;
  op->cancel_wanted = false;
  return true;
}

void RingCancel::CancelEach() {
  for (Op* op = in_kernel_; op != nullptr; op = op->next) {
    if (op->cancel_sent) continue;
    if (!CancelOne(op)) return;  // still due: Resume() goes on from here
    stats_->cancel_ops++;
  }
  each_due_ = false;
}

void RingCancel::CancelTicket(uint64_t ticket) {
  for (Op* op = in_kernel_; op != nullptr; op = op->next) {
    if (op->ticket != ticket || op->cancel_sent) continue;
    if (!CancelOne(op)) {
      op->cancel_wanted = true;
      wanted_due_ = true;
    }
  }
}

bool RingCancel::OnCqe(void* data, int res) {
  if (data == nullptr) return true;  // no op of ours
  if (data == &cancel_any_tag) {
    if (res == -EINVAL && !any_refused_) {
      // This kernel has no IORING_ASYNC_CANCEL_ANY: from now on, one cancel per op.
      any_refused_ = true;
      each_due_ = true;
    }
    return true;
  }
  return data == &cancel_one_tag;  // ENOENT (done already) or EALREADY (running) alike
}

}  // namespace iolab
