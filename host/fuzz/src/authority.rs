//! `authority`: the node's [`AuthorityFix`] (an HTTP/2 frame scanner and HPACK re-encoder in
//! front of every Unix-socket client) on a client's byte stream, handed over in chunks and read
//! in buffers of sizes the input picks, so that frames, frame headers, header blocks and
//! strings split anywhere.
//!
//! An input is `[mode, chunk, read, rest...]`. With `mode`'s top bit set, `rest` is the
//! client's bytes as they are (after the connection preface when bit 6 is set too); otherwise
//! `rest` is a recipe ([`Client`]): header blocks written by an HPACK encoder of this file's
//! own (its own dynamic table, references to it and to the static table, literals with and
//! without indexing or never indexed, table size updates, Huffman-coded strings), each split
//! over HEADERS (padded, with priority) and CONTINUATION frames, between DATA, SETTINGS and
//! other frames. Bit 0 of `mode` makes the connection say Pending before every read.
//!
//! The oracle: the fix may end the connection with an error, but only on a stream that is not
//! built well (a raw one); when it does not, what the server reads, decoded with an HPACK
//! decoder of its own (loona-hpack's, with its own dynamic table and Huffman decoder), is the
//! client's stream decoded the same way, with only every `:authority` that is no URI authority
//! replaced by `localhost`: the same header blocks in the same order on the same streams
//! (END_STREAM and priority kept), every other frame byte for byte, and a frame the client
//! left unfinished passed as far as it came (a header block left unfinished is dropped). A
//! stream that is not HTTP/2 goes through untouched. A header list past
//! [`MAX_HEADER_BLOCK`] is refused; no frame the fix writes is over 16 KiB. A finding is a
//! panic, or any of these broken.

use std::io;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, Waker};

use accelhost_node::authority::{AuthorityFix, MAX_HEADER_BLOCK, REPLACEMENT};
use loona_hpack::Decoder;
use tokio::io::{AsyncRead, ReadBuf};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const HEAD_LEN: usize = 9;
const TYPE_DATA: u8 = 0x0;
const TYPE_HEADERS: u8 = 0x1;
const TYPE_CONTINUATION: u8 = 0x9;
const FLAG_END_STREAM: u8 = 0x1;
const FLAG_END_HEADERS: u8 = 0x4;
const FLAG_PADDED: u8 = 0x8;
const FLAG_PRIORITY: u8 = 0x20;
/// The largest frame payload the fix may write (SETTINGS_MAX_FRAME_SIZE's default).
const MAX_FRAME: usize = 16_384;
/// The client's dynamic table (SETTINGS_HEADER_TABLE_SIZE's default, the most the fix takes).
const TABLE_SIZE: usize = 4096;
/// Inputs past this are not run (libFuzzer's default `-max_len` is 4096).
const MAX_INPUT: usize = 1 << 20;
/// A recipe stops once the client's stream is this long: enough for a block that the fix
/// writes over several frames, few enough that an input takes milliseconds.
const MAX_CLIENT: usize = 32 * 1024;

/// Runs one input.
pub fn run(data: &[u8]) {
    let [mode, chunk, read, rest @ ..] = data else {
        return;
    };
    if data.len() > MAX_INPUT {
        return;
    }
    let (client, built) = if mode & 0x80 != 0 {
        let mut client = Vec::new();
        if mode & 0x40 != 0 {
            client.extend_from_slice(PREFACE);
        }
        client.extend_from_slice(rest);
        (client, false)
    } else {
        (Client::new(rest).build(), true)
    };
    let chunk = if *chunk == 0 {
        usize::MAX
    } else {
        usize::from(*chunk)
    };
    let read = if *read == 0 {
        64 * 1024
    } else {
        usize::from(*read)
    };
    let result = through(&client, chunk, read, mode & 1 != 0);
    check(&client, result, built);
}

// --- The connection.

