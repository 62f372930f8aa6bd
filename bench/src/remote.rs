//! The node service's rows of `accelhost bench`, each against a gRPC baseline of the same
//! run: the same stack and Unix-socket transport doing no work (`Baseline`), and one serving
//! process against one per core.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::measure::{Settings, median};
use accelhost::{Config, Host};

use crate::figure::{Figure, Target};
use crate::tls::BenchPki;
use accelhost_node::proto::baseline_client::BaselineClient;
use accelhost_node::proto::baseline_server::BaselineServer;
use accelhost_node::proto::{Data, Empty, SourceRequest};
use accelhost_node::{BoundNode, Client, ClientOptions, Endpoint, ServeConfig, baseline};
use anyhow::Context;
use tokio::net::UnixListener;
use tokio::sync::oneshot;
use tokio_stream::wrappers::UnixListenerStream;

/// A node serving the embedded default to this user on `socket`, and with `tls` also on a
/// loopback TCP port to the client certificate [`BenchPki`] made.
fn serve_config(dir: &Path, socket: &Path, tls: Option<&BenchPki>) -> String {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let host_config = dir.join("host.json");
    let _ = std::fs::write(&host_config, accelhost::builtin::embedded_default_text());
    let grants = serde_json::json!({"devices": ["*"], "dma_memory_mib": 2048, "reconfigure": true});
    let mut config = serde_json::json!({
        "host_config": host_config,
        "listen": {"unix": {"path": socket, "mode": "0600"}},
        "limits": {"max_message_kib": 4096},
        "clients": [{"name": "bench", "unix_uid": uid, "grants": grants}]
    });
    if let Some(pki) = tls {
        config["listen"]["tcp"] = serde_json::json!({
            "address": "127.0.0.1:0",
            "certificate": pki.file("node.pem"),
            "key": pki.file("node.key"),
            "client_ca": pki.file("client-ca.pem"),
        });
        config["clients"]
            .as_array_mut()
            .expect("a list")
            .push(serde_json::json!({
                "name": "bench-tls", "certificate_san": BenchPki::CLIENT, "grants": grants
            }));
    }
    config.to_string()
}

fn ms(seconds: f64) -> String {
    format!("{:.2} ms", seconds * 1e3)
}

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1e3)
}

/// Measures the node: MMIO read latency and a 64 MiB round trip against the baseline
/// service, and enumerate across one `accelhost serve` process per core against one.
pub fn figures(settings: &Settings, cache: &Path) -> anyhow::Result<Vec<Figure>> {
    let dir = cache.join("node");
    std::fs::create_dir_all(&dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut figures = runtime.block_on(in_process(settings, cache, &dir))?;
    figures.push(runtime.block_on(one_per_core(settings, cache, &dir))?);
    Ok(figures)
}

async fn in_process(settings: &Settings, cache: &Path, dir: &Path) -> anyhow::Result<Vec<Figure>> {
    let socket = dir.join("node.sock");
    let config_path = dir.join("serve.json");
    let pki = BenchPki::make(&dir.join("pki"))?;
    std::fs::write(&config_path, serve_config(dir, &socket, Some(&pki)))?;
    let serve = Arc::new(ServeConfig::load(&config_path)?);
    let host = Arc::new(
        Host::builder()
            .config(Config::embedded_default())
            .cache_dir(cache)
            .shareable_memory(true)
            .build()?,
    );
    let node = BoundNode::bind(serve, host).await?;
    let tls_address = node
        .tcp_address()
        .context("the bench node listens on TCP")?;
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(node.run(async {
        let _ = stopped.await;
    }));
    let baseline_socket = dir.join("baseline.sock");
    let _ = std::fs::remove_file(&baseline_socket);
    let listener = UnixListener::bind(&baseline_socket)?;
    let (stop_baseline, baseline_stopped) = oneshot::channel::<()>();
    let baseline_served = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(
                BaselineServer::new(baseline::BaselineService)
                    .max_decoding_message_size(4 << 20)
                    .max_encoding_message_size(4 << 20),
            )
            .serve_with_incoming_shutdown(UnixListenerStream::new(listener), async {
                let _ = baseline_stopped.await;
            }),
    );

    let client = Client::connect(&Endpoint::Unix(socket.clone()), ClientOptions::default())
        .await
        .context("connecting to the bench node")?;
    let channel = accelhost_node::client::channel(
        &Endpoint::Unix(baseline_socket.clone()),
        ClientOptions::default(),
    )
    .await?;
    let mut floor = BaselineClient::new(channel)
        .max_decoding_message_size(8 << 20)
        .max_encoding_message_size(8 << 20);

    client.enumerate(vec![]).await?;
    // Shared, so that the proxy row can open the same port.
    let handle = client.open("dfl/emu:dfl0", true).await?;
    let (region, _) = client.map_mmio(handle, 0).await?;
    let calls = settings.samples * 200;
    let (mut reads, mut noops) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for _ in 0..calls {
        let started = Instant::now();
        client.read64(region, 0x10).await?;
        reads.push(started.elapsed().as_nanos() as f64);
        let started = Instant::now();
        floor.noop(Empty {}).await?;
        noops.push(started.elapsed().as_nanos() as f64);
    }
    let (read_p50, noop_p50) = (median(&mut reads), median(&mut noops));
    let mut figures = vec![Figure {
        what: "remote MMIO read p50 (Unix socket)",
        measured: us(read_p50),
        baseline: format!("gRPC no-op {}", us(noop_p50)),
        ratio: read_p50 / noop_p50,
        target: "≤ 1.5× a gRPC no-op",
        bound: Some(Target::AtMost(1.5)),
    }];

    // A doorbell sequence of 64 register writes is one call.
    let writes: Vec<(u64, u64)> = (0..64).map(|i| (0x100 + 8 * (i % 8), i)).collect();
    let mut batches = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        client.write64_batch(region, &writes).await?;
        batches.push(started.elapsed().as_nanos() as f64);
    }
    let batch_p50 = median(&mut batches);
    figures.push(Figure {
        what: "remote MMIO write batch of 64, p50 (Unix socket)",
        measured: us(batch_p50),
        baseline: format!("one remote read {}", us(read_p50)),
        ratio: batch_p50 / read_p50,
        target: "≤ 2× one remote read",
        bound: Some(Target::AtMost(2.0)),
    });

    figures.push(proxy_read(socket.clone(), cache.to_path_buf(), calls, read_p50).await?);

    figures.push(round_trip(settings, &client, handle, &mut floor).await?);

    drop(client);
    let (pod_settings, pod_cache) = (*settings, cache.to_path_buf());
    figures.extend(
        tokio::task::spawn_blocking(move || {
            crate::pod::figures(&pod_settings, &pod_cache, socket, (pki, tls_address))
        })
        .await??,
    );
    let _ = stop.send(());
    let _ = stop_baseline.send(());
    served.await??;
    baseline_served.await??;
    Ok(figures)
}

