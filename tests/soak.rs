//! The node under load for a while: 64 honest clients on the Unix socket, each moving data
//! through offload memory and checking every byte; one hostile client over mutual TLS that
//! floods connections, sessions, memory and streams (each past its cap); and a plugin that faults on every
//! enumeration and is restarted. Every honest call must succeed and verify, and the process
//! (node and clients) must hold no more descriptors or memory at the end than after warm-up,
//! beyond a small margin. It runs in a process of its own (the suite's
//! `a_node_under_load_loses_no_call_and_holds_steady`), whose memory and descriptors are its
//! node's and clients' alone.
//!
//! The test suite runs it for 20 s. For the figures in BENCHMARKS.md, run it for ten minutes:
//!
//! ```sh
//! ACCELHOST_SOAK_SECONDS=600 cargo test --release -p accelhost-node --test node a_node_under_load -- --nocapture
//! ```

use crate::remote;
use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use accelhost::ErrorCode;
use accelhost_node::proto::MemoryKind;
use accelhost_node::{Client, ClientOptions, Endpoint};
use remote::{Pki, start_with_host, uid};

const HONEST_CLIENTS: usize = 64;
/// Bytes each honest round trip writes and reads back.
const ROUND_TRIP: usize = 64 << 10;

/// How long the soak runs: `ACCELHOST_SOAK_SECONDS`, else 20 s.
pub fn soak_time() -> Duration {
    let seconds = std::env::var("ACCELHOST_SOAK_SECONDS")
        .ok()
        .map(|text| text.parse().expect("ACCELHOST_SOAK_SECONDS is a number"))
        .unwrap_or(20);
    Duration::from_secs(seconds)
}

/// This process's resident memory (KiB) and open descriptors.
fn rss_and_fds() -> (u64, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let fds = std::fs::read_dir("/proc/self/fd").unwrap().count();
    (rss, fds)
}

/// Bytes the process's heap holds in blocks in use (glibc's count; resident memory also
/// holds what the heap keeps free and the plugins' linear memories).
fn heap_in_use() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as u64
}

/// Call latencies in buckets 1 % wide (from 1 µs to minutes): a fixed size however long the
/// run, so the measuring does not grow the memory it watches.
#[derive(Clone)]
struct Latencies {
    buckets: Vec<u64>,
    calls: u64,
    max: Duration,
}

const BUCKETS: usize = 2000;

impl Latencies {
    fn new() -> Self {
        Latencies {
            buckets: vec![0; BUCKETS],
            calls: 0,
            max: Duration::ZERO,
        }
    }

    fn record(&mut self, took: Duration) {
        let micros = took.as_secs_f64() * 1e6;
        let bucket = (micros.max(1.0).ln() / 1.01f64.ln()) as usize;
        self.buckets[bucket.min(BUCKETS - 1)] += 1;
        self.calls += 1;
        self.max = self.max.max(took);
    }

    fn merge(&mut self, other: &Latencies) {
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            *mine += theirs;
        }
        self.calls += other.calls;
        self.max = self.max.max(other.max);
    }

    /// The latency below which a fraction `p` of the calls took (within 1 %).
    fn percentile(&self, p: f64) -> Duration {
        let rank = (self.calls as f64 * p).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bucket, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Duration::from_secs_f64(1.01f64.powi(bucket as i32 + 1) / 1e6);
            }
        }
        self.max
    }
}

/// One honest client: rounds of enumerate, open, allocate, write, read back, compare,
/// release, close, until `stop`; returns its calls' latencies.
async fn honest(endpoint: Endpoint, index: usize, stop: Arc<AtomicBool>) -> Latencies {
    let client = Client::connect(&endpoint, ClientOptions::default())
        .await
        .unwrap_or_else(|err| panic!("honest client {index}: {err}"));
    let mut latencies = Latencies::new();
    let mut timed = Instant::now();
    let mut lap = |latencies: &mut Latencies| {
        let now = Instant::now();
        latencies.record(now - timed);
        timed = now;
    };
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let context = |call: &str| format!("honest client {index}, round {round}: {call}");
        // The pattern is made between rounds, outside the laps.
        let pattern: Vec<u8> = (0..ROUND_TRIP)
            .map(|i| (i as u64 ^ round.wrapping_mul(0x9E37) ^ index as u64) as u8)
            .collect();
        lap(&mut Latencies::new());
        let devices = client
            .enumerate(vec![])
            .await
            .unwrap_or_else(|err| panic!("{}: {err}", context("Enumerate")));
        lap(&mut latencies);
        assert!(
            devices.iter().any(|d| d.id == "xocl/emu:xocl0"),
            "{}",
            context("the card is missing")
        );
        let handle = client
            .open("xocl/emu:xocl0", true)
            .await
            .unwrap_or_else(|err| panic!("{}: {err}", context("Open")));
        lap(&mut latencies);
        let memory = client
            .alloc(handle, MemoryKind::Host, ROUND_TRIP as u64, None)
            .await
            .unwrap_or_else(|err| panic!("{}: {err}", context("Alloc")));
        lap(&mut latencies);
        client
            .write(memory.memory, 0, &pattern)
            .await
            .unwrap_or_else(|err| panic!("{}: {err}", context("BufferWrite")));
        lap(&mut latencies);
        let back = client
            .read(memory.memory, 0, ROUND_TRIP as u64)
            .await
            .unwrap_or_else(|err| panic!("{}: {err}", context("BufferRead")));
        lap(&mut latencies);
        assert!(back == pattern, "{}", context("the bytes read back differ"));
        client
            .release(memory.memory)
            .await
            .unwrap_or_else(|err| panic!("{}: {err}", context("Release")));
        lap(&mut latencies);
        client
            .close(handle)
            .await
            .unwrap_or_else(|err| panic!("{}: {err}", context("Close")));
        lap(&mut latencies);
        round += 1;
    }
    latencies
}