/// A client's connection that hands over at most `chunk` bytes a read, and, with `stall`,
/// says Pending before each.
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

/// What the server reads through the fix, `read` bytes at a time, until the end or an error.
fn through(client: &[u8], chunk: usize, read: usize, stall: bool) -> io::Result<Vec<u8>> {
    let mut fix = AuthorityFix::new(Trickle {
        data: client.to_vec(),
        at: 0,
        chunk,
        stall,
        stalled: false,
    });
    let mut cx = Context::from_waker(Waker::noop());
    let (mut out, mut buf) = (Vec::new(), vec![0; read]);
    // Every poll but a stalled one moves the client on or hands something over.
    let mut polls = 0usize;
    loop {
        polls += 1;
        assert!(
            polls <= 4 * (client.len() + 2) + out.len(),
            "the fix reads without getting anywhere"
        );
        let mut rb = ReadBuf::new(&mut buf);
        match Pin::new(&mut fix).poll_read(&mut cx, &mut rb) {
            Poll::Pending => continue,
            Poll::Ready(Ok(())) if rb.filled().is_empty() => return Ok(out),
            Poll::Ready(Ok(())) => out.extend_from_slice(rb.filled()),
            Poll::Ready(Err(err)) => {
                // An ended connection stays ended.
                let mut rb = ReadBuf::new(&mut buf);
                let again = Pin::new(&mut fix).poll_read(&mut cx, &mut rb);
                assert!(
                    matches!(again, Poll::Ready(Err(_))),
                    "a read after the error `{err}` does not fail"
                );
                return Err(err);
            }
        }
    }
}

// --- The oracle.

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

#[derive(Debug, PartialEq)]
enum Item {
    Headers {
        stream: u32,
        end_stream: bool,
        priority: Option<Vec<u8>>,
        fields: Fields,
    },
    /// Any other frame, whole.
    Frame(Vec<u8>),
}

/// A client's stream (or the server's view of it) read frame by frame.
struct Parsed {
    items: Vec<Item>,
    /// What the fix passes of a frame left unfinished: a frame header and part of its payload,
    /// of a frame outside a header block.
    tail: Vec<u8>,
    /// Each frame's type and payload length.
    frames: Vec<(u8, usize)>,
    /// Each header block's length as HPACK.
    blocks: Vec<usize>,
}

/// A header block being read: its HEADERS frame's stream, END_STREAM and priority, and its
/// fragments so far.
struct Open {
    stream: u32,
    end_stream: bool,
    priority: Option<Vec<u8>>,
    fragments: Vec<u8>,
}

