/* accelhost's XRT native API: xrt::queue (C++ only), an in-order queue of tasks that a
 * thread of the queue's own runs one after another, apart from the thread that enqueues them.
 *
 *   xrt::queue q;                                   starts the queue's thread
 *   auto done = q.enqueue([&] { bo.sync(...); });   a std::shared_future of the task's result
 *   other.enqueue(done);                            other's later tasks wait for this one
 *   done.wait();                                    the task has run
 *
 * enqueue(callable) returns at once; the callable (no arguments; it may be move-only or
 * mutable) runs after every task enqueued before it, and its result, or the exception it
 * threw, is in the returned future (get() gives or rethrows it). enqueue(future) and
 * enqueue(event) enqueue a wait for another queue's task. xrt::queue::event holds a future
 * of any result type, so futures of different tasks fit in one container.
 *
 * Copies of a queue share it. When the last copy goes, the queue's thread runs what is
 * still enqueued and the destructor joins it; when that last copy is dropped by one of the
 * queue's own tasks, the thread finishes the rest on its own instead.
 *
 * XRT builds the queue into libxrt_coreutil; here it is all in this header, over the
 * standard library's threads (build with -pthread where the C library needs it). */
#ifndef ACCELHOST_XRT_QUEUE_H
#define ACCELHOST_XRT_QUEUE_H

#ifndef __cplusplus
#error "xrt::queue is C++ only: XRT has no C API for it"
#endif

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

namespace xrt {

class queue_impl;

class queue {
  friend class queue_impl;

  /* One enqueued callable, its result going to a future: a packaged_task of any result. */
  class task {
    struct base {
      virtual ~base() = default;
      virtual void execute() = 0;
    };
    template <typename Result>
    struct holder final : base {
      std::packaged_task<Result()> m_work;
      explicit holder(std::packaged_task<Result()>&& work) : m_work(std::move(work)) {}
      /* The callable's exception goes to the future, never out of here. */
      void execute() override { m_work(); }
    };
    std::unique_ptr<base> m_content;

   public:
    task() = default;
    template <typename Result>
    explicit task(std::packaged_task<Result()>&& work) : m_content(new holder<Result>(std::move(work))) {}
    explicit operator bool() const { return m_content != nullptr; }
    void execute() { m_content->execute(); }
  };

 public:
  /* A future of an enqueued task, whatever its result type; an empty event is complete. */
  class event {
    struct base {
      virtual ~base() = default;
      virtual void wait() const = 0;
    };
    template <typename Value>
    struct holder final : base {
      std::shared_future<Value> m_future;
      explicit holder(std::shared_future<Value> future) : m_future(std::move(future)) {}
      void wait() const override { m_future.wait(); }
    };
    std::shared_ptr<const base> m_content;

   public:
    event() = default;
    event(const event&) = default;
    event(event&&) = default;
    event& operator=(const event&) = default;
    event& operator=(event&&) = default;
    template <typename Value>
    event(std::shared_future<Value> future)
        : m_content(future.valid() ? std::make_shared<const holder<Value>>(std::move(future)) : nullptr) {}

    /* Whether it holds a future. */
    operator bool() const { return m_content != nullptr; }
    /* Blocks until the task has run. */
    void wait() const {
      if (m_content) m_content->wait();
    }
  };

 private:
  template <typename T>
  struct is_shared_future : std::false_type {};
  template <typename T>
  struct is_shared_future<std::shared_future<T>> : std::true_type {};
  /* Callables only: events and futures have their own overloads. */
  template <typename Callable>
  using if_callable = typename std::enable_if<
      !std::is_same<typename std::decay<Callable>::type, event>::value &&
      !is_shared_future<typename std::decay<Callable>::type>::value>::type;

  std::shared_ptr<queue_impl> m_impl;

  inline void add_task(task&& work);

 public:
  /* A queue and its thread. */
  inline queue();

  /* Runs `callable` once the tasks enqueued before it have run; its result in the future. */
  template <typename Callable, typename = if_callable<Callable>>
  auto enqueue(Callable&& callable)
      -> std::shared_future<decltype(std::declval<typename std::decay<Callable>::type&>()())> {
    using result = decltype(std::declval<typename std::decay<Callable>::type&>()());
    std::packaged_task<result()> work(std::forward<Callable>(callable));
    std::shared_future<result> future = work.get_future().share();
    add_task(task(std::move(work)));
    return future;
  }

  /* Later tasks of this queue wait until `future` (of a task of any queue) is ready. */
  template <typename Value>
  std::shared_future<void> enqueue(std::shared_future<Value> future) {
    return enqueue(event(std::move(future)));
  }

  /* Later tasks of this queue wait until `ev`'s task has run. */
  std::shared_future<void> enqueue(event ev) {
    return enqueue([ev] { ev.wait(); });
  }

  queue_impl* get_impl() const { return m_impl.get(); }
};

/* The queue's thread and what waits for it. The state is shared with the thread, which
 * keeps it when the last queue goes from one of the queue's own tasks. */
class queue_impl {
  struct state {
    std::mutex mutex;
    std::condition_variable work;
    std::deque<queue::task> tasks;
    bool stop = false;
  };

  /* Runs tasks in order until stopped and none is left. */
  static void run(const std::shared_ptr<state>& shared) {
    std::unique_lock<std::mutex> lock(shared->mutex);
    for (;;) {
      shared->work.wait(lock, [&] { return shared->stop || !shared->tasks.empty(); });
      if (shared->tasks.empty()) return;
      {
        queue::task next = std::move(shared->tasks.front());
        shared->tasks.pop_front();
        lock.unlock();
        next.execute();
        /* `next` goes here, unlocked: it may hold the last copy of the queue. */
      }
      lock.lock();
    }
  }

  std::shared_ptr<state> m_state;
  std::thread m_worker;

 public:
  queue_impl() : m_state(std::make_shared<state>()) {
    std::shared_ptr<state> shared = m_state;
    m_worker = std::thread([shared] { run(shared); });
  }
  queue_impl(const queue_impl&) = delete;
  queue_impl& operator=(const queue_impl&) = delete;

  /* Lets the thread run what is enqueued, then joins it. */
  ~queue_impl() {
    {
      std::lock_guard<std::mutex> lock(m_state->mutex);
      m_state->stop = true;
    }
    m_state->work.notify_one();
    if (m_worker.get_id() == std::this_thread::get_id())
      m_worker.detach();
    else
      m_worker.join();
  }

  void enqueue(queue::task&& work) {
    {
      std::lock_guard<std::mutex> lock(m_state->mutex);
      m_state->tasks.push_back(std::move(work));
    }
    m_state->work.notify_one();
  }
};

inline queue::queue() : m_impl(std::make_shared<queue_impl>()) {}

inline void queue::add_task(task&& work) { m_impl->enqueue(std::move(work)); }

}  // namespace xrt

#endif
