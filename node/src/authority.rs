//! Lets gRPC clients that dial `unix:PATH` reach the node. grpcio (the gRPC C core) and gRPC
//! C++ send the socket's path, such as `/run/accelhost/node.sock`, as the HTTP/2 `:authority`;
//! h2 parses `:authority` as a URI authority, finds none, and resets the stream
//! (PROTOCOL_ERROR, which the client reports as `INTERNAL ... RST_STREAM error code 1`). h2
//! has no option to accept it, so [`AuthorityFix`] sits between a Unix socket's accepted
//! stream and hyper and replaces such an `:authority` with `localhost` on its way in.
//!
//! It parses what the client sends: the connection preface, then frames. Every frame but
//! HEADERS and CONTINUATION goes through as read, into the caller's buffer. A header block
//! (HEADERS, then CONTINUATION until END_HEADERS) is HPACK-decoded with the client's dynamic
//! table, its `:authority` fixed if h2 would refuse it, and the whole header list encoded
//! again with an encoder of ours: from then on the server's HPACK decoder mirrors our
//! encoder's table, not the client's, so every block is encoded again, not just rewritten
//! ones. A field the client kept out of its table (without indexing, or never indexed: a
//! sensitive value) stays out of ours, as the same kind of literal. The block goes on as
//! HEADERS (END_STREAM and priority kept, padding dropped) and CONTINUATION frames of at most
//! 16 KiB, the frame size every HTTP/2 server takes.
//!
//! HPACK is loona-hpack's (h2 keeps its own codec private), but for the Huffman code: loona
//! builds its Huffman tables anew for every string, some 25 µs each, so the block's
//! Huffman-coded strings are decoded here first, with tables made once. A header block then
//! costs about a microsecond (a gRPC call's, mostly references to the table); DATA frames are
//! read straight into the server's buffer and only looked at.
//!
//! Our encoder's table holds 4096 bytes, the size the server's decoder starts with: the node
//! advertises no other SETTINGS_HEADER_TABLE_SIZE (a server that did would have to shrink
//! this one to match). A client may grow its table to that same default, and no further.
//!
//! A header block is held whole before it goes on: one past [`MAX_HEADER_BLOCK`] (of frame
//! payload, or of decoded header list) ends the connection with an error, so a flood of
//! CONTINUATION frames or a block of references to one large entry cannot grow the memory
//! held. HTTP/2's 24-bit frame length bounds every other frame at 16 MiB, and those are never
//! held. Malformed input (HPACK that does not decode, a CONTINUATION out of place, padding
//! longer than its frame) ends the connection with an error too, as h2 would end it.
//!
//! Only Unix sockets need it: over TCP the client names the host it dialed.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use loona_hpack::{Decoder, Encoder};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::codegen::http::uri::Authority;
use tonic::transport::server::Connected;

/// The most a header block may hold, as frame payload or as decoded header list (names and
/// values, and 32 bytes for each field, the way SETTINGS_MAX_HEADER_LIST_SIZE counts); past
/// it the connection ends.
pub const MAX_HEADER_BLOCK: usize = 256 * 1024;

/// What replaces an `:authority` that is no URI authority: where a Unix socket's server is.
pub const REPLACEMENT: &str = "localhost";

/// The client's connection preface.
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// A frame header: length (24 bits), type, flags, stream id (31 bits).
const HEAD_LEN: usize = 9;
const TYPE_HEADERS: u8 = 0x1;
const TYPE_CONTINUATION: u8 = 0x9;
const FLAG_END_STREAM: u8 = 0x1;
const FLAG_END_HEADERS: u8 = 0x4;
const FLAG_PADDED: u8 = 0x8;
const FLAG_PRIORITY: u8 = 0x20;
/// A HEADERS frame's priority fields: exclusive bit and stream dependency, weight.
const PRIORITY_LEN: usize = 5;
/// SETTINGS_MAX_FRAME_SIZE's default, which every server takes: our frames' largest payload.
const MAX_FRAME: usize = 16_384;
/// SETTINGS_HEADER_TABLE_SIZE's default: our encoder's table, and the most a client may ask
/// its own (our decoder's) to hold.
const TABLE_SIZE: usize = 4096;
/// A buffer that one large header block grew past this is given back once the block is on.
const KEEP_CAPACITY: usize = 64 * 1024;

/// A Unix-socket connection whose client's `:authority`, when it is no URI authority (a
/// gRPC client dialing `unix:PATH` sends the path), reaches the server as `localhost`.
///
/// What the server writes goes through untouched; what the client sends is parsed as
/// HTTP/2 (see the [module](self)). A connection that does not start with the HTTP/2 preface
/// is passed through as it is.
pub struct AuthorityFix<IO> {
    io: IO,
    scan: Scanner,
    /// Frames ready for the caller (a header block encoded again, or a frame header held
    /// back while its frame's type was unknown), ahead of anything else.
    out: Vec<u8>,
    out_at: usize,
    /// Bytes read from `io` but not yet scanned: what followed a header block in the read
    /// that brought it, which waits for the block to go on first.
    pending: Vec<u8>,
    pending_at: usize,
    /// `io` said end of file.
    eof: bool,
    /// Why the connection was ended, said again to every later read.
    failed: Option<String>,
}

impl<IO> AuthorityFix<IO> {
    /// Wraps `io`, a connection accepted on a Unix socket, before it is given to the server.
    pub fn new(io: IO) -> Self {
        AuthorityFix {
            io,
            scan: Scanner::new(),
            out: Vec::new(),
            out_at: 0,
            pending: Vec::new(),
            pending_at: 0,
            eof: false,
            failed: None,
        }
    }

    /// The connection it wraps.
    pub fn get_ref(&self) -> &IO {
        &self.io
    }
}

impl<IO: Connected> Connected for AuthorityFix<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

/// The error that ends a connection whose client sent what cannot be passed on.
fn malformed(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("HTTP/2 from the client: {why}"),
    )
}

impl<IO: AsyncRead + Unpin> AsyncRead for AuthorityFix<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(why) = &this.failed {
            return Poll::Ready(Err(malformed(why)));
        }
        let filled = buf.filled().len();
        loop {
            // A header block encoded again goes first.
            if this.out_at < this.out.len() {
                let n = buf.remaining().min(this.out.len() - this.out_at);
                buf.put_slice(&this.out[this.out_at..this.out_at + n]);
                this.out_at += n;
                if this.out_at < this.out.len() {
                    return Poll::Ready(Ok(()));
                }
                clear(&mut this.out);
                this.out_at = 0;
            }
            if buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            // Then what followed it in the read that brought it, scanned where it is: what
            // goes through is copied out, no more than fits.
            if this.pending_at < this.pending.len() {
                let end =
                    this.pending_at + buf.remaining().min(this.pending.len() - this.pending_at);
                let chunk = &mut this.pending[this.pending_at..end];
                let (kept, scanned) = match this.scan.scan(chunk, &mut this.out) {
                    Ok(done) => done,
                    Err(why) => return Poll::Ready(Err(this.fail(why))),
                };
                buf.put_slice(&chunk[..kept]);
                this.pending_at += scanned;
                if this.pending_at == this.pending.len() {
                    clear(&mut this.pending);
                    this.pending_at = 0;
                }
                continue;
            }
            // Then the connection, read straight into the caller's buffer and scanned there;
            // but only while there is nothing to hand over, so as not to wait with it.
            if buf.filled().len() > filled || this.eof {
                return Poll::Ready(Ok(()));
            }
            let start = buf.filled().len();
            ready!(Pin::new(&mut this.io).poll_read(cx, buf))?;
            if buf.filled().len() == start {
                // The client is gone; a header block it left unfinished goes with it.
                this.eof = true;
                return Poll::Ready(Ok(()));
            }
            let chunk = &mut buf.filled_mut()[start..];
            let (kept, scanned) = match this.scan.scan(chunk, &mut this.out) {
                Ok(done) => done,
                Err(why) => return Poll::Ready(Err(this.fail(why))),
            };
            // What follows a header block waits for the block to go on.
            this.pending.extend_from_slice(&chunk[scanned..]);
            buf.set_filled(start + kept);
        }
    }
}