/// Reads `bytes` (the preface first) as HTTP/2 frames with `decoder`; an error is a stream
/// the fix may refuse.
fn parse(bytes: &[u8], decoder: &mut Decoder) -> Result<Parsed, String> {
    let mut parsed = Parsed {
        items: Vec::new(),
        tail: Vec::new(),
        frames: Vec::new(),
        blocks: Vec::new(),
    };
    // The header block being read.
    let mut open: Option<Open> = None;
    let mut at = PREFACE.len();
    while bytes.len() - at >= HEAD_LEN {
        let h = &bytes[at..at + HEAD_LEN];
        let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
        let (kind, flags) = (h[3], h[4]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        if bytes.len() - at - HEAD_LEN < len {
            break;
        }
        let start = at;
        let payload = &bytes[at + HEAD_LEN..at + HEAD_LEN + len];
        at += HEAD_LEN + len;
        parsed.frames.push((kind, len));
        match (&mut open, kind) {
            (None, TYPE_HEADERS) => {
                let mut p = payload;
                let mut pad = 0;
                if flags & FLAG_PADDED != 0 {
                    let (&n, after) = p.split_first().ok_or("no pad length")?;
                    pad = usize::from(n);
                    p = after;
                }
                let mut priority = None;
                if flags & FLAG_PRIORITY != 0 {
                    let fields = p.get(..5).ok_or("too short for its priority")?;
                    priority = Some(fields.to_vec());
                    p = &p[5..];
                }
                let end = p.len().checked_sub(pad).ok_or("padding past the frame")?;
                open = Some(Open {
                    stream,
                    end_stream: flags & FLAG_END_STREAM != 0,
                    priority,
                    fragments: p[..end].to_vec(),
                });
            }
            (Some(block), TYPE_CONTINUATION) if block.stream == stream => {
                block.fragments.extend_from_slice(payload);
            }
            (Some(_), _) => return Err("a header block interrupted".into()),
            (None, TYPE_CONTINUATION) => return Err("a CONTINUATION of no block".into()),
            (None, _) => parsed.items.push(Item::Frame(bytes[start..at].to_vec())),
        }
        if matches!(kind, TYPE_HEADERS | TYPE_CONTINUATION) && flags & FLAG_END_HEADERS != 0 {
            let Some(block) = open.take() else {
                unreachable!("a header frame opens or continues a block");
            };
            let fields = decoder
                .decode(&block.fragments)
                .map_err(|err| format!("a header block does not decode: {err:?}"))?;
            parsed.blocks.push(block.fragments.len());
            parsed.items.push(Item::Headers {
                stream: block.stream,
                end_stream: block.end_stream,
                priority: block.priority,
                fields,
            });
        }
    }
    let rest = &bytes[at..];
    if open.is_none()
        && rest.len() >= HEAD_LEN
        && !matches!(rest[3], TYPE_HEADERS | TYPE_CONTINUATION)
    {
        parsed.tail = rest.to_vec();
    }
    Ok(parsed)
}

/// A header list's size as the fix counts it against [`MAX_HEADER_BLOCK`].
fn list_size(fields: &Fields) -> usize {
    fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum()
}

/// Holds what the server read (or the error it got) to what the client sent.
fn check(client: &[u8], result: io::Result<Vec<u8>>, built: bool) {
    let mut decoder = Decoder::new();
    decoder.set_max_allowed_table_size(TABLE_SIZE);
    let sent = client
        .starts_with(PREFACE)
        .then(|| parse(client, &mut decoder));
    if built {
        let sent = match &sent {
            Some(Ok(sent)) => sent,
            Some(Err(why)) => panic!("the recipe built a stream that does not read: {why}"),
            None => panic!("the recipe built a stream without the preface"),
        };
        for item in &sent.items {
            if let Item::Headers { fields, .. } = item {
                assert!(list_size(fields) <= MAX_HEADER_BLOCK, "the recipe's list");
            }
        }
    }
    let got = match result {
        Ok(got) => got,
        Err(err) => {
            assert!(!built, "a stream built well is refused: {err}");
            return;
        }
    };
    let Some(sent) = sent else {
        assert_eq!(got, client, "a stream that is not HTTP/2 is changed");
        return;
    };
    let mut sent = match sent {
        Ok(sent) => sent,
        Err(why) => panic!("a stream the fix passes does not read: {why}"),
    };
    for item in &mut sent.items {
        if let Item::Headers { fields, .. } = item {
            assert!(
                list_size(fields) <= MAX_HEADER_BLOCK,
                "a header list of {} bytes is passed",
                list_size(fields)
            );
            for (name, value) in fields {
                if name == b":authority" && http::uri::Authority::try_from(&value[..]).is_err() {
                    *value = REPLACEMENT.as_bytes().to_vec();
                }
            }
        }
    }
    assert!(got.starts_with(PREFACE), "the preface is lost");
    let seen = parse(&got, &mut Decoder::new())
        .unwrap_or_else(|why| panic!("what the server reads does not read: {why}"));
    assert_eq!(
        seen.items, sent.items,
        "the server reads other frames or fields"
    );
    assert_eq!(
        seen.tail, sent.tail,
        "an unfinished frame is passed otherwise"
    );
    for &(kind, len) in &seen.frames {
        if matches!(kind, TYPE_HEADERS | TYPE_CONTINUATION) {
            assert!(len <= MAX_FRAME, "a header frame of {len} bytes is written");
        }
    }
    for &len in &seen.blocks {
        assert!(
            len <= MAX_HEADER_BLOCK,
            "a header block of {len} bytes is written"
        );
    }
}

// --- The client: a recipe of frames and header blocks, with an HPACK encoder of its own.

/// Names in the static table (RFC 7541 appendix A) the recipe refers to.
const STATIC_NAMES: [(usize, &[u8]); 9] = [
    (1, b":authority"),
    (2, b":method"),
    (4, b":path"),
    (6, b":scheme"),
    (8, b":status"),
    (16, b"accept-encoding"),
    (28, b"content-length"),
    (31, b"content-type"),
    (58, b"user-agent"),
];
/// Static entries 1 to 61 are all valid references.
const STATIC_ENTRIES: usize = 61;
const NAMES: [&[u8]; 5] = [b":authority", b"te", b"x-secret", b"grpc-timeout", b":path"];
/// Values an `:authority` takes: paths a gRPC client sends for `unix:PATH`, URI authorities
/// h2 keeps, and neither.
const VALUES: [&[u8]; 10] = [
    b"/run/accelhost/node.sock",
    b"/tmp/x/node.sock",
    b"localhost",
    b"example.com:50051",
    b"[::1]:80",
    b"",
    b"a b",
    b"\xff\xfe",
    b"user@host:1",
    b"unix:/tmp/s",
];

/// Reads a recipe and writes the client's stream.
pub struct Client<'a> {
    recipe: &'a [u8],
    at: usize,
    /// The dynamic table: newest first, and its size and bound.
    table: Vec<(Vec<u8>, Vec<u8>)>,
    size: usize,
    max: usize,
    out: Vec<u8>,
}

