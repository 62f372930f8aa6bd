//! The node service end to end on loopback: a node over the embedded default's plugins,
//! clients on its Unix socket and over mutual TLS, with test certificates made here.

use crate::remote;
use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use accelhost::ErrorCode;
use accelhost::families::dfl::abi::nlb0;
use accelhost_node::proto::Filter;
use accelhost_node::session::Sessions;
use accelhost_node::{BoundNode, Client, ClientOptions, Endpoint, RemoteError, ServeConfig};
use remote::{Pki, RunningNode, hello_fpga, start_in, uid};
use support::{default_host, json_path, scratch_dir};
use tokio::sync::oneshot;

/// A node on a Unix socket serving this process's uid with `grants`.
async fn start_unix(grants: &str) -> RunningNode {
    let config = format!(
        r#"{{"node_name": "node-under-test",
            "listen": {{"unix": {{"path": "@SOCKET@", "mode": "0600"}}}},
            "limits": {{"max_message_kib": 256}},
            "clients": [{{"name": "tester", "unix_uid": {}, "grants": {grants}}}]}}"#,
        uid()
    );
    start_in(scratch_dir("node"), &config).await
}

async fn connect(endpoint: &Endpoint) -> Client {
    Client::connect(endpoint, ClientOptions::default())
        .await
        .unwrap_or_else(|err| panic!("connecting to {endpoint}: {err}"))
}

fn dfl_filter() -> Vec<Filter> {
    vec![Filter {
        guid: Some(nlb0::AFU_ID.to_string()),
        ..Filter::default()
    }]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_fpga_runs_byte_exact_over_the_unix_socket() {
    let node = start_unix(r#"{"devices": ["dfl/*"]}"#).await;
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&node.socket)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the socket has the configured mode");
    let leftovers: Vec<_> = std::fs::read_dir(&node.dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("staging"))
        .collect();
    assert!(leftovers.is_empty(), "the staging folder is gone");
    let client = connect(&node.unix()).await;
    assert_eq!(client.client_name(), "tester");
    assert_eq!(client.node_name(), "node-under-test");
    let devices = client.enumerate(vec![]).await.unwrap();
    let ids: Vec<&str> = devices.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["dfl/emu:dfl0"], "only the granted device is seen");
    assert_eq!(client.enumerate(dfl_filter()).await.unwrap().len(), 1);
    assert_eq!(devices[0].guid, nlb0::AFU_ID.to_string());
    // 3 MiB: several chunks each way at the 256 KiB message limit.
    hello_fpga(&client, "dfl/emu:dfl0", 3 << 20).await;
    drop(client);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_name_the_client_the_call_and_the_grant() {
    let node = start_unix(r#"{"devices": ["dfl/*"], "dma_memory_mib": 1}"#).await;
    let client = connect(&node.unix()).await;
    client.enumerate(vec![]).await.unwrap();

    let err = client.open("xocl/emu:xocl0", false).await.unwrap_err();
    assert_eq!(err.code, Some(ErrorCode::PermissionDenied), "{err}");
    assert!(
        err.to_string()
            .contains("Open: client 'tester' may not use device 'xocl/emu:xocl0': its grants.devices do not name it"),
        "{err}"
    );
    assert!(err.to_string().starts_with("node unix://"), "{err}");

    let handle = client.open("dfl/emu:dfl0", false).await.unwrap();
    let err = client.prepare_buffer(handle, 2 << 20).await.unwrap_err();
    assert_eq!(err.code, Some(ErrorCode::OutOfMemory), "{err}");
    assert!(err.to_string().contains("grants.dma_memory_mib"), "{err}");

    // Forged and stale numbers name nothing.
    let forged = client.map_mmio(handle + 1000, 0).await.unwrap_err();
    assert_eq!(forged.code, Some(ErrorCode::NotFound), "{forged}");
    assert!(forged.to_string().contains("holds no handle"), "{forged}");
    let (region, _) = client.map_mmio(handle, 0).await.unwrap();
    client.close(handle).await.unwrap();
    let stale = client.read64(region, 0).await.unwrap_err();
    assert_eq!(stale.code, Some(ErrorCode::NotFound), "{stale}");
    let reclosed = client.close(handle).await.unwrap_err();
    assert_eq!(reclosed.code, Some(ErrorCode::NotFound), "{reclosed}");

    // Another session's objects are not this session's.
    let handle = client.open("dfl/emu:dfl0", true).await.unwrap();
    let other = connect(&node.unix()).await;
    let err = other.map_mmio(handle, 0).await.unwrap_err();
    assert_eq!(err.code, Some(ErrorCode::NotFound), "{err}");

    // A message over the node's limit is refused, and the session goes on.
    let (region, _) = client.map_mmio(handle, 0).await.unwrap();
    let huge: Vec<(u64, u64)> = (0..100_000).map(|i| (nlb0::CSR_SCRATCHPAD0, i)).collect();
    let err = client.write64_batch(region, &huge).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("the node takes at most 262144 per message (its limits.max_message_kib)"),
        "{err}"
    );
    // Sent anyway (as a client without that check would), the node refuses it.
    let raw = accelhost_node::proto::MmioWriteBatchRequest {
        session: client.session().into(),
        region,
        writes: huge
            .iter()
            .map(|&(offset, value)| accelhost_node::proto::MmioWrite {
                offset,
                width: accelhost_node::proto::Width::Width64 as i32,
                value,
            })
            .collect(),
    };
    client.rpc().mmio_write_batch(raw).await.unwrap_err();
    client
        .write64(region, nlb0::CSR_SCRATCHPAD0, 0x5a5a)
        .await
        .unwrap();
    assert_eq!(
        client.read64(region, nlb0::CSR_SCRATCHPAD0).await.unwrap(),
        0x5a5a
    );
    // A misaligned register is the host's refusal, carried with its code.
    let err = client.read64(region, 3).await.unwrap_err();
    assert_eq!(err.code, Some(ErrorCode::InvalidArgument), "{err}");
    // A batch stops at the first write that fails, and says which one it was.
    let err = client
        .write64_batch(
            region,
            &[
                (nlb0::CSR_SCRATCHPAD0, 1),
                (nlb0::CSR_SCRATCHPAD0, 2),
                (3, 3),
                (nlb0::CSR_SCRATCHPAD0, 4),
            ],
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, Some(ErrorCode::InvalidArgument), "{err}");
    assert!(
        err.to_string().contains("MmioWriteBatch: writes[2]: "),
        "{err}"
    );
    assert_eq!(
        client.read64(region, nlb0::CSR_SCRATCHPAD0).await.unwrap(),
        2,
        "the writes before it happened, the one after it did not"
    );
    drop((client, other));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_the_config_does_not_name_is_refused_at_attach() {
    let config = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@"}}}},
            "clients": [{{"name": "someone-else", "unix_uid": {}}}]}}"#,
        uid().wrapping_add(4242)
    );
    let node = start_in(scratch_dir("node"), &config).await;
    let err = Client::connect(&node.unix(), ClientOptions::default())
        .await
        .err()
        .expect("attach is refused");
    assert_eq!(err.code, Some(ErrorCode::PermissionDenied), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("Attach: the local process of uid {}", uid())),
        "{err}"
    );
    assert!(node.sessions.is_empty());
    node.stop().await;
}

