//! Accepting connections when the process runs out of what a connection needs. An `accept`
//! that fails for want of a descriptor (or of kernel memory) leaves the connection waiting in
//! the listen queue, so the listener is ready again at once: a server that just retries spins
//! a core until a descriptor comes free. [`Backoff`] waits instead, a little longer each time
//! (5 ms doubling to 1 s), and says so once per run of failures.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio_stream::Stream;

/// The first wait after an accept failed for want of resources.
const FIRST_WAIT: Duration = Duration::from_millis(5);
/// The longest wait between two tries.
const LONGEST_WAIT: Duration = Duration::from_secs(1);

/// Does `err` say the process or system is out of what a new connection needs (descriptors,
/// buffers, memory), as opposed to one connection having gone wrong?
fn out_of_resources(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// A stream of accepted connections that backs off while accepting fails for want of
/// resources; other errors pass through (the gRPC server skips them).
pub struct Backoff<S> {
    inner: S,
    /// What the listener is, for the log.
    name: &'static str,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    next_wait: Duration,
}

impl<S> Backoff<S> {
    /// `inner`'s connections, with backoff; `name` says which listener in the log.
    pub fn new(inner: S, name: &'static str) -> Self {
        Backoff {
            inner,
            name,
            wait: None,
            next_wait: FIRST_WAIT,
        }
    }
}

impl<S, T> Stream for Backoff<S>
where
    S: Stream<Item = io::Result<T>> + Unpin,
{
    type Item = io::Result<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(wait) = self.wait.as_mut() {
                ready!(wait.as_mut().poll(cx));
                self.wait = None;
            }
            match ready!(Pin::new(&mut self.inner).poll_next(cx)) {
                Some(Err(err)) if out_of_resources(&err) => {
                    let wait = self.next_wait;
                    if wait == FIRST_WAIT {
                        tracing::error!(
                            listener = self.name,
                            error = %err,
                            "cannot accept connections: out of descriptors or memory; \
                             retrying with backoff up to 1 s (raise LimitNOFILE, or lower \
                             the connection limits)"
                        );
                    }
                    self.next_wait = (wait * 2).min(LONGEST_WAIT);
                    self.wait = Some(Box::pin(tokio::time::sleep(wait)));
                }
                Some(Ok(connection)) => {
                    if self.next_wait != FIRST_WAIT {
                        tracing::info!(listener = self.name, "accepting connections again");
                        self.next_wait = FIRST_WAIT;
                    }
                    return Poll::Ready(Some(Ok(connection)));
                }
                other => return Poll::Ready(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_stream::StreamExt;

    #[tokio::test(start_paused = true)]
    async fn failures_for_want_of_descriptors_wait_longer_each_time_and_others_pass() {
        let emfile = || Err(io::Error::from_raw_os_error(libc::EMFILE));
        let items: Vec<io::Result<u32>> = vec![
            emfile(),
            emfile(),
            emfile(),
            Ok(1),
            Err(io::Error::from_raw_os_error(libc::ECONNABORTED)),
            emfile(),
            Ok(2),
        ];
        let mut stream = Backoff::new(tokio_stream::iter(items), "test");
        let start = tokio::time::Instant::now();
        assert_eq!(stream.next().await.unwrap().unwrap(), 1);
        assert_eq!(start.elapsed(), Duration::from_millis(5 + 10 + 20));
        let aborted = stream.next().await.unwrap().unwrap_err();
        assert_eq!(aborted.raw_os_error(), Some(libc::ECONNABORTED));
        let start = tokio::time::Instant::now();
        assert_eq!(stream.next().await.unwrap().unwrap(), 2);
        assert_eq!(
            start.elapsed(),
            FIRST_WAIT,
            "a connection accepted resets the wait"
        );
        assert!(stream.next().await.is_none());
    }
}