impl<'a> Client<'a> {
    /// A client that follows `recipe`.
    pub fn new(recipe: &'a [u8]) -> Self {
        Client {
            recipe,
            at: 0,
            table: Vec::new(),
            size: 0,
            max: TABLE_SIZE,
            out: PREFACE.to_vec(),
        }
    }

    fn next(&mut self) -> u8 {
        let byte = self.recipe.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        byte
    }

    fn take(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next()).collect()
    }

    /// The client's stream: ops until the recipe ends.
    pub fn build(mut self) -> Vec<u8> {
        while self.at < self.recipe.len() && self.out.len() < MAX_CLIENT {
            match self.next() % 4 {
                0 | 1 => self.header_block(),
                2 => {
                    let (flags, stream, len) = (self.next(), self.stream(), self.next());
                    let payload = self.take(usize::from(len));
                    self.frame(TYPE_DATA, flags & FLAG_END_STREAM, stream, &payload);
                }
                _ => {
                    // SETTINGS, PRIORITY, RST_STREAM, PING, GOAWAY, WINDOW_UPDATE or an
                    // unknown type.
                    let kind = match self.next() % 8 {
                        0 => 0x4,
                        1 => 0x2,
                        2 => 0x3,
                        3 => 0x6,
                        4 => 0x7,
                        5 => 0x8,
                        _ => 0x0a + self.next() % 0xf0,
                    };
                    let (flags, stream, len) = (self.next(), self.stream(), self.next() % 32);
                    let payload = self.take(usize::from(len));
                    self.frame(kind, flags, stream, &payload);
                }
            }
        }
        self.out
    }

    fn stream(&mut self) -> u32 {
        u32::from(self.next()) * 2 + 1
    }

    fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let len = u32::try_from(payload.len())
            .expect("a small frame")
            .to_be_bytes();
        self.out.extend_from_slice(&len[1..]);
        self.out.push(kind);
        self.out.push(flags);
        self.out.extend_from_slice(&stream.to_be_bytes());
        self.out.extend_from_slice(payload);
    }

    /// A header block of up to 23 fields, over HEADERS and up to three CONTINUATIONs.
    fn header_block(&mut self) {
        let (flags, stream) = (self.next(), self.stream());
        let mut block = Vec::new();
        let fields = self.next() % 24;
        for i in 0..fields {
            // A size update only starts a block (and loona's decoder refuses one that ends it).
            self.field(&mut block, i == 0 && fields > 1);
        }
        // HEADERS: [pad length] [priority] fragment [padding].
        let pieces = 1 + usize::from(self.next() % 4);
        let mut cuts: Vec<usize> = (1..pieces)
            .map(|_| usize::from(self.next()) * block.len() / 256)
            .collect();
        cuts.sort_unstable();
        cuts.insert(0, 0);
        cuts.push(block.len());
        let mut headers_flags = flags & (FLAG_END_STREAM | FLAG_PADDED | FLAG_PRIORITY);
        if pieces == 1 {
            headers_flags |= FLAG_END_HEADERS;
        }
        let mut payload = Vec::new();
        let pad = if flags & FLAG_PADDED != 0 {
            let pad = self.next() % 8;
            payload.push(pad);
            usize::from(pad)
        } else {
            0
        };
        if flags & FLAG_PRIORITY != 0 {
            payload.extend(self.take(5));
        }
        payload.extend_from_slice(&block[cuts[0]..cuts[1]]);
        payload.resize(payload.len() + pad, 0);
        self.frame(TYPE_HEADERS, headers_flags, stream, &payload);
        for piece in 1..pieces {
            let flags = if piece + 1 == pieces {
                FLAG_END_HEADERS
            } else {
                0
            };
            let fragment = block[cuts[piece]..cuts[piece + 1]].to_vec();
            self.frame(TYPE_CONTINUATION, flags, stream, &fragment);
        }
    }

    /// One field (or, `first` in a block, perhaps a table size update).
    fn field(&mut self, block: &mut Vec<u8>, first: bool) {
        let how = self.next();
        // Huffman-coded strings one time in four: loona's decoder is slow on them.
        let huffman = how & 0xc0 == 0xc0;
        match how % 8 {
            0 if first => {
                self.max = (usize::from(self.next()) * 17).min(TABLE_SIZE);
                self.evict();
                put_integer(block, 0x20, 5, self.max);
            }
            0 | 1 => {
                let index = 1 + usize::from(self.next()) % STATIC_ENTRIES;
                put_integer(block, 0x80, 7, index);
            }
            2 if !self.table.is_empty() => {
                let index = usize::from(self.next()) % self.table.len();
                put_integer(block, 0x80, 7, STATIC_ENTRIES + 1 + index);
            }
            how => {
                // A literal: with incremental indexing, without indexing, never indexed.
                let (first, prefix) = match how % 3 {
                    0 => (0x40, 6),
                    1 => (0x00, 4),
                    _ => (0x10, 4),
                };
                let (index, name) = self.name();
                let value = self.value();
                put_integer(block, first, prefix, index);
                if index == 0 {
                    put_string(block, &name, huffman);
                }
                put_string(block, &value, huffman);
                if first == 0x40 {
                    self.add(name, value);
                }
            }
        }
    }

    /// A literal's name: its index in a table (0 for a literal one) and the name.
    fn name(&mut self) -> (usize, Vec<u8>) {
        match self.next() % 4 {
            0 => {
                let (index, name) = STATIC_NAMES[usize::from(self.next()) % STATIC_NAMES.len()];
                (index, name.to_vec())
            }
            1 if !self.table.is_empty() => {
                let index = usize::from(self.next()) % self.table.len();
                (STATIC_ENTRIES + 1 + index, self.table[index].0.clone())
            }
            2 => {
                let len = usize::from(self.next() % 16);
                (0, self.take(len))
            }
            _ => (0, NAMES[usize::from(self.next()) % NAMES.len()].to_vec()),
        }
    }

    fn value(&mut self) -> Vec<u8> {
        match self.next() % 16 {
            0..=7 => VALUES[usize::from(self.next()) % VALUES.len()].to_vec(),
            8..=14 => {
                let len = usize::from(self.next() % 64);
                self.take(len)
            }
            // One time in sixteen a long value, up to 4080 bytes: tables evict, blocks grow.
            _ => vec![self.next(); usize::from(self.next()) * 16],
        }
    }

    fn add(&mut self, name: Vec<u8>, value: Vec<u8>) {
        self.size += name.len() + value.len() + 32;
        self.table.insert(0, (name, value));
        self.evict();
    }

    fn evict(&mut self) {
        while self.size > self.max {
            let (name, value) = self.table.pop().expect("a table over its size has entries");
            self.size -= name.len() + value.len() + 32;
        }
    }
}

