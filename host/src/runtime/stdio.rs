//! A plugin's stdout and stderr: complete lines go to `tracing` (within the log budget) and the
//! last few KiB are kept, so that a fault report can show what the plugin printed (a Rust
//! plugin's panic message, for one).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::devices::lock;
use crate::state::LogBudget;
use crate::text::inert;

/// Bytes of output kept for fault reports.
const TAIL: usize = 2048;
/// Longest line forwarded to `tracing`; longer lines are forwarded in pieces.
const MAX_LINE: usize = 4096;
/// What `check-write` grants per write.
const WRITE_PERMIT: usize = 64 * 1024;

/// One output stream of one plugin instance.
#[derive(Clone)]
pub struct OutputCapture {
    plugin: Arc<str>,
    stream: &'static str,
    budget: LogBudget,
    inner: Arc<Mutex<Captured>>,
}

#[derive(Default)]
struct Captured {
    tail: VecDeque<u8>,
    line: Vec<u8>,
}

impl OutputCapture {
    /// The `stream` of `plugin`, forwarded to `tracing` within `budget`.
    pub fn new(plugin: &str, stream: &'static str, budget: LogBudget) -> Self {
        OutputCapture {
            plugin: plugin.into(),
            stream,
            budget,
            inner: Arc::default(),
        }
    }

    fn push(&self, bytes: &[u8]) {
        let mut captured = lock(&self.inner);
        let skip = bytes.len().saturating_sub(TAIL);
        captured.tail.extend(&bytes[skip..]);
        let excess = captured.tail.len().saturating_sub(TAIL);
        captured.tail.drain(..excess);
        for &byte in bytes {
            if byte == b'\n' || captured.line.len() >= MAX_LINE {
                let line = std::mem::take(&mut captured.line);
                if self.budget.charge(line.len()).0 {
                    tracing::info!(
                        target: "accelhost::plugin",
                        plugin = &*self.plugin,
                        stream = self.stream,
                        "{}",
                        inert(String::from_utf8_lossy(&line).trim_end())
                    );
                }
                if byte == b'\n' {
                    continue;
                }
            }
            captured.line.push(byte);
        }
    }

    /// The last bytes written, as text.
    pub fn tail(&self) -> String {
        let captured = lock(&self.inner);
        let bytes: Vec<u8> = captured.tail.iter().copied().collect();
        String::from_utf8_lossy(&bytes).trim().to_string()
    }
}

impl IsTerminal for OutputCapture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for OutputCapture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for OutputCapture {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for OutputCapture {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for OutputCapture {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_tail() {
        let out = OutputCapture::new("p", "stderr", LogBudget::new(1 << 20));
        out.push(b"first line\n");
        out.push(&vec![b'x'; 3000]);
        out.push(b"\npanicked at src/lib.rs:1:1:\nboom\n");
        let tail = out.tail();
        assert!(tail.len() <= TAIL);
        assert!(
            tail.ends_with("panicked at src/lib.rs:1:1:\nboom"),
            "{tail}"
        );
        assert!(!tail.contains("first line"));
    }
}