impl<IO> AuthorityFix<IO> {
    /// Ends the connection, for `why`.
    fn fail(&mut self, why: String) -> io::Error {
        tracing::debug!(error = %why, "ending a Unix connection: its client's HTTP/2 is malformed");
        let err = malformed(&why);
        self.failed = Some(why);
        err
    }
}

/// Empties `buf`, giving back the memory a large header block made it take.
fn clear(buf: &mut Vec<u8>) {
    buf.clear();
    if buf.capacity() > KEEP_CAPACITY {
        buf.shrink_to(KEEP_CAPACITY);
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for AuthorityFix<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// Where the scan is in the client's byte stream.
#[derive(Clone, Copy)]
enum Step {
    /// In the connection preface, this many bytes of it seen.
    Preface(usize),
    /// Not HTTP/2 with prior knowledge: everything goes through (the server refuses it).
    Opaque,
    /// At or in a frame header (the bytes so far are in `Scanner::head`).
    Head,
    /// In the payload of a frame that goes through: this many bytes of it left.
    Skip(usize),
    /// In the payload of a HEADERS or CONTINUATION frame, held in `Scanner::fragments`.
    Hold(Held),
}

/// A HEADERS or CONTINUATION frame being held.
#[derive(Clone, Copy)]
struct Held {
    /// Payload bytes still to come.
    left: usize,
    flags: u8,
    headers: bool,
    /// Where its payload starts in `Scanner::fragments`.
    start: usize,
}

/// What a frame header starts.
enum Next {
    /// A frame that goes through, with this much payload.
    Pass(usize),
    /// A frame of a header block.
    Hold(Held),
}

/// The header block being gathered.
struct Block {
    stream: u32,
    end_stream: bool,
    priority: Option<[u8; PRIORITY_LEN]>,
}

/// The parser of the client's side of the connection, and the two HPACK contexts.
struct Scanner {
    step: Step,
    head: [u8; HEAD_LEN],
    head_len: usize,
    block: Option<Block>,
    /// The block's fragments so far (and the current frame's raw payload at the end).
    fragments: Vec<u8>,
    /// The client's HPACK context.
    decoder: Decoder<'static>,
    /// Ours, which the server's decoder follows.
    encoder: Encoder<'static>,
    /// The decoded header list: names and values end to end, and where each field's name
    /// starts, its value starts and it ends.
    fields: Vec<u8>,
    spans: Vec<(usize, usize, usize)>,
    /// How the client put each field: the server's table is to hold the same fields.
    kinds: Vec<Kind>,
    /// The block with its Huffman-coded strings decoded (what loona's decoder reads), and
    /// one string being decoded.
    raw: Vec<u8>,
    text: Vec<u8>,
    /// The block encoded again.
    encoded: Vec<u8>,
    /// An `:authority` was replaced on this connection (said once in the log).
    replaced: bool,
}

impl Scanner {
    fn new() -> Self {
        let mut decoder = Decoder::new();
        // Without a bound, loona's decoder follows any size update (up to 2^28 bytes), and
        // a client could make it hold that much; beyond this one it refuses the block.
        decoder.set_max_allowed_table_size(TABLE_SIZE);
        let mut encoder = Encoder::new();
        encoder.set_max_table_size(TABLE_SIZE);
        Scanner {
            step: Step::Preface(0),
            head: [0; HEAD_LEN],
            head_len: 0,
            block: None,
            fragments: Vec::new(),
            decoder,
            encoder,
            fields: Vec::new(),
            spans: Vec::new(),
            kinds: Vec::new(),
            raw: Vec::new(),
            text: Vec::new(),
            encoded: Vec::new(),
            replaced: false,
        }
    }

    /// Scans `chunk`, the next bytes from the client, in place: what goes through is moved to
    /// its front, what belongs to a header block is taken out. Stops early when a header
    /// block is complete (its frames are then in `out`, which must be empty on entry, and go
    /// before the rest) or when a frame header held back from an earlier chunk must go
    /// through (likewise in `out`). Says how many bytes at the front go through, and how
    /// many of `chunk` were scanned.
    fn scan(&mut self, chunk: &mut [u8], out: &mut Vec<u8>) -> Result<(usize, usize), String> {
        let n = chunk.len();
        let (mut r, mut w) = (0, 0);
        // Moves `k` bytes at `r` through to `w`: no copy unless something was taken out.
        let pass = |chunk: &mut [u8], r: &mut usize, w: &mut usize, k: usize| {
            if *w != *r {
                chunk.copy_within(*r..*r + k, *w);
            }
            *r += k;
            *w += k;
        };
        while r < n {
            match self.step {
                Step::Preface(seen) => {
                    let k = (PREFACE.len() - seen).min(n - r);
                    self.step = if chunk[r..r + k] != PREFACE[seen..seen + k] {
                        Step::Opaque
                    } else if seen + k == PREFACE.len() {
                        Step::Head
                    } else {
                        Step::Preface(seen + k)
                    };
                    pass(chunk, &mut r, &mut w, k);
                }
                Step::Opaque => {
                    let k = n - r;
                    pass(chunk, &mut r, &mut w, k);
                }
                Step::Skip(left) => {
                    let k = left.min(n - r);
                    pass(chunk, &mut r, &mut w, k);
                    self.step = if k == left {
                        Step::Head
                    } else {
                        Step::Skip(left - k)
                    };
                }
                Step::Head => {
                    let k = (HEAD_LEN - self.head_len).min(n - r);
                    self.head[self.head_len..self.head_len + k].copy_from_slice(&chunk[r..r + k]);
                    self.head_len += k;
                    r += k;
                    if self.head_len < HEAD_LEN {
                        continue;
                    }
                    self.head_len = 0;
                    match self.on_head()? {
                        Next::Pass(len) => {
                            self.step = if len == 0 {
                                Step::Head
                            } else {
                                Step::Skip(len)
                            };
                            if w + HEAD_LEN <= r {
                                chunk[w..w + HEAD_LEN].copy_from_slice(&self.head);
                                w += HEAD_LEN;
                            } else {
                                // Part of it came in an earlier chunk: no room here.
                                out.extend_from_slice(&self.head);
                                return Ok((w, r));
                            }
                        }
                        Next::Hold(held) if held.left == 0 => {
                            self.step = Step::Head;
                            if self.end_frame(held, out)? {
                                return Ok((w, r));
                            }
                        }
                        Next::Hold(held) => self.step = Step::Hold(held),
                    }
                }
                Step::Hold(mut held) => {
                    let k = held.left.min(n - r);
                    self.fragments.extend_from_slice(&chunk[r..r + k]);
                    r += k;
                    held.left -= k;
                    if held.left > 0 {
                        self.step = Step::Hold(held);
                    } else {
                        self.step = Step::Head;
                        if self.end_frame(held, out)? {
                            return Ok((w, r));
                        }
                    }
                }
            }
        }
        Ok((w, r))
    }

    /// What the complete frame header in `head` starts.
    fn on_head(&mut self) -> Result<Next, String> {
        let h = self.head;
        let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
        let (kind, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        match (&self.block, kind) {
            (Some(block), TYPE_CONTINUATION) if block.stream == stream => {}
            (Some(block), _) => {
                return Err(format!(
                    "the header block of stream {} is interrupted by a frame of type {kind} \
                     on stream {stream}: only its CONTINUATION frames may follow",
                    block.stream
                ));
            }
            (None, TYPE_CONTINUATION) => {
                return Err(format!(
                    "a CONTINUATION frame on stream {stream} continues no header block"
                ));
            }
            (None, TYPE_HEADERS) => {
                self.block = Some(Block {
                    stream,
                    end_stream: flags & FLAG_END_STREAM != 0,
                    priority: None,
                });
                self.fragments.clear();
            }
            (None, _) => return Ok(Next::Pass(len)),
        }
        if self.fragments.len() + len > MAX_HEADER_BLOCK {
            return Err(format!(
                "a header block of stream {stream} grows past {} KiB",
                MAX_HEADER_BLOCK / 1024
            ));
        }
        Ok(Next::Hold(Held {
            left: len,
            flags,
            headers: kind == TYPE_HEADERS,
            start: self.fragments.len(),
        }))
    }

    /// Takes the padding and priority off a held HEADERS frame; on END_HEADERS, puts the
    /// block encoded again into `out` and says so.
    fn end_frame(&mut self, held: Held, out: &mut Vec<u8>) -> Result<bool, String> {
        if held.headers {
            let payload = &self.fragments[held.start..];
            let mut prefix = 0;
            let mut padding = 0;
            if held.flags & FLAG_PADDED != 0 {
                let Some(&pad) = payload.first() else {
                    return Err("a PADDED HEADERS frame has no pad length".into());
                };
                padding = usize::from(pad);
                prefix = 1;
            }
            if held.flags & FLAG_PRIORITY != 0 {
                let Some(fields) = payload.get(prefix..prefix + PRIORITY_LEN) else {
                    return Err("a HEADERS frame is too short for its priority".into());
                };
                let mut priority = [0; PRIORITY_LEN];
                priority.copy_from_slice(fields);
                if let Some(block) = &mut self.block {
                    block.priority = Some(priority);
                }
                prefix += PRIORITY_LEN;
            }
            if prefix + padding > payload.len() {
                return Err("a HEADERS frame's padding is longer than the frame".into());
            }
            let end = self.fragments.len() - padding;
            self.fragments.truncate(end);
            self.fragments.drain(held.start..held.start + prefix);
        }
        if held.flags & FLAG_END_HEADERS == 0 {
            return Ok(false);
        }
        self.pass_block(out)?;
        Ok(true)
    }

    /// Decodes the complete block in `fragments`, fixes its `:authority`, and puts it into
    /// `out` encoded again, as HEADERS and CONTINUATION frames.
    fn pass_block(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        let Some(block) = self.block.take() else {
            return Err("a header block ends that never started".into());
        };
        self.fields.clear();
        self.spans.clear();
        self.kinds.clear();
        let mut size = 0usize;
        self.raw.clear();
        let plain = transcode(
            &self.fragments,
            &mut self.raw,
            &mut self.text,
            &mut self.kinds,
        );
        plain.map_err(|why| {
            format!(
                "the header block of stream {} does not decode: {why}",
                block.stream
            )
        })?;
        let fields = &mut self.fields;
        let spans = &mut self.spans;
        self.decoder
            .decode_with_cb(&self.raw, |name, value| {
                size = size.saturating_add(name.len() + value.len() + 32);
                if size <= MAX_HEADER_BLOCK {
                    let start = fields.len();
                    fields.extend_from_slice(&name);
                    fields.extend_from_slice(&value);
                    spans.push((start, start + name.len(), fields.len()));
                }
            })
            .map_err(|err| {
                format!(
                    "the header block of stream {} does not decode: {err}",
                    block.stream
                )
            })?;
        if size > MAX_HEADER_BLOCK {
            return Err(format!(
                "the header list of stream {} is larger than {} KiB",
                block.stream,
                MAX_HEADER_BLOCK / 1024
            ));
        }
        self.encoded.clear();
        for (i, &(start, value, end)) in self.spans.iter().enumerate() {
            let name = &self.fields[start..value];
            let mut value = &self.fields[value..end];
            if name == b":authority" && Authority::try_from(value).is_err() {
                if !self.replaced {
                    self.replaced = true;
                    tracing::debug!(
                        authority = %String::from_utf8_lossy(value),
                        "a client's :authority is no URI authority (a gRPC client dialing \
                         unix:PATH sends the path): the server sees {REPLACEMENT}"
                    );
                }
                value = REPLACEMENT.as_bytes();
            }
            match self.kinds.get(i) {
                Some(Kind::Unindexed) => put_literal(&mut self.encoded, 0x00, name, value),
                Some(Kind::NeverIndexed) => put_literal(&mut self.encoded, 0x10, name, value),
                Some(Kind::Indexed) | None => self
                    .encoder
                    .encode_header_into((name, value), &mut self.encoded)
                    .map_err(|err| format!("encoding a header block: {err}"))?,
            }
        }
        put_frames(out, &block, &self.encoded);
        clear(&mut self.fragments);
        clear(&mut self.fields);
        clear(&mut self.raw);
        clear(&mut self.text);
        clear(&mut self.encoded);
        if self.spans.capacity() > KEEP_CAPACITY / 16 {
            self.spans = Vec::new();
            self.kinds = Vec::new();
        }
        Ok(())
    }
}

/// Puts `encoded`, the header block of `block`, into `out` as a HEADERS frame and as many
/// CONTINUATION frames as it needs, none with more than [`MAX_FRAME`] bytes of payload.
fn put_frames(out: &mut Vec<u8>, block: &Block, encoded: &[u8]) {
    let priority_len = if block.priority.is_some() {
        PRIORITY_LEN
    } else {
        0
    };
    let (first, mut rest) = encoded.split_at(encoded.len().min(MAX_FRAME - priority_len));
    let mut flags = 0;
    if block.end_stream {
        flags |= FLAG_END_STREAM;
    }
    if block.priority.is_some() {
        flags |= FLAG_PRIORITY;
    }
    if rest.is_empty() {
        flags |= FLAG_END_HEADERS;
    }
    out.reserve(encoded.len() + priority_len + HEAD_LEN * (1 + encoded.len() / MAX_FRAME));
    put_head(
        out,
        priority_len + first.len(),
        TYPE_HEADERS,
        flags,
        block.stream,
    );
    if let Some(priority) = &block.priority {
        out.extend_from_slice(priority);
    }
    out.extend_from_slice(first);
    while !rest.is_empty() {
        let (part, tail) = rest.split_at(rest.len().min(MAX_FRAME));
        let flags = if tail.is_empty() { FLAG_END_HEADERS } else { 0 };
        put_head(out, part.len(), TYPE_CONTINUATION, flags, block.stream);
        out.extend_from_slice(part);
        rest = tail;
    }
}

/// Puts a frame header into `out`; `len` is at most [`MAX_FRAME`].
fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len.to_be_bytes();
    out.extend_from_slice(&len[len.len() - 3..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// How a client put a field in its header block.
#[derive(Clone, Copy)]
enum Kind {
    /// By reference to its table, or as a literal added to it: ours is to hold it as well.
    Indexed,
    /// As a literal kept out of its table.
    Unindexed,
    /// As a literal no intermediary may add to a table (a sensitive value).
    NeverIndexed,
}

/// Copies the header block `block` into `raw` with every Huffman-coded string decoded
/// (`text` holds each while it is), and says in `kinds` how each field was put. loona's own
/// Huffman decoder builds its tables anew for every string (some 25 µs each, and 160 ns a
/// character): a client could make a block of short strings cost seconds. Its decoder then
/// reads plain strings only.
fn transcode(
    block: &[u8],
    raw: &mut Vec<u8>,
    text: &mut Vec<u8>,
    kinds: &mut Vec<Kind>,
) -> Result<(), &'static str> {
    let mut at = 0;
    while let Some(&first) = block.get(at) {
        // Indexed field (1), literal with incremental indexing (01), table size update
        // (001), literal without indexing (0000) or never indexed (0001): the prefix of the
        // integer that starts it, and whether strings follow.
        let (prefix, literal, kind) = match first.leading_zeros() {
            0 => (7, false, Some(Kind::Indexed)),
            1 => (6, true, Some(Kind::Indexed)),
            2 => (5, false, None),
            3 => (4, true, Some(Kind::NeverIndexed)),
            _ => (4, true, Some(Kind::Unindexed)),
        };
        kinds.extend(kind);
        let (index, used) = integer(&block[at..], prefix)?;
        raw.extend_from_slice(&block[at..at + used]);
        at += used;
        if literal {
            if index == 0 {
                at = transcode_string(block, at, raw, text)?;
            }
            at = transcode_string(block, at, raw, text)?;
        }
    }
    Ok(())
}

/// Copies the string at `at` in `block` into `raw`, decoded if Huffman-coded; says where
/// it ends.
fn transcode_string(
    block: &[u8],
    at: usize,
    raw: &mut Vec<u8>,
    text: &mut Vec<u8>,
) -> Result<usize, &'static str> {
    let (len, used) = integer(&block[at..], 7)?;
    let end = (at + used)
        .checked_add(len)
        .filter(|&end| end <= block.len())
        .ok_or("a string runs past the end of the block")?;
    if block[at] & 0x80 == 0 {
        raw.extend_from_slice(&block[at..end]);
    } else {
        text.clear();
        huffman().decode(&block[at + used..end], text)?;
        put_integer(raw, 0, 7, text.len());
        raw.extend_from_slice(text);
    }
    Ok(end)
}

/// An HPACK integer with a `prefix`-bit prefix at the start of `buf`, and its length: at most
/// five octets, as loona reads them.
fn integer(buf: &[u8], prefix: u8) -> Result<(usize, usize), &'static str> {
    let mask = (1u8 << prefix) - 1;
    let first = *buf.first().ok_or("the block ends inside a field")?;
    let mut value = usize::from(first & mask);
    if value < usize::from(mask) {
        return Ok((value, 1));
    }
    for (i, &byte) in buf.iter().enumerate().skip(1).take(4) {
        value += usize::from(byte & 0x7f) << (7 * (i - 1));
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err("an integer is longer than five octets, or cut short")
}

/// Puts a literal field that stays out of the tables: `first` is 0x00 (without indexing) or
/// 0x10 (never indexed).
fn put_literal(out: &mut Vec<u8>, first: u8, name: &[u8], value: &[u8]) {
    out.push(first);
    put_integer(out, 0, 7, name.len());
    out.extend_from_slice(name);
    put_integer(out, 0, 7, value.len());
    out.extend_from_slice(value);
}

/// Puts an HPACK integer with a `prefix`-bit prefix after `first`'s high bits.
fn put_integer(out: &mut Vec<u8>, first: u8, prefix: u8, mut value: usize) {
    let max = (1usize << prefix) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// The length of each symbol's code in HPACK's Huffman code (RFC 7541 appendix B; symbol
/// 256 is EOS). The code is canonical, so the lengths make the codes.
#[rustfmt::skip]
const HUFFMAN_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0x00..
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 0x10..
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // 0x20..
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // 0x30..
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // 0x40..
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 0x50..
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // 0x60..
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 0x70..
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 0x80..
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 0x90..
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 0xa0..
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 0xb0..
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 0xc0..
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 0xd0..
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 0xe0..
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 0xf0..
    30, // 0x100..
];

/// HPACK's Huffman code, read the way a canonical code is.
struct Huffman {
    /// For each code length: its first code, how many codes it has, and where their
    /// symbols start in `symbols`.
    first: [u32; 31],
    count: [u32; 31],
    offset: [u16; 31],
    /// The symbols in the order of their codes.
    symbols: [u16; 257],
}

/// The Huffman code's tables, made once.
fn huffman() -> &'static Huffman {
    static CODE: std::sync::OnceLock<Huffman> = std::sync::OnceLock::new();
    CODE.get_or_init(Huffman::new)
}

impl Huffman {
    fn new() -> Huffman {
        let mut code = Huffman {
            first: [0; 31],
            count: [0; 31],
            offset: [0; 31],
            symbols: [0; 257],
        };
        let (mut next, mut at) = (0u32, 0u16);
        for len in 1..=30 {
            code.first[len] = next;
            code.offset[len] = at;
            for (symbol, _) in (0u16..)
                .zip(HUFFMAN_LENGTHS)
                .filter(|&(_, l)| usize::from(l) == len)
            {
                code.symbols[usize::from(at)] = symbol;
                at += 1;
                code.count[len] += 1;
            }
            next = (next + code.count[len]) << 1;
        }
        code
    }

    /// Appends the string Huffman-coded in `coded` to `out`.
    fn decode(&self, coded: &[u8], out: &mut Vec<u8>) -> Result<(), &'static str> {
        out.reserve(coded.len() * 8 / 5);
        let (mut code, mut len) = (0u32, 0usize);
        for &byte in coded {
            for shift in (0..8).rev() {
                code = code << 1 | u32::from(byte >> shift & 1);
                len += 1;
                let index = code.wrapping_sub(self.first[len]);
                if index < self.count[len] {
                    let symbol = self.symbols[usize::from(self.offset[len]) + index as usize];
                    let Ok(symbol) = u8::try_from(symbol) else {
                        return Err("a Huffman-coded string holds EOS");
                    };
                    out.push(symbol);
                    (code, len) = (0, 0);
                } else if len == 30 {
                    return Err("a Huffman-coded string holds no code");
                }
            }
        }
        // At most 7 bits of padding, the start of EOS: all ones.
        if len > 7 || code != (1 << len) - 1 {
            return Err("a Huffman-coded string is padded wrong");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    const TYPE_DATA: u8 = 0x0;
    const TYPE_RST_STREAM: u8 = 0x3;
    const TYPE_SETTINGS: u8 = 0x4;
    const TYPE_PING: u8 = 0x6;
    const TYPE_GOAWAY: u8 = 0x7;
    const TYPE_WINDOW_UPDATE: u8 = 0x8;
    const PATH: &[u8] = b"/tmp/x/node.sock";

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
        let mut out = len[1..].to_vec();
        out.push(kind);
        out.push(flags);
        out.extend_from_slice(&stream.to_be_bytes());
        out.extend_from_slice(payload);
        out
    }

    // --- A client's HPACK, by hand (loona's encoder has no Huffman code and always indexes).

    /// Each symbol's Huffman code and its length, from the decoder's tables.
    fn codes() -> Vec<(u32, u32)> {
        let code = huffman();
        let mut codes = vec![(0, 0); 257];
        for len in 1..=30 {
            for i in 0..code.count[len] {
                let symbol = code.symbols[usize::from(code.offset[len]) + i as usize];
                codes[usize::from(symbol)] = (code.first[len] + i, len as u32);
            }
        }
        codes
    }

    /// `s` Huffman-coded, checked against loona's decoder.
    fn huffman_code(s: &[u8]) -> Vec<u8> {
        let codes = codes();
        let (mut out, mut bits, mut held) = (Vec::new(), 0u64, 0u32);
        for &c in s {
            let (code, len) = codes[usize::from(c)];
            bits = bits << len | u64::from(code);
            held += len;
            while held >= 8 {
                held -= 8;
                out.push((bits >> held) as u8);
            }
        }
        if held > 0 {
            // Padded with the most significant bits of EOS: ones.
            out.push((bits << (8 - held)) as u8 | (0xff >> held));
        }
        let back = loona_hpack::huffman::HuffmanDecoder::new()
            .decode(&out)
            .unwrap();
        assert_eq!(back, s, "loona decodes our Huffman code otherwise");
        out
    }

    fn string(out: &mut Vec<u8>, s: &[u8], huffman_coded: bool) {
        if huffman_coded {
            let coded = huffman_code(s);
            put_integer(out, 0x80, 7, coded.len());
            out.extend_from_slice(&coded);
        } else {
            put_integer(out, 0, 7, s.len());
            out.extend_from_slice(s);
        }
    }

    fn indexed(out: &mut Vec<u8>, index: usize) {
        put_integer(out, 0x80, 7, index);
    }

    /// How a literal field is represented: (first bits, prefix length).
    const INDEXING: (u8, u8) = (0x40, 6);
    const WITHOUT_INDEXING: (u8, u8) = (0x00, 4);
    const NEVER_INDEXED: (u8, u8) = (0x10, 4);

    /// A literal field whose name is the table's entry `name` (or, with 0, `literal_name`).
    fn literal(
        out: &mut Vec<u8>,
        (first, n): (u8, u8),
        name: usize,
        literal_name: &[u8],
        value: &[u8],
        huffman_coded: bool,
    ) {
        put_integer(out, first, n, name);
        if name == 0 {
            string(out, literal_name, huffman_coded);
        }
        string(out, value, huffman_coded);
    }

    fn size_update(out: &mut Vec<u8>, size: usize) {
        put_integer(out, 0x20, 5, size);
    }

    // --- Reading what the client sent, or what the server got.

    #[derive(Debug, PartialEq)]
    enum Item {
        Headers {
            stream: u32,
            end_stream: bool,
            priority: Option<Vec<u8>>,
            fields: Fields,
        },
        Frame {
            kind: u8,
            flags: u8,
            stream: u32,
            payload: Vec<u8>,
        },
    }

    struct Parsed {
        items: Vec<Item>,
        /// Every frame's type, flags and payload length.
        frames: Vec<(u8, u8, usize)>,
    }

    /// Parses a client's byte stream, with one HPACK decoder for the connection.
    fn parse(bytes: &[u8]) -> Parsed {
        assert!(bytes.starts_with(PREFACE), "no preface");
        let mut decoder = Decoder::new();
        let (mut items, mut frames) = (Vec::new(), Vec::new());
        // The header block being read: its item (fields still empty) and its fragments.
        let mut open: Option<(Item, Vec<u8>)> = None;
        let mut at = PREFACE.len();
        while at < bytes.len() {
            let h = &bytes[at..at + HEAD_LEN];
            let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
            let (kind, flags) = (h[3], h[4]);
            let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            let payload = &bytes[at + HEAD_LEN..at + HEAD_LEN + len];
            at += HEAD_LEN + len;
            frames.push((kind, flags, len));
            match kind {
                TYPE_HEADERS => {
                    assert!(open.is_none());
                    let mut p = payload;
                    let mut pad = 0;
                    if flags & FLAG_PADDED != 0 {
                        pad = usize::from(p[0]);
                        p = &p[1..];
                    }
                    let mut priority = None;
                    if flags & FLAG_PRIORITY != 0 {
                        priority = Some(p[..5].to_vec());
                        p = &p[5..];
                    }
                    let fragment = p[..p.len() - pad].to_vec();
                    let headers = Item::Headers {
                        stream,
                        end_stream: flags & FLAG_END_STREAM != 0,
                        priority,
                        fields: Vec::new(),
                    };
                    open = Some((headers, fragment));
                }
                TYPE_CONTINUATION => {
                    let Some((Item::Headers { stream: of, .. }, block)) = open.as_mut() else {
                        panic!("a CONTINUATION continues no header block");
                    };
                    assert_eq!(*of, stream);
                    block.extend_from_slice(payload);
                }
                _ => {
                    assert!(open.is_none());
                    items.push(Item::Frame {
                        kind,
                        flags,
                        stream,
                        payload: payload.to_vec(),
                    });
                }
            }
            if matches!(kind, TYPE_HEADERS | TYPE_CONTINUATION) && flags & FLAG_END_HEADERS != 0 {
                let (mut headers, block) = open.take().unwrap();
                if let Item::Headers { fields, .. } = &mut headers {
                    *fields = decoder.decode(&block).unwrap();
                }
                items.push(headers);
            }
        }
        assert!(open.is_none(), "a header block is unfinished");
        Parsed { items, frames }
    }

    /// `items` with every `:authority` h2 would refuse replaced.
    fn fixed(mut items: Vec<Item>) -> Vec<Item> {
        for item in &mut items {
            if let Item::Headers { fields, .. } = item {
                for (name, value) in fields {
                    if name == b":authority" && Authority::try_from(&value[..]).is_err() {
                        *value = REPLACEMENT.as_bytes().to_vec();
                    }
                }
            }
        }
        items
    }

    fn authorities(items: &[Item]) -> Vec<Vec<u8>> {
        let mut found = Vec::new();
        for item in items {
            if let Item::Headers { fields, .. } = item {
                for (name, value) in fields {
                    if name == b":authority" {
                        found.push(value.clone());
                    }
                }
            }
        }
        found
    }

    // --- Feeding bytes through the fix.

    /// A connection that hands over at most `chunk` bytes a read, and, with `stall`, says
    /// Pending before each.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        chunk: usize,
        stall: bool,
        stalled: bool,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if self.stall {
                self.stalled = !self.stalled;
                if self.stalled {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
            }
            let n = self
                .chunk
                .min(buf.remaining())
                .min(self.data.len() - self.at);
            buf.put_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    /// What the server reads through the fix when the client sends `input`, the connection
    /// giving `chunk` bytes at a time and the server reading `read` at a time.
    async fn through_with(
        input: &[u8],
        chunk: usize,
        read: usize,
        stall: bool,
    ) -> io::Result<Vec<u8>> {
        let mut fix = AuthorityFix::new(Trickle {
            data: input.to_vec(),
            at: 0,
            chunk,
            stall,
            stalled: false,
        });
        let (mut out, mut buf) = (Vec::new(), vec![0; read]);
        loop {
            let n = fix.read(&mut buf).await?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    async fn through(input: &[u8]) -> io::Result<Vec<u8>> {
        through_with(input, usize::MAX, 64 * 1024, false).await
    }

    /// A client's connection: SETTINGS; a request on stream 1 whose block (path
    /// `:authority` Huffman-coded) is split mid-string over HEADERS (PADDED, PRIORITY) and
    /// two CONTINUATIONs; its DATA; a request on stream 3 made of references to the first's
    /// entries; one on stream 5 with a 40000-byte field, over three frames; and some other
    /// frames.
    fn client_bytes() -> Vec<u8> {
        let mut first = Vec::new();
        indexed(&mut first, 3); // :method POST
        indexed(&mut first, 6); // :scheme http
        literal(
            &mut first,
            INDEXING,
            4,
            b"",
            b"/accelhost.node.v1.Node/Enumerate",
            true,
        );
        literal(&mut first, INDEXING, 1, b"", PATH, true);
        literal(&mut first, INDEXING, 31, b"", b"application/grpc", false);
        literal(&mut first, WITHOUT_INDEXING, 0, b"te", b"trailers", false);
        literal(&mut first, NEVER_INDEXED, 0, b"x-secret", b"sesame", false);
        literal(&mut first, INDEXING, 58, b"", b"grpc-python/1.85.3", false);
        // The dynamic table now: user-agent (62), content-type (63), :authority (64),
        // :path (65).
        let mut second = Vec::new();
        indexed(&mut second, 3);
        indexed(&mut second, 6);
        indexed(&mut second, 65);
        indexed(&mut second, 64);
        indexed(&mut second, 63);
        literal(
            &mut second,
            WITHOUT_INDEXING,
            0,
            b"grpc-timeout",
            b"4999m",
            false,
        );
        indexed(&mut second, 62);
        let mut third = Vec::new();
        indexed(&mut third, 3);
        indexed(&mut third, 6);
        indexed(&mut third, 65);
        literal(
            &mut third,
            INDEXING,
            1,
            b"",
            b"/run/accelhost/other.sock",
            false,
        );
        literal(
            &mut third,
            WITHOUT_INDEXING,
            0,
            b"x-big",
            &[b'b'; 40_000],
            false,
        );

        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(TYPE_SETTINGS, 0, 0, &[0, 4, 0, 0x10, 0, 0]));
        bytes.extend(frame(TYPE_WINDOW_UPDATE, 0, 0, &[0, 0x10, 0, 0]));
        let mut headers = vec![7]; // pad length
        headers.extend_from_slice(&[0x80, 0, 0, 0, 200]); // exclusive, on stream 0, weight
        headers.extend_from_slice(&first[..5]);
        headers.extend_from_slice(&[0; 7]);
        bytes.extend(frame(
            TYPE_HEADERS,
            FLAG_PADDED | FLAG_PRIORITY,
            1,
            &headers,
        ));
        bytes.extend(frame(TYPE_CONTINUATION, 0, 1, &first[5..40]));
        bytes.extend(frame(TYPE_CONTINUATION, FLAG_END_HEADERS, 1, &first[40..]));
        let data: Vec<u8> = (0..=255).cycle().take(3000).collect();
        bytes.extend(frame(TYPE_DATA, FLAG_END_STREAM, 1, &data));
        bytes.extend(frame(
            TYPE_HEADERS,
            FLAG_END_STREAM | FLAG_END_HEADERS,
            3,
            &second,
        ));
        bytes.extend(frame(TYPE_PING, 0, 0, b"12345678"));
        bytes.extend(frame(TYPE_HEADERS, 0, 5, &third[..16_384]));
        bytes.extend(frame(TYPE_CONTINUATION, 0, 5, &third[16_384..32_768]));
        bytes.extend(frame(
            TYPE_CONTINUATION,
            FLAG_END_HEADERS,
            5,
            &third[32_768..],
        ));
        bytes.extend(frame(TYPE_DATA, 0, 5, b""));
        bytes.extend(frame(TYPE_RST_STREAM, 0, 5, &[0, 0, 0, 8]));
        bytes.extend(frame(TYPE_SETTINGS, 0x1, 0, b""));
        bytes.extend(frame(TYPE_GOAWAY, 0, 0, &[0, 0, 0, 5, 0, 0, 0, 0]));
        bytes
    }

    /// Requests a client encoded with a dynamic table (loona's encoder indexes every new
    /// field, so later blocks are mostly references), with table size updates down to 2048
    /// and back to 4096, and one request whose `:authority` is a real one.
    fn indexed_bytes() -> Vec<u8> {
        let mut client = Encoder::new();
        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(TYPE_SETTINGS, 0, 0, b""));
        for i in 0..8u32 {
            let authority: &[u8] = if i == 4 { b"example.com:50051" } else { PATH };
            let path = format!("/accelhost.node.v1.Node/Call{}", i % 3);
            let mut block = Vec::new();
            if i == 3 {
                size_update(&mut block, 2048);
                client.set_max_table_size(2048);
            }
            if i == 6 {
                size_update(&mut block, 4096);
                client.set_max_table_size(4096);
            }
            let fields: [(&[u8], &[u8]); 6] = [
                (b":method", b"POST"),
                (b":scheme", b"http"),
                (b":path", path.as_bytes()),
                (b":authority", authority),
                (b"content-type", b"application/grpc"),
                (b"x-padding", &[b'p'; 700]),
            ];
            client.encode_into(fields, &mut block).unwrap();
            let stream = 2 * i + 1;
            bytes.extend(frame(TYPE_HEADERS, FLAG_END_HEADERS, stream, &block));
            bytes.extend(frame(TYPE_DATA, FLAG_END_STREAM, stream, &[i as u8; 5]));
        }
        bytes
    }

    #[tokio::test]
    async fn a_path_authority_becomes_localhost_and_nothing_else_changes() {
        let input = client_bytes();
        let sent = parse(&input);
        let got = parse(&through(&input).await.unwrap());
        assert_eq!(
            authorities(&sent.items),
            [PATH, PATH, b"/run/accelhost/other.sock"]
        );
        assert_eq!(
            authorities(&got.items),
            [REPLACEMENT.as_bytes(); 3],
            "the :authority was not fixed"
        );
        assert_eq!(got.items, fixed(sent.items));
        for &(kind, flags, len) in &got.frames {
            assert!(len <= MAX_FRAME, "a frame of type {kind} has {len} bytes");
            assert_eq!(flags & FLAG_PADDED, 0, "padding is dropped");
        }
        // The 40000-byte field goes on as HEADERS and two CONTINUATIONs, the last one ending
        // the block.
        let kinds: Vec<(u8, u8)> = got.frames.iter().map(|f| (f.0, f.1)).collect();
        let at = kinds.iter().position(|&k| k == (TYPE_HEADERS, 0)).unwrap();
        assert_eq!(
            kinds[at..at + 3],
            [
                (TYPE_HEADERS, 0),
                (TYPE_CONTINUATION, 0),
                (TYPE_CONTINUATION, FLAG_END_HEADERS)
            ]
        );
        assert_eq!(kinds[at + 3].0, TYPE_DATA);
    }

    #[tokio::test]
    async fn literals_the_client_kept_out_of_its_table_stay_out_of_ours() {
        let got = through(&client_bytes()).await.unwrap();
        let contains = |needle: &[u8]| got.windows(needle.len()).any(|w| w == needle);
        assert!(contains(b"\x10\x08x-secret\x06sesame"), "never indexed");
        assert!(contains(b"\x00\x02te\x08trailers"), "without indexing");
        assert!(
            contains(b"\x00\x0cgrpc-timeout\x054999m"),
            "without indexing"
        );
    }

    #[tokio::test]
    async fn header_blocks_that_refer_to_earlier_entries_decode_after_the_rewrite() {
        let input = indexed_bytes();
        let sent = parse(&input);
        let got = parse(&through(&input).await.unwrap());
        let mut expected = vec![REPLACEMENT.as_bytes().to_vec(); 8];
        expected[4] = b"example.com:50051".to_vec();
        assert_eq!(authorities(&got.items), expected);
        assert_eq!(got.items, fixed(sent.items));
    }

    #[tokio::test]
    async fn reads_of_any_size_give_the_same_bytes() {
        for input in [client_bytes(), indexed_bytes()] {
            let whole = through(&input).await.unwrap();
            for (chunk, read) in [
                (1, 1),
                (1, 1 << 16),
                (1 << 16, 1),
                (7, 3),
                (3, 7),
                (9, 9),
                (10, 4096),
                (4096, 10),
            ] {
                for stall in [false, true] {
                    let got = through_with(&input, chunk, read, stall).await.unwrap();
                    assert!(
                        got == whole,
                        "chunks of {chunk}, reads of {read}, stall {stall}"
                    );
                }
            }
        }
    }

    #[test]
    fn our_huffman_decoder_agrees_with_loona_s() {
        let all: Vec<u8> = (0..=255).chain((0..=255).rev()).collect();
        for s in [&b""[..], b"a", b"/tmp/x/node.sock", &all] {
            let coded = huffman_code(s);
            let mut ours = Vec::new();
            huffman().decode(&coded, &mut ours).unwrap();
            assert_eq!(ours, s);
        }
        // EOS (30 ones) inside a string, a whole byte of padding, padding that is not ones,
        // a code cut short: both refuse them.
        let mut loona = loona_hpack::huffman::HuffmanDecoder::new();
        for bad in [
            &[0xff, 0xff, 0xff, 0xfc][..],
            &[0x1f, 0xff],
            &[0x00],
            &[0xfe],
        ] {
            assert!(loona.decode(bad).is_err(), "{bad:?}");
            assert!(huffman().decode(bad, &mut Vec::new()).is_err(), "{bad:?}");
        }
    }

    /// A client that sends a HEADERS frame and then CONTINUATION frames without end.
    struct Flood {
        bytes: Vec<u8>,
        at: usize,
        continuation: Vec<u8>,
        sent: usize,
    }

    impl AsyncRead for Flood {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            while buf.remaining() > 0 {
                if self.at == self.bytes.len() {
                    self.bytes = self.continuation.clone();
                    self.at = 0;
                }
                let n = buf.remaining().min(self.bytes.len() - self.at);
                buf.put_slice(&self.bytes[self.at..self.at + n]);
                self.at += n;
                self.sent += n;
            }
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_continuation_flood_ends_the_connection_with_bounded_memory() {
        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(TYPE_HEADERS, 0, 1, &[0x82; 1000]));
        let mut fix = AuthorityFix::new(Flood {
            bytes,
            at: 0,
            continuation: frame(TYPE_CONTINUATION, 0, 1, &[0x82; MAX_FRAME]),
            sent: 0,
        });
        let mut buf = vec![0; 64 * 1024];
        let err = loop {
            match fix.read(&mut buf).await {
                Ok(n) => assert!(n <= PREFACE.len(), "only the preface goes through"),
                Err(err) => break err,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("grows past 256 KiB"), "{err}");
        let sent = fix.get_ref().sent;
        assert!(
            sent <= MAX_HEADER_BLOCK + 2 * buf.len(),
            "read {sent} bytes"
        );
        assert!(fix.scan.fragments.capacity() <= 2 * MAX_HEADER_BLOCK);
        assert!(fix.pending.capacity() <= buf.len() && fix.out.capacity() <= KEEP_CAPACITY);
        // The connection stays ended.
        assert!(fix.read(&mut buf).await.is_err());
    }

    #[tokio::test]
    async fn a_header_list_that_decodes_past_the_cap_ends_the_connection() {
        // One 4000-byte entry, then references to it: 4 KiB of block, any size of list.
        let block = |references: usize| {
            let mut block = vec![0x82, 0x86];
            literal(&mut block, INDEXING, 0, b"x-big", &[b'v'; 4000], false);
            for _ in 0..references {
                indexed(&mut block, 62);
            }
            let mut bytes = PREFACE.to_vec();
            bytes.extend(frame(TYPE_HEADERS, FLAG_END_HEADERS, 1, &block));
            bytes
        };
        // 60 fields of 4037 bytes are under the cap, and go through.
        let input = block(59);
        let got = parse(&through(&input).await.unwrap());
        assert_eq!(got.items, parse(&input).items);
        let err = through(&block(100)).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("larger than 256 KiB"), "{err}");
    }

    #[tokio::test]
    async fn malformed_input_ends_the_connection() {
        let connection = |frames: &[Vec<u8>]| {
            let mut bytes = PREFACE.to_vec();
            for f in frames {
                bytes.extend_from_slice(f);
            }
            bytes
        };
        let mut huge_head = frame(TYPE_HEADERS, 0, 1, b"");
        huge_head[..3].copy_from_slice(&[0xff, 0xff, 0xff]);
        let mut too_large_table = Vec::new();
        size_update(&mut too_large_table, 8192);
        too_large_table.push(0x82);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            (
                "CONTINUATION without HEADERS",
                connection(&[frame(TYPE_CONTINUATION, FLAG_END_HEADERS, 1, &[0x82])]),
            ),
            (
                "DATA inside a header block",
                connection(&[
                    frame(TYPE_HEADERS, 0, 1, &[0x82]),
                    frame(TYPE_DATA, 0, 1, b"x"),
                ]),
            ),
            (
                "CONTINUATION of another stream",
                connection(&[
                    frame(TYPE_HEADERS, 0, 1, &[0x82]),
                    frame(TYPE_CONTINUATION, FLAG_END_HEADERS, 3, &[0x86]),
                ]),
            ),
            (
                "index 0",
                connection(&[frame(TYPE_HEADERS, FLAG_END_HEADERS, 1, &[0x80])]),
            ),
            (
                "index past the tables",
                connection(&[frame(TYPE_HEADERS, FLAG_END_HEADERS, 1, &[0xff, 0x7f])]),
            ),
            (
                "a string longer than the block",
                connection(&[frame(
                    TYPE_HEADERS,
                    FLAG_END_HEADERS,
                    1,
                    &[0x40, 0x0a, b'a'],
                )]),
            ),
            (
                "an integer of too many octets",
                connection(&[frame(
                    TYPE_HEADERS,
                    FLAG_END_HEADERS,
                    1,
                    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                )]),
            ),
            (
                "bad Huffman padding",
                connection(&[frame(
                    TYPE_HEADERS,
                    FLAG_END_HEADERS,
                    1,
                    &[0x41, 0x81, 0x00],
                )]),
            ),
            (
                "a table larger than 4096",
                connection(&[frame(TYPE_HEADERS, FLAG_END_HEADERS, 1, &too_large_table)]),
            ),
            (
                "padding past the frame",
                connection(&[frame(
                    TYPE_HEADERS,
                    FLAG_PADDED | FLAG_END_HEADERS,
                    1,
                    &[10, 0x82],
                )]),
            ),
            (
                "PADDED without a pad length",
                connection(&[frame(TYPE_HEADERS, FLAG_PADDED | FLAG_END_HEADERS, 1, b"")]),
            ),
            (
                "a priority cut short",
                connection(&[frame(
                    TYPE_HEADERS,
                    FLAG_PRIORITY | FLAG_END_HEADERS,
                    1,
                    &[0, 0],
                )]),
            ),
            ("a 16 MiB HEADERS frame", connection(&[huge_head])),
        ];
        for (what, input) in cases {
            for (chunk, read) in [(usize::MAX, 1 << 16), (1, 1)] {
                match through_with(&input, chunk, read, false).await {
                    Err(err) => assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{what}"),
                    Ok(_) => panic!("{what}: passed"),
                }
            }
        }
    }

    #[tokio::test]
    async fn damaged_input_ends_the_connection_or_goes_through_but_never_panics() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let good = [client_bytes(), indexed_bytes()];
        for round in 0..400 {
            let mut input = good[round % 2].clone();
            for _ in 0..1 + random() % 8 {
                let at = PREFACE.len() + (random() as usize) % (input.len() - PREFACE.len());
                input[at] = random() as u8;
            }
            if round % 3 == 0 {
                input.truncate(PREFACE.len() + (random() as usize) % (input.len() - PREFACE.len()));
            }
            let read = 1 + (random() as usize) % 20_000;
            let _ = through_with(&input, usize::MAX, read, false).await;
        }
    }

    #[tokio::test]
    async fn what_is_not_http2_goes_through_unchanged() {
        for input in [
            &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            b"PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n\x00\x00\x01\x09\x00\x00\x00\x00\x01\x82",
            b"PRI",
            b"",
        ] {
            assert_eq!(through(input).await.unwrap(), input);
            assert_eq!(through_with(input, 1, 1, true).await.unwrap(), input);
        }
    }

    #[tokio::test]
    async fn the_server_sees_the_unix_peer_and_its_writes_go_through() {
        use tonic::transport::server::UdsConnectInfo;
        let (ours, mut theirs) = tokio::net::UnixStream::pair().unwrap();
        let mut fix = AuthorityFix::new(ours);
        let info: UdsConnectInfo = fix.connect_info();
        // SAFETY: geteuid has no preconditions.
        assert_eq!(info.peer_cred.unwrap().uid(), unsafe { libc::geteuid() });
        fix.write_all(b"server bytes").await.unwrap();
        let mut got = [0; 12];
        theirs.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"server bytes");
    }

    // --- The fix in front of the server it is for: tonic, hyper, h2.

    /// What the server answered to the request on stream 1.
    #[derive(Debug, PartialEq)]
    enum Answer {
        /// Its `:status`, and whether the service saw the Unix peer.
        Status(Vec<u8>, bool),
        /// RST_STREAM with this error code.
        Reset(u32),
    }

    /// Sends a request with `:authority` `/tmp/some.sock` to a tonic server on a Unix
    /// socket, whose connections go through the fix if `fix`.
    async fn ask_with_path_authority(fix: bool) -> Answer {
        use tokio_stream::StreamExt;
        use tokio_stream::wrappers::UnixListenerStream;
        use tonic::codegen::http;
        use tonic::transport::server::UdsConnectInfo;

        let dir =
            std::env::temp_dir().join(format!("accelhost-authority-{}-{fix}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let incoming = UnixListenerStream::new(tokio::net::UnixListener::bind(&path).unwrap());
        let service = tower::service_fn(|request: http::Request<tonic::body::Body>| async move {
            let unix = request.extensions().get::<UdsConnectInfo>().is_some();
            Ok::<_, std::convert::Infallible>(
                http::Response::builder()
                    .status(200)
                    .header("x-unix-peer", if unix { "yes" } else { "no" })
                    .body(tonic::body::Body::empty())
                    .unwrap(),
            )
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let stopped = async {
            let _ = stopped.await;
        };
        let server = tokio::spawn(async move {
            let server = tonic::transport::Server::builder();
            if fix {
                let incoming = incoming.map(|accepted| accepted.map(AuthorityFix::new));
                server
                    .serve_with_incoming_shutdown(service, incoming, stopped)
                    .await
            } else {
                server
                    .serve_with_incoming_shutdown(service, incoming, stopped)
                    .await
            }
        });

        let mut client = tokio::net::UnixStream::connect(&path).await.unwrap();
        let mut request = PREFACE.to_vec();
        request.extend(frame(TYPE_SETTINGS, 0, 0, b""));
        let block = Encoder::new().encode([
            (&b":method"[..], &b"POST"[..]),
            (b":scheme", b"http"),
            (b":path", b"/test.Test/Call"),
            (b":authority", b"/tmp/some.sock"),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
        ]);
        request.extend(frame(
            TYPE_HEADERS,
            FLAG_END_STREAM | FLAG_END_HEADERS,
            1,
            &block,
        ));
        client.write_all(&request).await.unwrap();

        let answer = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            let mut decoder = Decoder::new();
            let mut head = [0; HEAD_LEN];
            loop {
                client.read_exact(&mut head).await.unwrap();
                let len =
                    usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
                let mut payload = vec![0; len];
                client.read_exact(&mut payload).await.unwrap();
                let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
                match head[3] {
                    TYPE_HEADERS => {
                        assert_ne!(head[4] & FLAG_END_HEADERS, 0);
                        let fields = decoder.decode(&payload).unwrap();
                        let field =
                            |name: &[u8]| fields.iter().find(|f| f.0 == name).map(|f| f.1.clone());
                        return Answer::Status(
                            field(b":status").unwrap(),
                            field(b"x-unix-peer").as_deref() == Some(b"yes"),
                        );
                    }
                    TYPE_RST_STREAM if stream == 1 => {
                        return Answer::Reset(u32::from_be_bytes(payload[..4].try_into().unwrap()));
                    }
                    TYPE_GOAWAY => panic!("GOAWAY: {payload:?}"),
                    _ => {}
                }
            }
        })
        .await
        .expect("no answer in 10 s");
        let _ = stop.send(());
        drop(client);
        server.await.unwrap().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        answer
    }

    #[tokio::test]
    async fn tonic_answers_a_path_authority_through_the_fix() {
        assert_eq!(
            ask_with_path_authority(true).await,
            Answer::Status(b"200".to_vec(), true)
        );
    }

    /// Why the fix exists. If this fails, h2 has come to accept such an `:authority`, and the
    /// fix may go.
    #[tokio::test]
    async fn without_the_fix_h2_resets_a_path_authority() {
        assert_eq!(ask_with_path_authority(false).await, Answer::Reset(1));
    }
}