/// A 64 MiB buffer written and read back through the node, against the same bytes streamed
/// through the baseline service.
async fn round_trip(
    settings: &Settings,
    client: &Client,
    handle: u64,
    floor: &mut BaselineClient<tonic::transport::Channel>,
) -> anyhow::Result<Figure> {
    let bytes: u64 = 64 << 20;
    // The node client's chunks: writes as large as a message allows, reads of 1 MiB.
    let (write_chunk, read_chunk) = ((4 << 20) - 256, 1 << 20);
    let buffer = client.prepare_buffer(handle, bytes).await?;
    let data = vec![0x5au8; bytes as usize];
    let (mut node_s, mut floor_s) = (Vec::new(), Vec::new());
    for _ in 0..settings.workload_samples {
        let started = Instant::now();
        client.write(buffer.buffer, 0, &data).await?;
        let back = client.read(buffer.buffer, 0, bytes).await?;
        node_s.push(started.elapsed().as_secs_f64());
        anyhow::ensure!(back == data, "the 64 MiB round trip came back different");

        let started = Instant::now();
        // Copied once and sliced, as the node's client does.
        let all = bytes::Bytes::copy_from_slice(&data);
        let step = write_chunk;
        let pieces: Vec<Data> = (0..data.len())
            .step_by(step)
            .map(|at| Data {
                data: all.slice(at..(at + step).min(data.len())),
            })
            .collect();
        floor.sink(tokio_stream::iter(pieces)).await?;
        let mut source = floor
            .source(SourceRequest {
                length: bytes,
                chunk_bytes: read_chunk,
            })
            .await?
            .into_inner();
        // Collected, as the node's client collects what it reads.
        let mut received = Vec::with_capacity(bytes as usize);
        while let Some(piece) = source.message().await? {
            received.extend_from_slice(&piece.data);
        }
        anyhow::ensure!(
            received.len() as u64 == bytes,
            "the baseline stream came back short"
        );
        floor_s.push(started.elapsed().as_secs_f64());
    }
    let (node_s, floor_s) = (median(&mut node_s), median(&mut floor_s));
    let gbps = |s: f64| 2.0 * bytes as f64 / s / 1e9;
    Ok(Figure {
        what: "remote 64 MiB buffer write + read",
        measured: format!("{:.2} GB/s ({})", gbps(node_s), ms(node_s)),
        baseline: format!("gRPC stream {:.2} GB/s", gbps(floor_s)),
        ratio: node_s / floor_s,
        // The ratio is of times, as in every guard comparison of this row before.
        target: "≤ 1.25× a gRPC stream's time (≥ 80 % of its rate)",
        // At least 80 % of the stream's rate: at most 1 / 0.8 of its time.
        bound: Some(Target::AtMost(1.0 / 0.8)),
    })
}