async fn wait_for_no_sessions(sessions: &Sessions) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sessions.is_empty() {
        assert!(Instant::now() < deadline, "sessions outlived their clients");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_releases_what_it_held() {
    let node = start_unix(r#"{"devices": ["*"]}"#).await;
    let first = connect(&node.unix()).await;
    first.enumerate(vec![]).await.unwrap();
    let handle = first.open("dfl/emu:dfl0", false).await.unwrap();
    let buffer = first.prepare_buffer(handle, 1 << 20).await.unwrap();
    first
        .fill_buffer(buffer.buffer, 0, 1 << 20, 7)
        .await
        .unwrap();

    let second = connect(&node.unix()).await;
    second.enumerate(vec![]).await.unwrap();
    let busy = second.open("dfl/emu:dfl0", false).await.unwrap_err();
    assert_eq!(busy.code, Some(ErrorCode::Busy), "{busy}");

    // The client dies mid-session: its exclusive open is released by the node.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    let reopened = loop {
        match second.open("dfl/emu:dfl0", false).await {
            Ok(handle) => break handle,
            Err(err) if err.code == Some(ErrorCode::Busy) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => panic!("the device was not released: {err}"),
        }
    };
    second.close(reopened).await.unwrap();
    assert_eq!(node.sessions.len(), 1);
    drop(second);
    wait_for_no_sessions(&node.sessions).await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_clients_at_once() {
    let node = start_unix(r#"{"devices": ["*"]}"#).await;
    let endpoint = node.unix();
    let mut clients = Vec::new();
    for _ in 0..64 {
        let endpoint = endpoint.clone();
        clients.push(tokio::spawn(async move {
            let client = connect(&endpoint).await;
            let devices = client.enumerate(vec![]).await.unwrap();
            assert_eq!(devices.len(), 5);
            let handle = client.open("xocl/emu:xocl0", true).await;
            let described = client.describe("cxl/emu:capi0.0m").await.unwrap();
            assert_eq!(described.id, "cxl/emu:capi0.0m");
            (client, handle.is_ok())
        }));
    }
    let mut held = Vec::new();
    for client in clients {
        held.push(client.await.unwrap());
    }
    assert_eq!(node.sessions.len(), 64);
    assert!(held.iter().any(|(_, opened)| *opened));
    drop(held);
    wait_for_no_sessions(&node.sessions).await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_sessions_and_calls_in_flight() {
    let node = start_unix(r#"{"devices": ["dfl/*"]}"#).await;
    let client = Arc::new(connect(&node.unix()).await);
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("dfl/emu:dfl0", false).await.unwrap();
    let (region, _) = client.map_mmio(handle, 0).await.unwrap();
    // A poll that would wait 50 s: shutting the node down ends it.
    let polling = {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .poll64(
                    region,
                    nlb0::CSR_SCRATCHPAD0,
                    u64::MAX,
                    1,
                    Duration::from_secs(50),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let socket = node.socket.clone();
    let started = Instant::now();
    node.stop().await;
    let err = polling.await.unwrap().unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(!socket.exists(), "the socket file is removed");
    eprintln!("the poll ended with: {err}");
    let after = client.enumerate(vec![]).await.unwrap_err();
    assert_eq!(after.call, "Enumerate");
}

// --- mutual TLS ---

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_serves_known_certificates_only() {
    let pki = Pki::new();
    let config = r#"{"listen": {"tcp": {"address": "127.0.0.1:0", "certificate": "node.pem",
                                        "key": "node.key", "client_ca": "client-ca.pem"}},
                     "clients": [{"name": "peer", "certificate_san": "client1.test",
                                  "grants": {"devices": ["dfl/*"]}}]}"#;
    let node = start_in(pki.dir.clone(), config).await;
    let address = node.tcp.unwrap();
    assert!(address.ip().is_loopback());

    let client = connect(&pki.endpoint(address, "good")).await;
    assert_eq!(client.client_name(), "peer");
    let devices = client.enumerate(vec![]).await.unwrap();
    assert_eq!(devices.len(), 1);
    hello_fpga(&client, "dfl/emu:dfl0", 1 << 20).await;
    drop(client);

    let refused = |client: &str| {
        let endpoint = pki.endpoint(address, client);
        async move {
            Client::connect(&endpoint, ClientOptions::default())
                .await
                .err()
                .unwrap_or_else(|| panic!("{endpoint} was served"))
        }
    };
    let err: RemoteError = refused("stranger").await;
    assert_eq!(err.code, Some(ErrorCode::PermissionDenied), "{err}");
    assert!(
        err.to_string()
            .contains("the certificate of client9.test is not a client of this node"),
        "{err}"
    );
    for client in ["expired", "rogue"] {
        let err = refused(client).await;
        assert_eq!(err.code, None, "{client}: the TLS handshake fails: {err}");
        assert!(
            err.to_string().starts_with("node https://127.0.0.1:"),
            "{err}"
        );
    }
    // A client that does not trust the node's CA does not talk to it.
    let wrong_ca = Endpoint::Tls {
        address: address.to_string(),
        server_name: "localhost".into(),
        ca: pki.dir.join("client-ca.pem"),
        certificate: pki.dir.join("good.pem"),
        key: pki.dir.join("good.key"),
    };
    assert!(
        Client::connect(&wrong_ca, ClientOptions::default())
            .await
            .is_err()
    );
    wait_for_no_sessions(&node.sessions).await;
    let _ = &node.dir;
    node.stop().await;
}

// --- the offload API and events ---

use accelhost::families::cxl::abi::memcpy;
use accelhost_node::proto::{Arg, EventPhase, MemoryArg, MemoryKind, arg};

fn memory_arg(memory: u64) -> Arg {
    Arg {
        value: Some(arg::Value::Memory(MemoryArg { memory, offset: 0 })),
    }
}

fn u32_arg(value: u32) -> Arg {
    Arg {
        value: Some(arg::Value::U32(value)),
    }
}

/// XRT's vadd on the remote emulated card: the xclbin streamed up, inputs written to host
/// memory, copied to device memory, launched, copied back and read, every element checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn xrt_vadd_runs_byte_exact_over_the_socket() {
    let node = start_unix(r#"{"devices": ["xocl/*"], "reconfigure": true}"#).await;
    let client = connect(&node.unix()).await;
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("xocl/emu:xocl0", false).await.unwrap();
    let image = accelhost::workloads::vadd::vadd_image(2);
    let program = client.create_program(handle, &image).await.unwrap();
    let kernel = client.kernel(program, "vadd").await.unwrap();
    let missing = client.kernel(program, "no-such-kernel").await.unwrap_err();
    assert!(missing.to_string().contains("no-such-kernel"), "{missing}");

    let elements: u32 = 200_000;
    let bytes = u64::from(elements) * 4;
    let alloc = |kind| client.alloc(handle, kind, bytes, None);
    let (host_in1, host_in2, host_out) = (
        alloc(MemoryKind::Host).await.unwrap().memory,
        alloc(MemoryKind::Host).await.unwrap().memory,
        alloc(MemoryKind::Host).await.unwrap().memory,
    );
    let (dev_in1, dev_in2, dev_out) = (
        alloc(MemoryKind::Device).await.unwrap().memory,
        alloc(MemoryKind::Device).await.unwrap().memory,
        alloc(MemoryKind::Device).await.unwrap().memory,
    );
    let words = |f: &dyn Fn(u32) -> u32| -> Vec<u8> {
        (0..elements).flat_map(|i| f(i).to_le_bytes()).collect()
    };
    let in1 = |i: u32| i.wrapping_mul(3);
    let in2 = |i: u32| 0xffff_0000u32.wrapping_add(i);
    client.write(host_in1, 0, &words(&in1)).await.unwrap();
    client.write(host_in2, 0, &words(&in2)).await.unwrap();
    let queue = client.create_queue(handle).await.unwrap();
    client
        .enqueue_memcpy(queue, (dev_in1, 0), (host_in1, 0), bytes)
        .await
        .unwrap();
    client
        .enqueue_memcpy(queue, (dev_in2, 0), (host_in2, 0), bytes)
        .await
        .unwrap();
    let launched = client
        .enqueue_launch(
            queue,
            kernel,
            vec![
                memory_arg(dev_in1),
                memory_arg(dev_in2),
                memory_arg(dev_out),
                u32_arg(elements),
            ],
        )
        .await
        .unwrap();
    let back = client
        .enqueue_memcpy(queue, (host_out, 0), (dev_out, 0), bytes)
        .await
        .unwrap();
    client.queue_finish(queue).await.unwrap();
    for event in [launched, back] {
        let state = client.event_status(event).await.unwrap();
        assert_eq!(state.phase, EventPhase::Complete as i32, "{state:?}");
    }
    let out = client.read(host_out, 0, bytes).await.unwrap();
    let expected = words(&|i| in1(i).wrapping_add(in2(i)));
    assert!(
        out == expected,
        "the remote vadd of {elements} elements is exact"
    );

    // The device memory is charged to the client's grant, and released with its handle.
    assert!(
        client.release(handle).await.is_err(),
        "a handle is closed, not released"
    );
    client.release(dev_out).await.unwrap();
    assert!(client.read(dev_out, 0, 4).await.is_err());
    client.close(handle).await.unwrap();
    assert!(
        client.event_status(launched).await.is_err(),
        "closing released the events"
    );
    drop(client);
    node.stop().await;
}

/// The CAPI memcpy AFU on the remote emulated card: a work-element queue written into host
/// memory over the wire, launched, its completion interrupt waited on as a watched event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_memcpy_runs_byte_exact_over_the_socket() {
    let node = start_unix(r#"{"devices": ["cxl/*"]}"#).await;
    let client = connect(&node.unix()).await;
    let devices = client.enumerate(vec![]).await.unwrap();
    assert!(devices.iter().all(|d| d.plugin == "cxl"), "{devices:?}");
    let handle = client.open("cxl/emu:capi0.0m", false).await.unwrap();

    let (copies, size) = (64u64, 2048u16);
    let total = copies * u64::from(size);
    let src = client
        .alloc(handle, MemoryKind::Host, total, None)
        .await
        .unwrap();
    let dst = client
        .alloc(handle, MemoryKind::Host, total, None)
        .await
        .unwrap();
    let pattern: Vec<u8> = (0..total).map(|i| (i * 7 + i / 2048) as u8).collect();
    client.write(src.memory, 0, &pattern).await.unwrap();

    let elements = copies + 1;
    let lines = elements.div_ceil(memcpy::ELEMENTS_PER_LINE);
    let queue_memory = client
        .alloc(handle, MemoryKind::Host, lines * memcpy::LINE_SIZE, None)
        .await
        .unwrap();
    let mut work = Vec::new();
    for c in 0..copies {
        let at = c * u64::from(size);
        let mut element = accelhost::workloads::capi::copy(
            src.device_address + at,
            dst.device_address + at,
            size,
        );
        element.cmd |= memcpy::CMD_VALID;
        work.extend_from_slice(&element.encode());
    }
    let mut done = accelhost::workloads::capi::interrupt(accelhost::workloads::capi::DONE_IRQ);
    done.cmd |= memcpy::CMD_VALID;
    work.extend_from_slice(&done.encode());
    client.write(queue_memory.memory, 0, &work).await.unwrap();

    let program = client.builtin_program(handle).await.unwrap();
    let kernel = client.kernel(program, "memcpy").await.unwrap();
    let queue = client.create_queue(handle).await.unwrap();
    let event = client
        .enqueue_launch(
            queue,
            kernel,
            vec![
                memory_arg(queue_memory.memory),
                u32_arg(lines as u32),
                u32_arg(u32::from(accelhost::workloads::capi::DONE_IRQ)),
            ],
        )
        .await
        .unwrap();
    let mut watched = client.watch_event(event).await.unwrap();
    let mut last = None;
    while let Some(state) = tokio::time::timeout(Duration::from_secs(30), watched.message())
        .await
        .expect("the event finishes within 30 s")
        .unwrap()
    {
        last = Some(state);
    }
    let last = last.expect("the stream says where the event stands");
    assert_eq!(last.phase, EventPhase::Complete as i32, "{last:?}");
    let copied = client.read(dst.memory, 0, total).await.unwrap();
    assert!(
        copied == pattern,
        "the remote memcpy of {total} bytes is byte-exact"
    );
    let statuses = client
        .read(queue_memory.memory, 0, elements * memcpy::WE_SIZE)
        .await
        .unwrap();
    for index in 0..elements as usize {
        let status = statuses[index * memcpy::WE_SIZE as usize + memcpy::WE_STATUS];
        assert_eq!(status, memcpy::STATUS_COMPLETE, "element {index}");
    }
    drop(client);
    wait_for_no_sessions(&node.sessions).await;
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_keeps_unchanged_clients_and_ends_changed_ones() {
    let dir = scratch_dir("node");
    let config = |devices: &str| {
        format!(
            r#"{{"listen": {{"unix": {{"path": "{}"}}}},
                "clients": [{{"name": "tester", "unix_uid": {}, "grants": {{"devices": [{devices}]}}}}]}}"#,
            json_path(&dir.join("node.sock")),
            uid()
        )
    };
    let path = dir.join("serve.json");
    std::fs::write(&path, config(r#""dfl/*""#)).unwrap();
    let host = Arc::new(tokio::task::spawn_blocking(default_host).await.unwrap());
    let node = BoundNode::bind(Arc::new(ServeConfig::load(&path).unwrap()), host)
        .await
        .unwrap();
    let service = node.service();
    let sessions = node.sessions();
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(node.run(async {
        let _ = stopped.await;
    }));
    let endpoint = Endpoint::Unix(dir.join("node.sock"));

    let client = connect(&endpoint).await;
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("dfl/emu:dfl0", false).await.unwrap();

    // The same entry: the session and its open handle go on.
    let same = ServeConfig::parse(&config(r#""dfl/*""#), &path).unwrap();
    let reloaded = service.reload(same);
    assert_eq!(
        (reloaded.ended.len(), reloaded.kept),
        (0, 1),
        "{reloaded:?}"
    );
    assert!(reloaded.need_restart.is_empty());
    client.map_mmio(handle, 0).await.unwrap();

    // Changed grants: the session ends and the device is free; a new session sees the
    // new grants.
    let changed = ServeConfig::parse(&config(r#""xocl/*""#), &path).unwrap();
    let reloaded = service.reload(changed);
    assert_eq!(reloaded.ended, ["tester"]);
    assert_eq!(sessions.len(), 0);
    let err = client.enumerate(vec![]).await.unwrap_err();
    assert_eq!(err.code, Some(ErrorCode::NotFound), "{err}");
    let again = connect(&endpoint).await;
    let ids: Vec<String> = again
        .enumerate(vec![])
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(ids, ["xocl/emu:xocl0"]);

    // A changed listener is reported as needing a restart.
    let moved = ServeConfig::parse(
        &config(r#""xocl/*""#).replace("node.sock", "other.sock"),
        &path,
    )
    .unwrap();
    assert_eq!(service.reload(moved).need_restart, ["listen"]);
    drop((client, again));
    let _ = stop.send(());
    served.await.unwrap().unwrap();
}

// --- clients that go away mid-call ---

/// Waits until a new session can open `device` exclusively: what a departed client held was
/// released.
async fn wait_until_free(endpoint: &Endpoint, device: &str) {
    let client = connect(endpoint).await;
    client.enumerate(vec![]).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client.open(device, false).await {
            Ok(handle) => {
                client.close(handle).await.unwrap();
                return;
            }
            Err(err) if err.code == Some(ErrorCode::Busy) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => panic!("{device} was not released: {err}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_mid_transfer_or_mid_reconfigure_leaves_nothing() {
    use accelhost_node::proto::{BufferWriteChunk, ReconfigureChunk, ReconfigureHeader};
    use tokio_stream::StreamExt;

    let node = start_unix(r#"{"devices": ["*"], "reconfigure": true}"#).await;
    let endpoint = node.unix();

    // Mid-transfer: two chunks of a 64 MiB write sent, then the client goes.
    let client = connect(&endpoint).await;
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("dfl/emu:dfl0", false).await.unwrap();
    let buffer = client.prepare_buffer(handle, 64 << 20).await.unwrap();
    let chunks: Vec<BufferWriteChunk> = (0..2)
        .map(|i| BufferWriteChunk {
            session: client.session().into(),
            object: buffer.buffer,
            offset: i * (128 << 10),
            data: vec![1; 128 << 10].into(),
        })
        .collect();
    let mut rpc = client.rpc();
    let writing = tokio::spawn(async move {
        rpc.buffer_write(tokio_stream::iter(chunks).chain(tokio_stream::pending()))
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    writing.abort();
    drop(client);
    wait_until_free(&endpoint, "dfl/emu:dfl0").await;

    // Mid-reconfigure: the header announces 1 MiB, 64 KiB arrive, then the client goes.
    let client = connect(&endpoint).await;
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("xocl/emu:xocl0", false).await.unwrap();
    let first = ReconfigureChunk {
        header: Some(ReconfigureHeader {
            session: client.session().into(),
            handle,
            slot: 0,
            image_bytes: 1 << 20,
        }),
        data: vec![0; 64 << 10].into(),
    };
    let mut rpc = client.rpc();
    let loading = tokio::spawn(async move {
        rpc.reconfigure(tokio_stream::iter([first]).chain(tokio_stream::pending()))
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    loading.abort();
    drop(client);
    wait_until_free(&endpoint, "xocl/emu:xocl0").await;
    wait_for_no_sessions(&node.sessions).await;

    // A stream that ends short is refused with the count, and the session goes on.
    let client = connect(&endpoint).await;
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("xocl/emu:xocl0", false).await.unwrap();
    let short = ReconfigureChunk {
        header: Some(ReconfigureHeader {
            session: client.session().into(),
            handle,
            slot: 0,
            image_bytes: 1 << 20,
        }),
        data: vec![0; 4096].into(),
    };
    let err = client
        .rpc()
        .reconfigure(tokio_stream::iter([short]))
        .await
        .unwrap_err();
    assert!(
        err.message()
            .contains("the stream ended after 4096 of the 1048576 bytes its header announced"),
        "{err:?}"
    );
    client.reset(handle).await.unwrap();
    drop(client);
    node.stop().await;
}

/// Hundreds of polls waiting at once hold no threads: another client's calls, which run on
/// the node's thread pool (512 threads), are answered while 600 polls wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_polls_do_not_starve_other_clients() {
    let node = start_unix(r#"{"devices": ["*"]}"#).await;
    let endpoint = node.unix();
    let mut waiting = Vec::new();
    // Four sessions (a connection allows 200 calls at once), 150 polls each.
    for _ in 0..4 {
        let client = Arc::new(connect(&endpoint).await);
        client.enumerate(vec![]).await.unwrap();
        let handle = client.open("xocl/emu:xocl0", true).await.unwrap();
        let word = client
            .alloc(handle, MemoryKind::Host, 4096, None)
            .await
            .unwrap()
            .memory;
        for _ in 0..150 {
            let client = client.clone();
            waiting.push(tokio::spawn(async move {
                client
                    .poll_buffer(word, 0, u64::MAX, 1, Duration::from_secs(6))
                    .await
            }));
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let other = connect(&endpoint).await;
    let started = Instant::now();
    for _ in 0..5 {
        assert_eq!(other.enumerate(vec![]).await.unwrap().len(), 5);
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "five enumerates took {took:?} while 600 polls waited"
    );
    for wait in waiting {
        let err = wait.await.unwrap().unwrap_err();
        assert_eq!(err.code, Some(ErrorCode::Timeout), "{err}");
    }
    drop(other);
    node.stop().await;
}

/// The DMA grant is the client's, across its sessions: a second session cannot take what
/// the first already holds, and gets it once the first goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dma_grant_holds_across_a_clients_sessions() {
    let node = start_unix(r#"{"devices": ["*"], "dma_memory_mib": 1}"#).await;
    let endpoint = node.unix();
    let first = connect(&endpoint).await;
    first.enumerate(vec![]).await.unwrap();
    let handle = first.open("xocl/emu:xocl0", true).await.unwrap();
    first
        .alloc(handle, MemoryKind::Host, 1 << 20, None)
        .await
        .unwrap();

    let second = connect(&endpoint).await;
    second.enumerate(vec![]).await.unwrap();
    let handle = second.open("xocl/emu:xocl0", true).await.unwrap();
    let err = second
        .alloc(handle, MemoryKind::Host, 4096, None)
        .await
        .unwrap_err();
    assert_eq!(err.code, Some(ErrorCode::OutOfMemory), "{err}");
    assert!(
        err.to_string()
            .contains("holds 1048576 bytes of its DMA grant; 4096 more would pass its 1 MiB"),
        "{err}"
    );

    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match second.alloc(handle, MemoryKind::Host, 4096, None).await {
            Ok(_) => break,
            Err(err) if Instant::now() < deadline => {
                assert_eq!(err.code, Some(ErrorCode::OutOfMemory), "{err}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => panic!("the first session's memory was not given back: {err}"),
        }
    }
    drop(second);
    node.stop().await;
}

#[test]
fn plugin_calls_errors_durations_and_faults_are_metrics() {
    let crasher = support::chaos_plugin_with(
        "crasher",
        r#"{"trap_in": "enumerate"}"#,
        &[],
        r#""on_fault": "disable", "fuel": 100000000"#,
    );
    let config = format!(
        r#"{{"devices": {}, "plugins": [{}, {crasher}]}}"#,
        support::dfl_devices(&["d0"]),
        support::dfl_plugin(&["d0"])
    );
    let host = Arc::new(support::host(&config).unwrap());
    let metrics = accelhost_node::metrics::NodeMetrics::new(
        host.clone(),
        Arc::new(Sessions::default()),
        Arc::default(),
        Arc::default(),
    );
    let found = host.enumerate(&[]);
    assert_eq!(found.failures.len(), 1, "the crasher traps in enumerate");
    let token = found.tokens.iter().find(|t| t.plugin() == "dfl").unwrap();
    let first = host.open(token, accelhost::OpenMode::Exclusive).unwrap();
    assert!(host.open(token, accelhost::OpenMode::Exclusive).is_err());
    let registers = first.map_mmio(0).unwrap();
    registers.read64(0).unwrap();
    registers.write64(0x100, 0).unwrap();
    drop(registers);
    first.close().unwrap();
    let text = metrics.render_prometheus_text();
    let value = |prefix: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix} missing from:\n{text}"))
            .trim()
            .parse()
            .unwrap()
    };
    assert!(
        value(r#"accelhost_plugin_mmio_operations_total{plugin="dfl",op="write"}"#) >= 1.0
            && value(r#"accelhost_plugin_mmio_operations_total{plugin="dfl",op="read"}"#) >= 1.0,
        "the accesses through the region the plugin mapped are counted"
    );
    assert!(
        value(r#"accelhost_plugin_fuel_consumed_total{plugin="crasher"}"#) > 0.0,
        "the metered crasher burned fuel before it trapped"
    );
    assert!(
        !text.contains(r#"accelhost_plugin_fuel_consumed_total{plugin="dfl"}"#),
        "an unmetered plugin reports no fuel"
    );
    assert_eq!(
        value(r#"accelhost_plugin_dma_granted_bytes{plugin="dfl"}"#),
        (256u64 << 20) as f64
    );
    for line in [
        r#"accelhost_plugin_faults_total{plugin="crasher",cause="trap"} 1"#,
        r#"accelhost_plugin_calls_total{plugin="crasher",call="enumerate"} 1"#,
        r#"accelhost_plugin_calls_total{plugin="dfl",call="enumerate"} 1"#,
        r#"accelhost_plugin_call_duration_seconds_bucket{le="+Inf",plugin="dfl",call="enumerate"} 1"#,
        r#"accelhost_plugin_call_duration_seconds_count{plugin="dfl",call="enumerate"} 1"#,
        "# TYPE accelhost_plugin_call_duration_seconds histogram",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
    assert!(
        text.lines().any(|l| l.starts_with(
            r#"accelhost_plugin_call_errors_total{plugin="dfl",call="open",code="busy"}"#
        )),
        "the second exclusive open's refusal is counted:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_names_a_plugin_chooses_reach_the_metrics_inert() {
    let evil = support::chaos_plugin_with("evil", r#"{"evil_text": true}"#, &[], "");
    let host = Arc::new(support::host(&format!(r#"{{"plugins": [{evil}]}}"#)).unwrap());
    let config = ServeConfig::parse(
        r#"{"listen": {"unix": {"path": "/nonexistent/evil.sock"}}}"#,
        std::path::Path::new("evil.json"),
    )
    .unwrap();
    let service = accelhost_node::service::NodeService::new(host, Arc::new(config));
    let judged = service.check_health().await;
    assert!(!judged.is_empty(), "the evil plugin enumerates");
    assert!(
        judged.iter().any(|d| d.id.contains('\u{1b}')),
        "its device names carry control sequences: {judged:?}"
    );
    let text = service.metrics().render_prometheus_text();
    assert!(
        text.lines()
            .any(|l| l.starts_with(r#"accelhost_device_healthy{device="evil/"#)),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{9b}') && !text.contains('\r'),
        "no control character reaches the scrape:\n{text}"
    );
}

/// Makes `method` of the node with an empty message, as any gRPC client in any language could:
/// the refusal, if the node refuses it before its handler.
async fn raw_call(channel: tonic::transport::Channel, method: &str) -> tonic::Status {
    use tonic::codegen::http::uri::PathAndQuery;
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let path = PathAndQuery::try_from(format!("/accelhost.node.v1.Node/{method}")).unwrap();
    let answer = grpc
        .unary::<accelhost_node::proto::Empty, accelhost_node::proto::Empty, _>(
            tonic::Request::new(accelhost_node::proto::Empty {}),
            path,
            tonic_prost::ProstCodec::default(),
        )
        .await;
    answer.expect_err(&format!("{method} was refused"))
}

/// Every call of the proto, made by a caller the config does not name, and each call that
/// needs a grant, made by a client without it: the node's table refuses each before its
/// handler runs, naming the call, the client and the grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_is_authorized_in_one_place() {
    use accelhost_node::client::channel;
    use accelhost_node::service::{Needs, RULES};

    let stranger = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@"}}}},
            "clients": [{{"name": "someone-else", "unix_uid": {}}}]}}"#,
        uid().wrapping_add(4242)
    );
    let node = start_in(scratch_dir("node"), &stranger).await;
    let wire = channel(&node.unix(), ClientOptions::default())
        .await
        .unwrap();
    for rule in RULES {
        let refused = raw_call(wire.clone(), rule.method).await;
        assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
        assert!(
            refused.message().starts_with(&format!(
                "{}: the local process of uid {}",
                rule.method,
                uid()
            )),
            "{refused:?}"
        );
    }
    node.stop().await;

    let limited = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@"}}}},
            "clients": [{{"name": "limited", "unix_uid": {}, "grants": {{"devices": ["*"]}}}}]}}"#,
        uid()
    );
    let node = start_in(scratch_dir("node"), &limited).await;
    let wire = channel(&node.unix(), ClientOptions::default())
        .await
        .unwrap();
    let needing: Vec<_> = RULES
        .iter()
        .filter(|r| r.needs == Needs::Reconfigure)
        .collect();
    assert_eq!(needing.len(), 2);
    for rule in needing {
        let refused = raw_call(wire.clone(), rule.method).await;
        assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
        assert_eq!(
            refused.message(),
            format!(
                "{}: client 'limited' may not load images onto a card: its grants do not set \
                 `reconfigure`",
                rule.method
            )
        );
    }
    // Through the client library too: an xclbin is not loaded onto the card.
    let client = connect(&node.unix()).await;
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("xocl/emu:xocl0", false).await.unwrap();
    let err = client.create_program(handle, &[0u8; 64]).await.unwrap_err();
    assert_eq!(err.code, Some(ErrorCode::PermissionDenied), "{err}");
    drop(client);
    node.stop().await;
}

/// Event watches a client dropped give their stream permits back, though the events never
/// finish: the session can watch again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_event_watch_gives_its_stream_back() {
    let config = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@"}}}},
            "limits": {{"max_streams_per_session": 2}},
            "clients": [{{"name": "watcher", "unix_uid": {}, "grants": {{"devices": ["*"]}}}}]}}"#,
        uid()
    );
    let node = start_in(scratch_dir("node"), &config).await;
    let client = connect(&node.unix()).await;
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("cxl/emu:capi0.0s", false).await.unwrap();
    for round in 0..4 {
        let mut watches = Vec::new();
        for _ in 0..2 {
            // An interrupt the emulated AFU raises only when told to: the event stays pending.
            let event = client
                .register_event(handle, accelhost_node::proto::EventKind::Interrupt, 1)
                .await
                .unwrap();
            let mut watch = client.watch_event(event).await.unwrap();
            let now = watch.message().await.unwrap().unwrap();
            assert_eq!(now.phase, EventPhase::Pending as i32, "{now:?}");
            watches.push(watch);
        }
        drop(watches);
        // The node sees the streams go within moments; until then a watch may be refused.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let event = client
                .register_event(handle, accelhost_node::proto::EventKind::Interrupt, 1)
                .await
                .unwrap();
            match client.watch_event(event).await {
                Ok(watch) => {
                    drop(watch);
                    break;
                }
                Err(err) if Instant::now() < deadline => {
                    assert_eq!(err.code, Some(ErrorCode::NoSpace), "{err}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(err) => panic!("round {round}: the dropped watches kept their permits: {err}"),
            }
        }
    }
    drop(client);
    node.stop().await;
}

// --- quotas: per client and per peer, and the node's ---

/// Does the node close `stream` (end of file, or a reset) within `within`?
async fn closed_by_node(stream: &mut tokio::net::TcpStream, within: Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(within, stream.read(&mut byte)).await,
        Ok(Ok(0) | Err(_))
    )
}

/// Silent TCP connections from `count` sockets at `from`, each told after `within` whether
/// the node closed it.
async fn silent_connections(
    from: &str,
    to: std::net::SocketAddr,
    count: usize,
    within: Duration,
) -> Vec<(tokio::net::TcpStream, bool)> {
    let mut watching = tokio::task::JoinSet::new();
    for _ in 0..count {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let mut stream = socket.connect(to).await.unwrap();
        watching.spawn(async move {
            let closed = closed_by_node(&mut stream, within).await;
            (stream, closed)
        });
    }
    watching.join_all().await
}

/// A peer that opens hundreds of connections and never speaks holds at most its share of the
/// node's connections, each for at most the handshake time; another peer is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_of_one_peer_cannot_lock_out_another() {
    let pki = Pki::new();
    let config = r#"{"listen": {"tcp": {"address": "127.0.0.1:0", "certificate": "node.pem",
                                        "key": "node.key", "client_ca": "client-ca.pem"}},
                     "limits": {"max_connections_per_peer": 4, "max_connections": 64,
                                "handshake_ms": 4000},
                     "clients": [{"name": "peer", "certificate_san": "client1.test",
                                  "grants": {"devices": ["dfl/*"]}}]}"#;
    let handshake_time = Duration::from_millis(4000);
    let node = start_in(pki.dir.clone(), config).await;
    let address = node.tcp.unwrap();
    // 127.0.0.2 is loopback too: another peer, as far as the node can tell. Those past its
    // share are closed at once; the others stay open well within the handshake time.
    let silent = silent_connections("127.0.0.2", address, 200, handshake_time / 2).await;
    let held: Vec<_> = silent
        .into_iter()
        .filter_map(|(stream, closed)| (!closed).then_some(stream))
        .collect();
    assert_eq!(
        held.len(),
        4,
        "the node keeps exactly max_connections_per_peer of the silent peer's connections"
    );

    let client = connect(&pki.endpoint(address, "good")).await;
    client.enumerate(vec![]).await.unwrap();
    hello_fpga(&client, "dfl/emu:dfl0", 1 << 20).await;
    drop(client);

    // The held ones never start a TLS handshake: the node closes them after the handshake
    // time its config gives (counted from their accept, half of it ago; the default of 10 s
    // would come too late), and the peer's share is free again.
    let mut held = held;
    let within = handshake_time;
    for stream in &mut held {
        assert!(
            closed_by_node(stream, within).await,
            "a connection that never finished its handshake is kept past the handshake time"
        );
    }
    drop(held);
    let again = silent_connections("127.0.0.2", address, 1, Duration::from_secs(1)).await;
    assert!(
        !again[0].1,
        "the peer's closed connections still count against it"
    );
    node.stop().await;
}

/// Sessions and DMA memory: a client stays within its own caps, and every client together
/// within the node's, whoever asks first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_and_memory_have_a_cap_per_client_and_one_for_the_node() {
    let pki = Pki::new();
    let config = r#"{"listen": {"tcp": {"address": "127.0.0.1:0", "certificate": "node.pem",
                                        "key": "node.key", "client_ca": "client-ca.pem"}},
                     "limits": {"max_sessions": 3, "max_sessions_per_client": 2,
                                "max_dma_mib": 6},
                     "clients": [{"name": "greedy", "certificate_san": "client1.test",
                                  "grants": {"devices": ["*"], "dma_memory_mib": 8}},
                                 {"name": "modest", "certificate_san": "client9.test",
                                  "grants": {"devices": ["*"], "dma_memory_mib": 8}}]}"#;
    let node = start_in(pki.dir.clone(), config).await;
    let address = node.tcp.unwrap();
    let greedy = [
        connect(&pki.endpoint(address, "good")).await,
        connect(&pki.endpoint(address, "good")).await,
    ];
    let err = Client::connect(&pki.endpoint(address, "good"), ClientOptions::default())
        .await
        .err()
        .expect("a third session of one client is refused");
    assert_eq!(err.code, Some(ErrorCode::NoSpace), "{err}");
    assert!(
        err.to_string().contains(
            "Attach: client 'greedy' already has 2 sessions open (limits.max_sessions_per_client)"
        ),
        "{err}"
    );
    let modest = connect(&pki.endpoint(address, "stranger")).await;
    assert_eq!(modest.client_name(), "modest");

    greedy[0].enumerate(vec![]).await.unwrap();
    let handle = greedy[0].open("xocl/emu:xocl0", true).await.unwrap();
    greedy[0]
        .alloc(handle, MemoryKind::Host, 5 << 20, None)
        .await
        .unwrap();
    modest.enumerate(vec![]).await.unwrap();
    let handle = modest.open("xocl/emu:xocl0", true).await.unwrap();
    let err = modest
        .alloc(handle, MemoryKind::Host, 2 << 20, None)
        .await
        .unwrap_err();
    assert_eq!(err.code, Some(ErrorCode::OutOfMemory), "{err}");
    assert!(
        err.to_string().contains(
            "the node's clients hold 5242880 bytes of DMA memory together; 2097152 more for \
             client 'modest' would pass the node's 6 MiB (limits.max_dma_mib)"
        ),
        "{err}"
    );
    modest
        .alloc(handle, MemoryKind::Host, 1 << 20, None)
        .await
        .unwrap();
    drop((greedy, modest));
    wait_for_no_sessions(&node.sessions).await;
    node.stop().await;
}

/// On the Unix socket a peer is a uid: past its share, its new connections are closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uid_holds_at_most_its_share_of_the_socket() {
    use tokio::io::AsyncReadExt;
    let config = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@", "mode": "0600"}}}},
            "limits": {{"max_connections_per_peer": 3}},
            "clients": [{{"name": "me", "unix_uid": {}, "grants": {{"devices": ["*"]}}}}]}}"#,
        uid()
    );
    let node = start_in(scratch_dir("node"), &config).await;
    let mut streams = Vec::new();
    for _ in 0..10 {
        streams.push(tokio::net::UnixStream::connect(&node.socket).await.unwrap());
    }
    let mut closed = 0;
    for stream in &mut streams {
        let mut byte = [0u8; 1];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(500), stream.read(&mut byte)).await
        {
            closed += 1;
        }
    }
    assert_eq!(closed, 7, "the socket kept more than the uid's share");
    drop(streams);
    // The share comes back as the connections close.
    let deadline = Instant::now() + Duration::from_secs(10);
    let client = loop {
        match Client::connect(&node.unix(), ClientOptions::default()).await {
            Ok(client) => break client,
            Err(err) if Instant::now() < deadline => {
                let _ = err;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => panic!("the uid's closed connections still count: {err}"),
        }
    };
    client.enumerate(vec![]).await.unwrap();
    drop(client);
    node.stop().await;
}

/// `/metrics` on a Unix socket: only who the socket's mode lets in reads it, and at most
/// `METRICS_CONNECTIONS` connections are served at once, however many are tried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_on_a_socket_serve_a_few_connections_at_once() {
    use accelhost_node::server::METRICS_CONNECTIONS;
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let config = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@", "mode": "0600"}},
                        "metrics": {{"unix": {{"path": "@DIR@/metrics.sock", "mode": "0600"}}}}}},
            "clients": [{{"name": "me", "unix_uid": {}, "grants": {{"devices": ["*"]}}}}]}}"#,
        uid()
    );
    let node = start_in(scratch_dir("node"), &config).await;
    let socket = node.dir.join("metrics.sock");
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // Every step may fail while the node still counts connections the test has dropped:
    // such a connection is closed at accept, so the write may meet a broken pipe.
    let scrape = || async {
        let mut stream = tokio::net::UnixStream::connect(&socket).await?;
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await?;
        let mut answer = String::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answer))
            .await
            .map_err(std::io::Error::other)??;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = scrape().await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("accelhost_node_connections "), "{answer}");

    let mut idle = Vec::new();
    for _ in 0..METRICS_CONNECTIONS + 20 {
        idle.push(tokio::net::UnixStream::connect(&socket).await.unwrap());
    }
    let mut closed = 0;
    for stream in &mut idle {
        let mut byte = [0u8; 1];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(300), stream.read(&mut byte)).await
        {
            closed += 1;
        }
    }
    assert_eq!(
        closed, 20,
        "the metrics socket served more than its connection cap"
    );
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match scrape().await {
            Ok(answer) if answer.starts_with("HTTP/1.1 200") => break,
            _ if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(20)).await,
            other => panic!("the idle connections' places never came back: {other:?}"),
        }
    }
    node.stop().await;
    assert!(!socket.exists(), "the metrics socket is removed at stop");
}