/// An HPACK integer with a `prefix`-bit prefix after `first`'s high bits.
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

/// An HPACK string, Huffman-coded or plain.
fn put_string(out: &mut Vec<u8>, s: &[u8], huffman: bool) {
    if !huffman {
        put_integer(out, 0, 7, s.len());
        out.extend_from_slice(s);
        return;
    }
    let codes = codes();
    let (mut coded, mut bits, mut held) = (Vec::new(), 0u64, 0u32);
    for &c in s {
        let (code, len) = codes[usize::from(c)];
        bits = bits << len | u64::from(code);
        held += len;
        while held >= 8 {
            held -= 8;
            coded.push((bits >> held) as u8);
        }
    }
    if held > 0 {
        // Padded with the most significant bits of EOS: ones.
        coded.push((bits << (8 - held)) as u8 | (0xff >> held));
    }
    put_integer(out, 0x80, 7, coded.len());
    out.extend_from_slice(&coded);
}

/// The length of each symbol's code in HPACK's Huffman code (RFC 7541 appendix B; symbol
/// 256 is EOS).
#[rustfmt::skip]
const HUFFMAN_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    30,
];

/// Each symbol's code and its length: the code is canonical, so codes are handed out in
/// order of length, then of symbol.
fn codes() -> &'static [(u32, u32); 257] {
    static CODES: OnceLock<[(u32, u32); 257]> = OnceLock::new();
    CODES.get_or_init(|| {
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (HUFFMAN_LENGTHS[s], s));
        let mut codes = [(0, 0); 257];
        let (mut code, mut len) = (0u32, u32::from(HUFFMAN_LENGTHS[order[0]]));
        for (i, &symbol) in order.iter().enumerate() {
            let this = u32::from(HUFFMAN_LENGTHS[symbol]);
            if i > 0 {
                code = (code + 1) << (this - len);
            }
            len = this;
            codes[symbol] = (code, len);
        }
        codes
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Huffman code is HPACK's: loona-hpack's decoder reads it back, and a few codes are
    /// RFC 7541's.
    #[test]
    fn huffman_codes_are_hpacks() {
        assert_eq!(codes()[usize::from(b'0')], (0x0, 5));
        assert_eq!(codes()[usize::from(b'a')], (0x3, 5));
        assert_eq!(codes()[256], (0x3fff_ffff, 30));
        let s: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        put_string(&mut out, &s, true);
        assert_eq!(out[0], 0xff, "Huffman-coded, a length past the prefix");
        assert!(
            out[1] & 0x80 != 0 && out[2] & 0x80 == 0,
            "a two-octet length"
        );
        let (len, used) = (
            127 + usize::from(out[1] & 0x7f) + (usize::from(out[2]) << 7),
            3,
        );
        assert_eq!(out.len(), used + len);
        let back = loona_hpack::huffman::HuffmanDecoder::new()
            .decode(&out[used..])
            .unwrap();
        assert_eq!(back, s);
    }
}