/// `accelhost serve` in a process of its own, until dropped.
struct ServeProcess {
    child: Child,
    endpoint: Endpoint,
}

impl ServeProcess {
    fn start(cache: &Path, dir: &Path, index: usize) -> anyhow::Result<ServeProcess> {
        let dir = dir.join(format!("serve-{index}"));
        std::fs::create_dir_all(&dir)?;
        let socket = dir.join("node.sock");
        std::fs::write(dir.join("serve.json"), serve_config(&dir, &socket, None))?;
        let child = Command::new(std::env::current_exe()?)
            .args(["serve", "serve.json"])
            .current_dir(&dir)
            .env("ACCELHOST_CACHE_DIR", cache)
            .env("ACCELHOST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting accelhost serve")?;
        Ok(ServeProcess {
            child,
            endpoint: Endpoint::Unix(socket),
        })
    }

    async fn connect(&self) -> anyhow::Result<Client> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            match Client::connect(&self.endpoint, ClientOptions::default()).await {
                Ok(client) => return Ok(client),
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(err) => return Err(err.into()),
            }
        }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The same MMIO read as the client's, through a host whose only plugin is `builtin:remote`
/// (the `remote` import, the proxy's wasm and the host's checks on top of the client's call).
async fn proxy_read(
    socket: std::path::PathBuf,
    cache: std::path::PathBuf,
    calls: usize,
    client_p50: f64,
) -> anyhow::Result<Figure> {
    let proxy_p50 = tokio::task::spawn_blocking(move || -> anyhow::Result<f64> {
        let endpoint = format!("unix://{}", socket.display());
        let host = Host::builder()
            .config(Config::for_endpoint(&endpoint)?)
            .cache_dir(cache)
            .remote(Arc::new(accelhost_node::NodeConnector::new()))
            .build()?;
        let token = host
            .enumerate(&[])
            .tokens
            .into_iter()
            .find(|t| t.properties().name.ends_with("dfl/emu:dfl0"))
            .context("the node's NLB0 port through builtin:remote")?;
        let handle = host.open(&token, accelhost::OpenMode::Shared)?;
        let mmio = handle.map_mmio(0)?;
        let mut reads = Vec::with_capacity(calls);
        for _ in 0..calls {
            let started = Instant::now();
            mmio.read64(0x10)?;
            reads.push(started.elapsed().as_nanos() as f64);
        }
        drop(mmio);
        handle.close()?;
        Ok(median(&mut reads))
    })
    .await??;
    Ok(Figure {
        what: "MMIO read through builtin:remote p50",
        measured: us(proxy_p50),
        baseline: format!("node client {}", us(client_p50)),
        ratio: proxy_p50 / client_p50,
        target: "none: what the proxy adds",
        bound: None,
    })
}

async fn enumerate_all(clients: &[Arc<Client>]) -> anyhow::Result<f64> {
    let started = Instant::now();
    let asked: Vec<_> = clients
        .iter()
        .map(|client| {
            let client = client.clone();
            tokio::spawn(async move { client.enumerate(vec![]).await })
        })
        .collect();
    for answer in asked {
        anyhow::ensure!(answer.await??.len() == 5, "a node lost devices");
    }
    Ok(started.elapsed().as_secs_f64())
}

async fn one_per_core(settings: &Settings, cache: &Path, dir: &Path) -> anyhow::Result<Figure> {
    // The first fills the compile cache; the others start from it.
    let first = ServeProcess::start(cache, dir, 0)?;
    let mut clients = vec![Arc::new(first.connect().await?)];
    let mut nodes = vec![first];
    // No more than the cores: more would measure the core count, not the node.
    let processes = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    for index in 1..processes {
        nodes.push(ServeProcess::start(cache, dir, index)?);
    }
    for node in &nodes[1..] {
        clients.push(Arc::new(node.connect().await?));
    }
    let samples = settings.samples * 4;
    let (mut one, mut all) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        one.push(enumerate_all(&clients[..1]).await?);
        all.push(enumerate_all(&clients).await?);
    }
    let (one, all) = (median(&mut one), median(&mut all));
    drop(clients);
    drop(nodes);
    Ok(Figure {
        what: "enumerate across one serving process per core",
        measured: format!("{} ({processes} processes)", ms(all)),
        baseline: format!("1 process {}", ms(one)),
        ratio: all / one,
        target: "≤ 2× one",
        bound: Some(Target::AtMost(2.0)),
    })
}