/// What the hostile client saw refused.
#[derive(Default)]
struct Refused {
    connections: AtomicU64,
    sessions: AtomicU64,
    memory: AtomicU64,
}

/// The hostile client: until `stop`, keeps 200 silent TCP connections open from another
/// loopback address, attaches sessions past its cap, allocates past its grant, and opens
/// answer streams it never reads.
async fn hostile(
    pki: Arc<Pki>,
    address: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    refused: Arc<Refused>,
) {
    let endpoint = pki.endpoint(address, "stranger");
    let flood = {
        let stop = stop.clone();
        let refused = refused.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let mut held = Vec::new();
                for _ in 0..200 {
                    let socket = tokio::net::TcpSocket::new_v4().unwrap();
                    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
                    if let Ok(stream) = socket.connect(address).await {
                        held.push(stream);
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
                for stream in &held {
                    let mut byte = [0u8; 1];
                    if matches!(stream.try_read(&mut byte), Ok(0)) {
                        refused.connections.fetch_add(1, Ordering::Relaxed);
                    }
                }
                drop(held);
            }
        })
    };
    while !stop.load(Ordering::Relaxed) {
        let mut sessions = Vec::new();
        for _ in 0..80 {
            match Client::connect(&endpoint, ClientOptions::default()).await {
                Ok(client) => sessions.push(client),
                Err(err) => {
                    assert_eq!(err.code, Some(ErrorCode::NoSpace), "{err}");
                    refused.sessions.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let Some(client) = sessions.first() else {
            continue;
        };
        if client.enumerate(vec![]).await.is_ok()
            && let Ok(handle) = client.open("xocl/emu:xocl0", true).await
        {
            let mut memories = Vec::new();
            loop {
                match client.alloc(handle, MemoryKind::Host, 8 << 20, None).await {
                    Ok(memory) => memories.push(memory.memory),
                    Err(err) => {
                        assert_eq!(err.code, Some(ErrorCode::OutOfMemory), "{err}");
                        refused.memory.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                }
            }
            // Answer streams it never reads, as many as the session may open and more (the
            // ones past the cap are refused).
            let mut unread = Vec::new();
            for memory in memories.iter().cycle().take(12) {
                if let Ok(stream) = client
                    .rpc()
                    .buffer_read(accelhost_node::proto::BufferReadRequest {
                        session: client.session().into(),
                        object: *memory,
                        offset: 0,
                        length: 8 << 20,
                        chunk_bytes: 0,
                    })
                    .await
                {
                    unread.push(stream);
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            drop(unread);
        }
        drop(sessions);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    flood.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a helper: a_node_under_load_loses_no_call_and_holds_steady runs it in a process of its own"]
async fn sixty_four_clients_a_hostile_one_and_a_faulting_plugin() {
    let soak = soak_time();
    let pki = Arc::new(Pki::new());
    let faulting = support::chaos_plugin_with(
        "faulting",
        r#"{"trap_in": "enumerate"}"#,
        &[],
        r#""on_fault": "restart", "max_restarts": 1000, "restart_backoff_ms": 10"#,
    );
    let mut host_config: serde_json::Value =
        serde_json::from_str(accelhost::builtin::embedded_default_text()).unwrap();
    host_config["plugins"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::from_str(&faulting).unwrap());
    let host = tokio::task::spawn_blocking(move || support::host(&host_config.to_string()))
        .await
        .unwrap()
        .unwrap();
    let config = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@", "mode": "0600"}},
                        "tcp": {{"address": "127.0.0.1:0", "certificate": "node.pem",
                                "key": "node.key", "client_ca": "client-ca.pem"}}}},
            "limits": {{"max_connections_per_peer": 80, "max_sessions": 160,
                       "max_sessions_per_client": 64}},
            "clients": [{{"name": "honest", "unix_uid": {}, "grants": {{"devices": ["*"],
                                                                      "dma_memory_mib": 1024}}}},
                        {{"name": "hostile", "certificate_san": "client9.test",
                         "grants": {{"devices": ["*"], "dma_memory_mib": 64}}}}]}}"#,
        uid()
    );
    let node = start_with_host(pki.dir.clone(), &config, Arc::new(host)).await;
    let address = node.tcp.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (_, fds_idle) = rss_and_fds();

    let refused = Arc::new(Refused::default());
    let attacker = tokio::spawn(hostile(pki.clone(), address, stop.clone(), refused.clone()));
    let mut honest_clients = tokio::task::JoinSet::new();
    for index in 0..HONEST_CLIENTS {
        honest_clients.spawn(honest(node.unix(), index, stop.clone()));
    }
    // Warm-up: every client connected and through a few rounds, caches filled.
    tokio::time::sleep(soak.min(Duration::from_secs(10)) / 2).await;
    let (rss_before, fds_before) = rss_and_fds();
    // Resident memory at each tenth of the run: a leak climbs to the end, a heap settling
    // into its working size levels off.
    let mut rss_series = vec![rss_before];
    let mut heap_series = vec![heap_in_use() >> 10];
    for _ in 0..10 {
        tokio::time::sleep(soak / 10).await;
        rss_series.push(rss_and_fds().0);
        heap_series.push(heap_in_use() >> 10);
    }
    let (rss_during, fds_during) = rss_and_fds();
    stop.store(true, Ordering::Relaxed);

    let mut latencies = Latencies::new();
    while let Some(client) = honest_clients.join_next().await {
        latencies.merge(&client.expect("an honest client's call failed or did not verify"));
    }
    attacker
        .await
        .expect("the hostile client's refusals were the expected ones");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !node.sessions.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(node.sessions.is_empty(), "sessions outlived their clients");
    // Connections close a moment after their sessions end.
    let mut fds_after = rss_and_fds().1;
    while fds_after > fds_idle + 16 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        fds_after = rss_and_fds().1;
    }
    let calls = latencies.calls as usize;
    let (p50, p99) = (latencies.percentile(0.50), latencies.percentile(0.99));
    eprintln!(
        "soak: {} s, {HONEST_CLIENTS} honest clients, {calls} verified calls \
         ({:.0}/s), p50 {p50:?}, p99 {p99:?}, max {:?}; process RSS {} → {} MiB, \
         descriptors {fds_before} → {fds_during} ({fds_idle} → {fds_after} without clients); hostile refusals: {} connections, \
         {} sessions, {} allocations; by tenths of the run, RSS {:?} MiB, heap in use {:?} MiB",
        soak.as_secs(),
        calls as f64 / soak.as_secs_f64(),
        latencies.max,
        rss_before / 1024,
        rss_during / 1024,
        refused.connections.load(Ordering::Relaxed),
        refused.sessions.load(Ordering::Relaxed),
        refused.memory.load(Ordering::Relaxed),
        rss_series.iter().map(|kib| kib / 1024).collect::<Vec<_>>(),
        heap_series.iter().map(|kib| kib / 1024).collect::<Vec<_>>(),
    );
    assert!(
        calls >= HONEST_CLIENTS * 7,
        "every honest client got through at least one round"
    );
    assert!(
        refused.sessions.load(Ordering::Relaxed) > 0 && refused.memory.load(Ordering::Relaxed) > 0,
        "the hostile client ran into its caps"
    );
    // Every connection, session and object of the run is gone again; memory does not creep.
    assert!(
        fds_after <= fds_idle + 16,
        "descriptors: {fds_idle} before the clients came, {fds_after} after they left"
    );
    // The hostile client's memory comes and goes (tens of MiB at a time); what a leak does is
    // raise the floor.
    let floor = |samples: &[u64]| *samples.iter().min().unwrap();
    assert!(
        floor(&heap_series[6..]) <= floor(&heap_series[1..=5]) + 32 * 1024,
        "the floor of the heap in use rose through the run: {heap_series:?} KiB"
    );
    assert!(
        floor(&rss_series[6..]) <= floor(&rss_series[1..=5]) + 64 * 1024,
        "the floor of resident memory rose through the run: {rss_series:?} KiB"
    );
    node.stop().await;
}