/// Maps `len` bytes of a descriptor the node handed over, as a local client does.
fn map(fd: &std::os::fd::OwnedFd, len: usize) -> *mut u8 {
    use std::os::fd::AsRawFd;
    // SAFETY: a fresh shared mapping of a descriptor the test holds.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    assert_ne!(ptr, libc::MAP_FAILED);
    ptr.cast()
}

/// Redeems `ticket` over the node socket at `socket`, as the client library does.
pub(crate) async fn fetch_at(
    socket: &std::path::Path,
    ticket: &[u8],
) -> std::io::Result<std::os::fd::OwnedFd> {
    let (socket, ticket) = (socket.to_owned(), ticket.to_vec());
    tokio::task::spawn_blocking(move || {
        accelhost_node::shared_memory::fetch(
            &socket,
            &ticket,
            Instant::now() + Duration::from_secs(10),
        )
    })
    .await
    .unwrap()
}

async fn fetch(client: &Client, ticket: &[u8]) -> std::io::Result<std::os::fd::OwnedFd> {
    fetch_at(client.socket().unwrap(), ticket).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_memory_is_handed_once_sealed_and_only_while_the_node_holds_it() {
    use std::os::fd::AsRawFd;
    let node = start_unix(r#"{"devices": ["*"], "dma_memory_mib": 64}"#).await;
    let endpoint = node.unix();
    let sharing = ClientOptions {
        share_memory: true,
        ..ClientOptions::default()
    };
    let client = Client::connect(&endpoint, sharing).await.unwrap();
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("xocl/emu:xocl0", true).await.unwrap();
    let len = 1 << 20;
    let memory = client
        .alloc(handle, MemoryKind::Host, len, None)
        .await
        .unwrap();
    let ticket = memory
        .shared
        .expect("a local client is offered the memory")
        .ticket;
    let fd = fetch(&client, &ticket).await.unwrap();
    let err = fetch(&client, &ticket).await.unwrap_err().to_string();
    assert!(
        err.contains("no memory on offer"),
        "a ticket is good once: {err}"
    );

    // One memory: what the client stores, the node reads, and the other way round.
    let mapped = map(&fd, len as usize);
    // SAFETY: inside the mapping of `len` bytes.
    unsafe { std::ptr::copy_nonoverlapping(b"from the pod".as_ptr(), mapped.add(4096), 12) };
    assert_eq!(
        client.read(memory.memory, 4096, 12).await.unwrap(),
        b"from the pod"
    );
    client
        .write(memory.memory, 0, b"from the node")
        .await
        .unwrap();
    assert_eq!(
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(mapped, 13) },
        b"from the node"
    );

    // Its size is sealed: the client cannot make the node's mapping fault.
    // SAFETY: plain calls on a descriptor the test holds.
    unsafe {
        assert_ne!(libc::ftruncate(fd.as_raw_fd(), 0), 0);
        assert_ne!(libc::ftruncate(fd.as_raw_fd(), 1 << 30), 0);
    }
    assert_eq!(
        client.read(memory.memory, 0, 13).await.unwrap(),
        b"from the node"
    );

    // A wrong secret spends the offer; the right one then finds nothing.
    let other = client
        .alloc(handle, MemoryKind::Host, 4096, None)
        .await
        .unwrap();
    let mut guessed = other.shared.unwrap().ticket.to_vec();
    let right = guessed.clone();
    guessed[0] ^= 1;
    let err = fetch(&client, &guessed).await.unwrap_err().to_string();
    assert!(err.contains("not the one the node gave"), "{err}");
    assert!(fetch(&client, &right).await.is_err(), "one guess per offer");

    // Released, the memory is the node's no more: its pages are gone from the client's
    // mapping too, and nothing stays charged.
    assert_eq!(node.sessions.dma_held(), len + 4096);
    client.release(memory.memory).await.unwrap();
    client.release(other.memory).await.unwrap();
    assert_eq!(node.sessions.dma_held(), 0);
    // SAFETY: the mapping is still the test's; its pages read as zero once punched out.
    let after = unsafe { std::slice::from_raw_parts(mapped, 13) };
    assert_eq!(after, [0; 13]);
    // SAFETY: the mapping is still the test's; its pages were punched out.
    unsafe { libc::munmap(mapped.cast(), len as usize) };

    // An offer not redeemed goes with its object.
    let unclaimed = client
        .alloc(handle, MemoryKind::Host, 4096, None)
        .await
        .unwrap();
    client.release(unclaimed.memory).await.unwrap();
    let err = fetch(&client, &unclaimed.shared.unwrap().ticket)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no memory on offer"), "{err}");

    // At most a few offers wait at once; past them, objects are mirrored as before.
    let mut offered = 0;
    for _ in 0..24 {
        let made = client
            .alloc(handle, MemoryKind::Host, 4096, None)
            .await
            .unwrap();
        offered += usize::from(made.shared.is_some());
    }
    assert_eq!(offered, accelhost_node::offer::MAX_OFFERS);

    // A client that does not ask gets no offer.
    let plain = connect(&endpoint).await;
    plain.enumerate(vec![]).await.unwrap();
    let handle = plain.open("xocl/emu:xocl0", true).await.unwrap();
    let made = plain
        .alloc(handle, MemoryKind::Host, 4096, None)
        .await
        .unwrap();
    assert!(made.shared.is_none());
    drop((client, plain));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_the_redeeming_path_is_answered_and_closed() {
    use std::io::{Read, Write};
    let node = start_unix(r#"{"devices": ["*"], "dma_memory_mib": 64}"#).await;
    let socket = node.socket.clone();
    tokio::task::spawn_blocking(move || {
        let ask = |request: &[u8]| {
            let mut stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            stream.write_all(request).unwrap();
            let mut answer = Vec::new();
            stream.read_to_end(&mut answer).unwrap();
            String::from_utf8_lossy(&answer).into_owned()
        };
        let magic = accelhost_node::shared_memory::MAGIC;
        let mut too_long = magic.to_vec();
        too_long.extend_from_slice(&u16::MAX.to_le_bytes());
        assert!(ask(&too_long).contains("a ticket of 65535 bytes"));
        let mut short = magic.to_vec();
        short.extend_from_slice(&3u16.to_le_bytes());
        short.extend_from_slice(b"abc");
        assert!(ask(&short).contains("too short"));
        let mut unknown = magic.to_vec();
        unknown.extend_from_slice(&40u16.to_le_bytes());
        unknown.extend_from_slice(&[7u8; 24]);
        unknown.extend_from_slice(b"0123456789abcdef");
        assert!(ask(&unknown).contains("session ended"));
    })
    .await
    .unwrap();
    // The socket still serves gRPC.
    let client = connect(&node.unix()).await;
    assert!(!client.enumerate(vec![]).await.unwrap().is_empty());
    drop(client);
    node.stop().await;
}

/// The emulated XRT card opened, its vadd xclbin loaded: the handle and the kernel.
async fn vadd_on_the_card(client: &Client) -> (u64, u64) {
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("xocl/emu:xocl0", false).await.unwrap();
    let image = accelhost::workloads::vadd::vadd_image(2);
    let program = client.create_program(handle, &image).await.unwrap();
    (handle, client.kernel(program, "vadd").await.unwrap())
}

/// What a submitted command's outcome was, as a test hears it.
type Heard = tokio::sync::mpsc::UnboundedSender<(u64, accelhost_node::pipeline::Outcome)>;

fn heard(tx: &Heard, n: u64) -> accelhost_node::pipeline::Done {
    let tx = tx.clone();
    Box::new(move |outcome| {
        let _ = tx.send((n, outcome));
    })
}

/// The objects a command chain ran over.
struct Chain {
    queue: u64,
    host: u64,
    device: u64,
    out: u64,
}

/// A copy of `bytes` from `src` to `dst` on `queue`, as a command.
fn memcpy_work(queue: u64, dst: u64, src: u64) -> accelhost_node::proto::command::Work {
    accelhost_node::proto::command::Work::Memcpy(accelhost_node::proto::MemcpyRequest {
        session: String::new(),
        queue,
        dst,
        dst_offset: 0,
        src,
        src_offset: 0,
        size: 4096,
    })
}

/// The chain both command transports are tested with, sent by `submit` (a command and what
/// hears it): a copy in, more launches than may be in flight, each doubling the first word in
/// place, a launch of a kernel the session does not hold, a copy out. Every completion comes
/// in the queue's order, the bad launch fails alone, and the launches ran between the copies.
async fn a_chain_completes_in_order(
    client: &Client,
    (handle, kernel): (u64, u64),
    submit: impl Fn(accelhost_node::proto::command::Work, accelhost_node::pipeline::Done),
) -> Chain {
    use accelhost_node::pipeline::MAX_IN_FLIGHT;
    use accelhost_node::proto::LaunchRequest;
    use accelhost_node::proto::command::Work;
    let mut objects = Vec::new();
    for kind in [MemoryKind::Host, MemoryKind::Device, MemoryKind::Host] {
        objects.push(client.alloc(handle, kind, 4096, None).await.unwrap().memory);
    }
    let (host, device, out) = (objects[0], objects[1], objects[2]);
    client.write(host, 0, &[7u8; 4096]).await.unwrap();
    let queue = client.create_queue(handle).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let launches = (MAX_IN_FLIGHT + 500) as u64;
    submit(memcpy_work(queue, device, host), heard(&tx, 0));
    for n in 1..=launches {
        let launch = Work::Launch(LaunchRequest {
            session: String::new(),
            queue,
            kernel,
            args: vec![
                memory_arg(device),
                memory_arg(device),
                memory_arg(device),
                u32_arg(1),
            ],
        });
        submit(launch, heard(&tx, n));
    }
    let bad = Work::Launch(LaunchRequest {
        session: String::new(),
        queue,
        kernel: 9999,
        args: vec![],
    });
    submit(bad, heard(&tx, launches + 1));
    submit(memcpy_work(queue, out, device), heard(&tx, launches + 2));
    let mut order = Vec::new();
    for _ in 0..launches + 3 {
        let (n, outcome) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("every command completes")
            .unwrap();
        if n == launches + 1 {
            let (code, why) = outcome.unwrap_err();
            assert_eq!(code, ErrorCode::NotFound, "{why}");
            assert!(why.contains("kernel 9999"), "{why}");
        } else {
            outcome.unwrap_or_else(|err| panic!("command {n}: {err:?}"));
            order.push(n);
        }
    }
    let expected: Vec<u64> = (0..launches + 3).filter(|&n| n != launches + 1).collect();
    assert_eq!(
        order, expected,
        "completions come in the order of one queue"
    );
    // Each launch doubles the first word in place (in1 = in2 = out, one element): after more
    // than 32 of them it is 0, and the copy that followed them saw it; the next word is as
    // the first copy left it.
    let first = client.read(out, 0, 8).await.unwrap();
    assert_eq!(
        first,
        [0, 0, 0, 0, 7, 7, 7, 7],
        "the launches ran between the copies"
    );
    Chain {
        queue,
        host,
        device,
        out,
    }
}

/// A batch of launches is one command on either transport: it completes once, after all its
/// launches ran (each doubles the first word in place), between the commands around it; a
/// batch that names a kernel the session does not hold, or holds no launch or more than a
/// batch may, is refused whole, naming why, and runs none of its launches.
async fn a_batch_is_one_command(
    client: &Client,
    kernel: u64,
    chain: &Chain,
    submit: impl Fn(accelhost_node::proto::command::Work, accelhost_node::pipeline::Done),
) {
    use accelhost_node::proto::command::Work;
    use accelhost_node::proto::{BatchedLaunch, LaunchBatch};
    let doubling = |kernel| BatchedLaunch {
        kernel,
        args: vec![
            memory_arg(chain.device),
            memory_arg(chain.device),
            memory_arg(chain.device),
            u32_arg(1),
        ],
    };
    let batch = |launches: Vec<BatchedLaunch>| {
        Work::Launches(LaunchBatch {
            queue: chain.queue,
            launches,
        })
    };
    let mut unknown_kernel = vec![doubling(kernel); 3];
    unknown_kernel.push(doubling(9999));
    let commands = vec![
        memcpy_work(chain.queue, chain.device, chain.host),
        batch(vec![doubling(kernel); 5]),
        batch(unknown_kernel),
        batch(Vec::new()),
        batch(vec![doubling(kernel); accelhost::LAUNCHES_PER_BATCH + 1]),
        memcpy_work(chain.queue, chain.out, chain.device),
    ];
    let count = commands.len() as u64;
    client.write(chain.host, 0, &[7u8; 4096]).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for (n, work) in commands.into_iter().enumerate() {
        submit(work, heard(&tx, n as u64));
    }
    let mut outcomes = std::collections::BTreeMap::new();
    for _ in 0..count {
        let (n, outcome) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("every command completes")
            .unwrap();
        assert!(
            outcomes.insert(n, outcome).is_none(),
            "command {n} heard twice"
        );
    }
    for n in [0, 1, 5] {
        if let Err(err) = &outcomes[&n] {
            panic!("command {n}: {err:?}");
        }
    }
    let refused = |n: u64, code: ErrorCode, wanted: &[&str]| {
        let (got, why) = outcomes[&n].clone().unwrap_err();
        assert_eq!(got, code, "command {n}: {why}");
        for part in wanted {
            assert!(why.contains(part), "command {n}: {why}");
        }
    };
    refused(2, ErrorCode::NotFound, &["launches[3]", "kernel 9999"]);
    refused(3, ErrorCode::InvalidArgument, &["a batch of 0 launches"]);
    let too_many = format!("a batch of {} launches", accelhost::LAUNCHES_PER_BATCH + 1);
    refused(4, ErrorCode::InvalidArgument, &[&too_many]);
    // 0x07070707 doubled five times, and not again by the three good launches of the batch
    // refused whole; the next word as the first copy left it.
    let first = client.read(chain.out, 0, 8).await.unwrap();
    assert_eq!(first, [0xe0, 0xe0, 0xe0, 0xe0, 7, 7, 7, 7]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submitted_work_completes_in_order_and_a_bad_command_fails_alone() {
    use accelhost_node::pipeline::Submitter;
    let node = start_unix(r#"{"devices": ["xocl/*"], "reconfigure": true}"#).await;
    let client = connect(&node.unix()).await;
    let card = vadd_on_the_card(&client).await;
    let submitter = Submitter::open(client.rpc(), client.session().to_string());
    let chain = a_chain_completes_in_order(&client, card, |work, done| {
        submitter.submit(work, done).ok().unwrap()
    })
    .await;
    a_batch_is_one_command(&client, card.1, &chain, |work, done| {
        submitter.submit(work, done).ok().unwrap()
    })
    .await;
    submitter.settle().await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let memcpy = |dst, src| memcpy_work(chain.queue, dst, src);
    let (out, device) = (chain.out, chain.device);

    // A stream that names another session is refused command by command.
    let stranger = Submitter::open(client.rpc(), "0123456789abcdef".into());
    stranger
        .submit(memcpy(out, device), heard(&tx, 0))
        .ok()
        .unwrap();
    let (_, outcome) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    let (_, why) = outcome.unwrap_err();
    assert!(why.contains("no session"), "{why}");
    drop((submitter, stranger, client));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ring_carries_work_in_order_and_a_ring_written_out_of_its_layout_closes_alone() {
    use accelhost_node::doorbell::RingSubmitter;
    use accelhost_node::proto::command::Work;
    use accelhost_node::ring::{ClientEnd, RING_BYTES, RingMemory, header};
    let node =
        start_unix(r#"{"devices": ["xocl/*"], "reconfigure": true, "dma_memory_mib": 64}"#).await;
    let sharing = ClientOptions {
        share_memory: true,
        ..ClientOptions::default()
    };
    let client = Client::connect(&node.unix(), sharing).await.unwrap();
    let card = vadd_on_the_card(&client).await;
    let handle = card.0;
    let (ring_object, offer) = client.open_ring().await.unwrap();
    let fd = fetch(
        &client,
        &offer.expect("a local client is offered the ring").ticket,
    )
    .await
    .unwrap();
    let hostile_view = fd.try_clone().unwrap();
    let ring = RingSubmitter::new(ClientEnd::new(RingMemory::adopt(fd).unwrap())).unwrap();
    // More launches than there are completion slots: the node reads on as they are heard.
    let chain = a_chain_completes_in_order(&client, card, |work, done| {
        ring.submit(work, done).ok().unwrap()
    })
    .await;
    a_batch_is_one_command(&client, card.1, &chain, |work, done| {
        ring.submit(work, done).ok().unwrap()
    })
    .await;
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let memcpy = |dst, src| memcpy_work(chain.queue, dst, src);
    let (queue, out, host) = (chain.queue, chain.out, chain.host);

    // The client writes a command tail past the ring: the node closes the ring with the
    // reason, what was waiting hears it, and the session goes on.
    let raw = map(&hostile_view, RING_BYTES as usize);
    // SAFETY: the header's command tail, a u64 inside the mapping just made.
    unsafe {
        std::sync::atomic::AtomicU64::from_ptr(raw.add(header::COMMAND_TAIL).cast())
            .fetch_add(1 << 30, std::sync::atomic::Ordering::SeqCst);
        std::sync::atomic::AtomicU32::from_ptr(raw.add(header::NODE_BELL).cast())
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    let started = Instant::now();
    while !ring.is_closed() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the ring stays open"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (work, _) = ring
        .submit(memcpy(out, host), heard(&tx, 0))
        .expect_err("a closed ring takes nothing");
    assert!(matches!(work, Work::Memcpy(_)));
    // SAFETY: the header's reason length and reason, inside the mapping.
    let reason = unsafe {
        let len = std::ptr::read_volatile(raw.add(header::REASON_LEN).cast::<u32>()) as usize;
        String::from_utf8_lossy(std::slice::from_raw_parts(raw.add(header::REASON), len))
            .into_owned()
    };
    assert!(reason.contains("command_tail"), "{reason}");
    let again = client.create_queue(handle).await.unwrap();
    assert!(again > queue, "the session serves on");
    client.release(ring_object).await.unwrap();
    // SAFETY: the mapping made above, unmapped once.
    unsafe { libc::munmap(raw.cast(), RING_BYTES as usize) };
    drop((ring, client));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submitted_work_in_flight_when_the_node_stops_is_heard_not_lost() {
    use accelhost_node::pipeline::Submitter;
    use accelhost_node::proto::LaunchRequest;
    use accelhost_node::proto::command::Work;
    let node = start_unix(r#"{"devices": ["xocl/*"], "reconfigure": true}"#).await;
    let client = connect(&node.unix()).await;
    let (handle, kernel) = vadd_on_the_card(&client).await;
    let elements = 1u32 << 20;
    let device = client
        .alloc(handle, MemoryKind::Device, u64::from(elements) * 4, None)
        .await
        .unwrap()
        .memory;
    let queue = client.create_queue(handle).await.unwrap();
    let submitter = Submitter::open(client.rpc(), client.session().to_string());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let submitted = 100u64;
    for n in 0..submitted {
        let launch = Work::Launch(LaunchRequest {
            session: String::new(),
            queue,
            kernel,
            args: vec![
                memory_arg(device),
                memory_arg(device),
                memory_arg(device),
                u32_arg(elements),
            ],
        });
        submitter.submit(launch, heard(&tx, n)).ok().unwrap();
    }
    // Stopped with the commands in flight: the node ends the session, whose queue finishes
    // what it took; whatever it did not take fails. Either way each one is heard once.
    node.stop().await;
    let (mut completed, mut failed) = (0, Vec::new());
    for _ in 0..submitted {
        let (_, outcome) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("every submitted command is heard")
            .unwrap();
        match outcome {
            Ok(()) => completed += 1,
            Err((_, why)) => failed.push(why),
        }
    }
    assert!(
        failed.iter().all(|why| !why.is_empty()),
        "every failure says why: {failed:?}"
    );
    assert_eq!(completed + failed.len() as u64, submitted);
    assert!(
        tokio::time::timeout(Duration::from_millis(200), rx.recv())
            .await
            .is_err(),
        "nothing is heard twice"
    );
    drop((submitter, client));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_message_may_hold_more_commands_than_may_be_in_flight() {
    use accelhost_node::pipeline::MAX_IN_FLIGHT;
    use accelhost_node::proto::command::Work;
    use accelhost_node::proto::{Command, LaunchRequest, SubmitRequest};
    let node = start_unix(r#"{"devices": ["xocl/*"], "reconfigure": true}"#).await;
    let client = connect(&node.unix()).await;
    let (handle, kernel) = vadd_on_the_card(&client).await;
    let device = client
        .alloc(handle, MemoryKind::Device, 4096, None)
        .await
        .unwrap()
        .memory;
    let queue = client.create_queue(handle).await.unwrap();
    let commands: Vec<Command> = (0..3 * MAX_IN_FLIGHT as u64)
        .map(|tag| Command {
            tag,
            work: Some(Work::Launch(LaunchRequest {
                session: String::new(),
                queue,
                kernel,
                args: vec![
                    memory_arg(device),
                    memory_arg(device),
                    memory_arg(device),
                    u32_arg(1),
                ],
            })),
        })
        .collect();
    let request = SubmitRequest {
        session: client.session().to_string(),
        commands,
    };
    // The request half stays open (a pending stream) until every completion is in.
    let (outbound, stream) = tokio::sync::mpsc::channel(1);
    outbound.send(request).await.unwrap();
    let mut replies = client
        .rpc()
        .submit(tokio_stream::wrappers::ReceiverStream::new(stream))
        .await
        .unwrap()
        .into_inner();
    let mut heard = 0;
    while heard < 3 * MAX_IN_FLIGHT {
        let reply = tokio::time::timeout(Duration::from_secs(30), replies.message())
            .await
            .expect("the stream goes on past its in-flight cap")
            .unwrap()
            .unwrap();
        assert!(reply.completions.iter().all(|c| c.code == 0), "{reply:?}");
        heard += reply.completions.len();
    }
    drop((outbound, client));
    node.stop().await;
}
