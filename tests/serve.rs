//! `accelhost serve` as an operator runs it: its help, its config errors, `check-config` on a
//! serve config, and the process's life (clients, SIGKILL mid-call, a stale socket, SIGTERM).

use crate::served;
use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use accelhost_node::{Client, ClientOptions, Endpoint};
use served::Served;
use support::{ShortScratch, json_path, run_accelhost, scratch_dir, text};

const BIN: &str = env!("CARGO_BIN_EXE_accelhost");

fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

fn serve_config(dir: &Path) -> PathBuf {
    let path = dir.join("serve.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"node_name": "cli-node",
                "listen": {{"unix": {{"path": "{}"}}}},
                "clients": [{{"name": "operator", "unix_uid": {},
                              "grants": {{"devices": ["*"], "reconfigure": true}}}}]}}"#,
            json_path(&dir.join("node.sock")),
            uid()
        ),
    )
    .unwrap();
    path
}

#[test]
fn serve_help_explains_the_config() {
    let out = run_accelhost(BIN, Path::new("."), &["serve", "--help"], &[]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for needle in [
        "certificate_san",
        "unix_uid",
        "client_ca",
        "dma_memory_mib",
        "reconfigure",
        "SIGTERM",
        "check-config",
    ] {
        assert!(
            help.contains(needle),
            "serve --help lacks {needle}:\n{help}"
        );
    }
}

#[test]
fn a_bad_serve_config_names_the_file_and_field() {
    let dir = scratch_dir("serve-bad");
    let path = dir.join("serve.json");
    std::fs::write(
        &path,
        r#"{"listen": {"unix": {"path": "s"}}, "clients": [{"name": "x", "unix_uid": 1, "grants": {"devices": ["a*b"]}}]}"#,
    )
    .unwrap();
    for args in [
        vec!["serve", "serve.json"],
        vec!["check-config", "serve.json"],
    ] {
        let out = run_accelhost(BIN, &dir, &args, &[]);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("serve.json: clients[0].grants.devices[0]: 'a*b' is not a device id"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn check_config_checks_a_serve_config_and_its_files() {
    let dir = scratch_dir("serve-check");
    serve_config(&dir);
    let out = run_accelhost(BIN, &dir, &["check-config", "serve.json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("a valid serve config; node 'cli-node', 1 client(s)"),
        "{said}"
    );
    assert!(
        said.contains(&format!("client 'operator' (uid {})", uid())),
        "{said}"
    );

    std::fs::write(
        dir.join("tls.json"),
        r#"{"listen": {"tcp": {"address": "127.0.0.1:0", "certificate": "missing.pem",
                              "key": "missing.key", "client_ca": "missing-ca.pem"}}}"#,
    )
    .unwrap();
    let out = run_accelhost(BIN, &dir, &["check-config", "tls.json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("tls.json: listen.tcp.certificate:"),
        "{}",
        text(&out.stderr)
    );

    let plugins = ShortScratch::new("check");
    std::fs::write(
        dir.join("k8s.json"),
        format!(
            r#"{{"listen": {{"unix": {{"path": "node.sock"}}}},
                "kubernetes": {{"device_plugin_dir": "{}", "resource_domain": "example.org"}}}}"#,
            plugins.0.display()
        ),
    )
    .unwrap();
    let out = run_accelhost(BIN, &dir, &["check-config", "k8s.json"], &[]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(
        said.contains(&format!(
            "kubelet device plugin: registers through {}",
            plugins.0.join("kubelet.sock").display()
        )) && said.contains("resources example.org/af-<AFU id>"),
        "{said}"
    );
    std::fs::write(
        dir.join("bad-k8s.json"),
        r#"{"listen": {"unix": {"path": "node.sock"}}, "kubernetes": {"dma_memory_mib": 100000}}"#,
    )
    .unwrap();
    let out = run_accelhost(BIN, &dir, &["check-config", "bad-k8s.json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("bad-k8s.json: kubernetes.dma_memory_mib: 100000 is outside"),
        "{}",
        text(&out.stderr)
    );
}

/// The runtime the tests' clients run on.
fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `accelhost serve` of the config `serve_config` wrote in `dir`.
fn start(dir: &Path) -> Served {
    Served::start(&[BIN], dir, "accelhost serve: node 'cli-node' on unix://").0
}

#[test]
fn the_cli_lists_and_demos_a_running_node_s_devices_through_accelhost_endpoint() {
    let dir = scratch_dir("serve-endpoint");
    serve_config(&dir);
    let mut node = start(&dir);
    let endpoint = format!("unix://{}", dir.join("node.sock").display());
    let env = [("ACCELHOST_ENDPOINT", endpoint.as_str())];
    let out = run_accelhost(BIN, &dir, &["list", "--host", "*", "--json"], &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let devices: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(devices.len() >= 4, "{devices:?}");
    assert!(
        devices.iter().all(|d| d["plugin"] == "remote"),
        "{devices:?}"
    );
    let out = run_accelhost(BIN, &dir, &["plugins"], &env);
    assert!(
        text(&out.stdout).contains("builtin:remote"),
        "the node replaces the plugins: {}",
        text(&out.stdout)
    );
    let out = run_accelhost(
        BIN,
        &dir,
        &[
            "demo",
            "--host",
            "*",
            "--sizes",
            "1MiB",
            "--elements",
            "1Ki",
            "--launches",
            "10",
        ],
        &env,
    );
    let table = text(&out.stdout);
    assert!(out.status.success(), "{table}\n{}", text(&out.stderr));
    for workload in ["hello_fpga", "capi memcpy", "capi vadd", "vadd 1 Ki"] {
        assert!(
            table
                .lines()
                .any(|l| l.contains(workload) && l.contains("verified")),
            "{workload} verified on the node's device:\n{table}"
        );
    }
    let out = run_accelhost(
        BIN,
        &dir,
        &["list"],
        &[("ACCELHOST_ENDPOINT", "localhost:7700")],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("ACCELHOST_ENDPOINT"),
        "{}",
        text(&out.stderr)
    );
    node.signal(libc::SIGTERM);
    assert!(node.wait(Duration::from_secs(30)).success());
}

#[test]
fn a_node_killed_mid_call_fails_the_call_and_sigterm_stops_cleanly() {
    let dir = scratch_dir("serve-life");
    serve_config(&dir);
    let socket = dir.join("node.sock");
    let endpoint = Endpoint::Unix(socket.clone());
    let runtime = client_runtime();

    let mut served = start(&dir);
    let started = runtime.block_on(async {
        let client = Client::connect(&endpoint, ClientOptions::default())
            .await
            .unwrap();
        assert_eq!(client.client_name(), "operator");
        let devices = client.enumerate(vec![]).await.unwrap();
        assert_eq!(devices.len(), 5);
        let handle = client.open("dfl/emu:dfl0", false).await.unwrap();
        let (region, _) = client.map_mmio(handle, 0).await.unwrap();
        let polling = tokio::spawn(async move {
            let result = client
                .poll64(region, 0x100, u64::MAX, 1, Duration::from_secs(50))
                .await;
            (result, client)
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        served.signal(libc::SIGKILL);
        let killed = Instant::now();
        let (result, _client) = polling.await.unwrap();
        let err = result.unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("node unix://{}: MmioPoll:", socket.display())),
            "{err}"
        );
        killed.elapsed()
    });
    assert!(
        started < Duration::from_secs(10),
        "the call ended {started:?} after the kill"
    );
    served.wait(Duration::from_secs(10));
    assert!(socket.exists(), "SIGKILL leaves the socket file behind");

    // A new node replaces the stale socket, serves, and stops cleanly on SIGTERM with a
    // client still attached and holding a device.
    let mut served = start(&dir);
    runtime.block_on(async {
        let client = Client::connect(&endpoint, ClientOptions::default())
            .await
            .unwrap();
        client.enumerate(vec![]).await.unwrap();
        client.open("dfl/emu:dfl0", false).await.unwrap();
        served.signal(libc::SIGTERM);
        let status = served.wait(Duration::from_secs(30));
        assert!(status.success(), "{status:?}");
        assert!(!client.is_attached() || client.enumerate(vec![]).await.is_err());
    });
    served.wait_for("accelhost serve: stopped");
    assert!(!socket.exists(), "SIGTERM removes the socket file");
}

#[test]
fn sighup_reloads_the_serve_config() {
    let dir = scratch_dir("serve-reload");
    let path = serve_config(&dir);
    let endpoint = Endpoint::Unix(dir.join("node.sock"));
    let runtime = client_runtime();
    let mut served = start(&dir);
    let client = runtime.block_on(async {
        let client = Client::connect(&endpoint, ClientOptions::default())
            .await
            .unwrap();
        assert_eq!(client.enumerate(vec![]).await.unwrap().len(), 5);
        client
    });

    // Narrower grants: the operator's session ends; a new one sees only the dfl port.
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace(r#"["*"]"#, r#"["dfl/*"]"#)).unwrap();
    served.signal(libc::SIGHUP);
    served.wait_for("reloaded serve.json; 0 session(s) kept, 1 ended (clients operator)");
    runtime.block_on(async {
        assert!(client.enumerate(vec![]).await.is_err());
        let again = Client::connect(&endpoint, ClientOptions::default())
            .await
            .unwrap();
        assert_eq!(again.enumerate(vec![]).await.unwrap().len(), 1);
    });

    // A config that does not load leaves the running one in force, and the next SIGHUP is
    // still read: device patterns ending in a multi-byte character once panicked the reader.
    std::fs::write(&path, "{ not json").unwrap();
    served.signal(libc::SIGHUP);
    served.wait_for("not reloaded, the running config stays: ");
    std::fs::write(&path, text.replace(r#"["*"]"#, r#"["dfl/é", "a*é"]"#)).unwrap();
    served.signal(libc::SIGHUP);
    served.wait_for("'a*é' is not a device id");
    std::fs::write(&path, text.replace(r#"["*"]"#, r#"["xocl/é*"]"#)).unwrap();
    served.signal(libc::SIGHUP);
    served.wait_for("reloaded serve.json;");
    runtime.block_on(async {
        let again = Client::connect(&endpoint, ClientOptions::default())
            .await
            .unwrap();
        assert!(again.enumerate(vec![]).await.unwrap().is_empty());
    });
    served.signal(libc::SIGTERM);
    assert!(served.wait(Duration::from_secs(30)).success());
}

fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/<pid>/status")
}

/// Clients that ask for far more than they read: the node holds a few chunks per stream,
/// not what was asked for.
#[test]
fn readers_that_never_read_keep_the_node_bounded() {
    let dir = scratch_dir("serve-slow");
    serve_config(&dir);
    let endpoint = Endpoint::Unix(dir.join("node.sock"));
    let runtime = client_runtime();
    let served = start(&dir);
    let pid = served.child.id();
    runtime.block_on(async {
        let client = Client::connect(&endpoint, ClientOptions::default())
            .await
            .unwrap();
        client.enumerate(vec![]).await.unwrap();
        let handle = client.open("dfl/emu:dfl0", false).await.unwrap();
        let buffer = client.prepare_buffer(handle, 64 << 20).await.unwrap();
        client
            .fill_buffer(buffer.buffer, 0, 64 << 20, 7)
            .await
            .unwrap();
        let before = resident_kib(pid);
        // 8 reads of 64 MiB each (512 MiB asked for), none of them read.
        let mut streams = Vec::new();
        for _ in 0..8 {
            let stream = client
                .rpc()
                .buffer_read(accelhost_node::proto::BufferReadRequest {
                    session: client.session().into(),
                    object: buffer.buffer,
                    offset: 0,
                    length: 64 << 20,
                    chunk_bytes: 0,
                })
                .await
                .unwrap()
                .into_inner();
            streams.push(stream);
        }
        // A ninth is refused: the session's streams are bounded.
        let ninth = client
            .rpc()
            .buffer_read(accelhost_node::proto::BufferReadRequest {
                session: client.session().into(),
                object: buffer.buffer,
                offset: 0,
                length: 4096,
                chunk_bytes: 0,
            })
            .await
            .unwrap_err();
        assert!(
            ninth
                .message()
                .contains("already has 8 answer streams open (limits.max_streams_per_session)"),
            "{ninth:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let grown_mib = resident_kib(pid).saturating_sub(before) / 1024;
        // Per stream: a chunk queued, one in hand and what the transport buffers, of at
        // most 1 MiB each.
        assert!(
            grown_mib < 8 * 4 + 32,
            "the node grew by {grown_mib} MiB for 512 MiB of unread data"
        );
        // Unread streams hold their connection's flow-control window; dropping them frees it
        // and their permits, and a slow reader then gets every byte.
        let mut first = streams.remove(0);
        drop(streams);
        let mut got = 0u64;
        while let Some(data) = first.message().await.unwrap() {
            assert!(data.data.iter().all(|&b| b == 7));
            got += data.data.len() as u64;
        }
        assert_eq!(got, 64 << 20);
        eprintln!("unread streams grew the node by {grown_mib} MiB");
    });
}

/// Uploads that claim large images and then stall: the node grows with what arrives, not
/// with what a header claims, and a session has at most 8 uploads and streams open.
#[test]
fn stalled_uploads_keep_the_node_bounded() {
    use accelhost_node::proto::{ProgramChunk, ReconfigureHeader};
    use tokio_stream::StreamExt;

    let dir = scratch_dir("serve-uploads");
    serve_config(&dir);
    let endpoint = Endpoint::Unix(dir.join("node.sock"));
    let runtime = client_runtime();
    let served = start(&dir);
    let pid = served.child.id();
    runtime.block_on(async {
        let client = Client::connect(&endpoint, ClientOptions::default())
            .await
            .unwrap();
        client.enumerate(vec![]).await.unwrap();
        let handle = client.open("xocl/emu:xocl0", false).await.unwrap();
        let before = resident_kib(pid);
        let upload = |data: usize| ProgramChunk {
            header: Some(ReconfigureHeader {
                session: client.session().into(),
                handle,
                slot: 0,
                image_bytes: 500 << 20,
            }),
            data: vec![0; data].into(),
        };
        // 8 uploads each claiming 500 MiB (4000 MiB in all), 64 KiB sent, then nothing.
        let mut stalled = Vec::new();
        for _ in 0..8 {
            let mut rpc = client.rpc();
            let first = upload(64 << 10);
            stalled.push(tokio::spawn(async move {
                rpc.create_program(tokio_stream::iter([first]).chain(tokio_stream::pending()))
                    .await
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let ninth = client
            .rpc()
            .create_program(tokio_stream::iter([upload(16)]))
            .await
            .unwrap_err();
        assert!(
            ninth.message().contains("(limits.max_streams_per_session)"),
            "{ninth:?}"
        );
        let grown_mib = resident_kib(pid).saturating_sub(before) / 1024;
        assert!(
            grown_mib < 64,
            "the node grew by {grown_mib} MiB for 4000 MiB of claimed images"
        );
        for upload in stalled {
            upload.abort();
        }
        eprintln!("stalled uploads grew the node by {grown_mib} MiB");
    });
}

#[test]
fn top_shows_a_running_node_s_plugins_devices_and_clients() {
    let dir = scratch_dir("serve-top");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        dir.join("serve.json"),
        format!(
            r#"{{"node_name": "cli-node",
                "listen": {{"unix": {{"path": "{}"}}, "metrics": {{"address": "127.0.0.1:{port}"}}}},
                "clients": [{{"name": "operator", "unix_uid": {},
                              "grants": {{"devices": ["*"], "reconfigure": true}}}}]}}"#,
            json_path(&dir.join("node.sock")),
            uid()
        ),
    )
    .unwrap();
    let mut node = start(&dir);
    let endpoint = format!("unix://{}", dir.join("node.sock").display());
    let listed = run_accelhost(
        BIN,
        &dir,
        &["list", "--host", "*"],
        &[("ACCELHOST_ENDPOINT", endpoint.as_str())],
    );
    assert!(listed.status.success(), "{}", text(&listed.stderr));

    let out = run_accelhost(
        BIN,
        &dir,
        &["top", "--serve-config", "serve.json", "--once"],
        &[],
    );
    let frame = text(&out.stdout);
    assert!(out.status.success(), "{frame}\n{}", text(&out.stderr));
    assert!(
        frame.contains(&format!("http://127.0.0.1:{port}/metrics")),
        "{frame}"
    );
    for (section, row) in [
        ("PLUGINS", "dfl "),
        ("DEVICES", "dfl/emu:dfl0 "),
        ("CLIENTS", "operator "),
    ] {
        assert!(frame.contains(section), "{section} in:\n{frame}");
        let line = frame.lines().find(|l| l.starts_with(row));
        assert!(line.is_some(), "a {row} row in:\n{frame}");
    }
    let dfl = frame.lines().find(|l| l.starts_with("dfl ")).unwrap();
    assert!(dfl.contains("running"), "{dfl}");
    let port_row = frame
        .lines()
        .find(|l| l.starts_with("dfl/emu:dfl0 "))
        .unwrap();
    assert!(port_row.contains("healthy"), "{port_row}");

    let out = run_accelhost(BIN, &dir, &["top", "127.0.0.1:1", "--once"], &[]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("http://127.0.0.1:1/metrics"),
        "{}",
        text(&out.stderr)
    );
    let out = run_accelhost(BIN, &dir, &["top", "--help"], &[]);
    assert!(
        text(&out.stdout).contains("Sections"),
        "{}",
        text(&out.stdout)
    );
    node.signal(libc::SIGTERM);
    assert!(node.wait(Duration::from_secs(30)).success());
}

/// SIGTERM while a client holds an upload open and silent: the node cuts it after its drain
/// time instead of waiting for the client.
#[test]
fn sigterm_ends_within_the_drain_time_whatever_clients_hold_open() {
    use accelhost_node::proto::{ProgramChunk, ReconfigureHeader};
    use tokio_stream::StreamExt;

    let dir = scratch_dir("serve-drain");
    serve_config(&dir);
    let endpoint = Endpoint::Unix(dir.join("node.sock"));
    let runtime = client_runtime();
    let mut served = start(&dir);
    runtime.block_on(async {
        let client = Client::connect(&endpoint, ClientOptions::default())
            .await
            .unwrap();
        client.enumerate(vec![]).await.unwrap();
        let handle = client.open("xocl/emu:xocl0", false).await.unwrap();
        let first = ProgramChunk {
            header: Some(ReconfigureHeader {
                session: client.session().into(),
                handle,
                slot: 0,
                image_bytes: 1 << 20,
            }),
            data: vec![0; 4096].into(),
        };
        let mut rpc = client.rpc();
        let silent = tokio::spawn(async move {
            rpc.create_program(tokio_stream::iter([first]).chain(tokio_stream::pending()))
                .await
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let asked = Instant::now();
        served.signal(libc::SIGTERM);
        let status = served.wait(accelhost_node::server::DRAIN + Duration::from_secs(20));
        assert!(status.success(), "{status:?}");
        eprintln!("stopped {:?} after SIGTERM", asked.elapsed());
        silent.abort();
    });
    served.wait_for("still open after the drain time");
}

/// A regular file (or folder) where the socket would go is refused by what it is, and kept.
#[test]
fn serve_never_removes_what_is_not_a_socket() {
    let dir = scratch_dir("serve-not-socket");
    serve_config(&dir);
    std::fs::write(dir.join("node.sock"), "precious").unwrap();
    let out = run_accelhost(BIN, &dir, &["serve", "serve.json"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("node.sock: is a regular file, not a socket"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("node.sock")).unwrap(),
        "precious"
    );
    std::fs::remove_file(dir.join("node.sock")).unwrap();
    std::fs::create_dir(dir.join("node.sock")).unwrap();
    let out = run_accelhost(BIN, &dir, &["serve", "serve.json"], &[]);
    assert!(
        text(&out.stderr).contains("node.sock: is a folder, not a socket"),
        "{}",
        text(&out.stderr)
    );
    assert!(dir.join("node.sock").is_dir());
}

/// CPU time (user + system) the process has used, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command's closing parenthesis; utime and stime are the 12th and
    // 13th of them.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// A node out of descriptors backs off accepting instead of spinning, and accepts again once
/// descriptors come free.
#[test]
fn a_node_out_of_descriptors_waits_instead_of_spinning() {
    let dir = scratch_dir("serve-emfile");
    // A descriptor limit below the connection caps, as when LimitNOFILE was left low: the
    // caps do not close connections before the descriptors run out.
    let config = serve_config(&dir);
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    json["limits"] = serde_json::json!({"max_connections_per_peer": 1024});
    std::fs::write(&config, json.to_string()).unwrap();
    let socket = dir.join("node.sock");
    let served = Served::start(
        &["prlimit", "--nofile=96:96", BIN],
        &dir,
        "accelhost serve: node 'cli-node' on unix://",
    )
    .0;
    let pid = served.child.id();
    // More connections than the node has descriptors left: it accepts what it can, and the
    // rest wait in the listen queue.
    let held: Vec<std::os::unix::net::UnixStream> = (0..160)
        .map_while(|_| std::os::unix::net::UnixStream::connect(&socket).ok())
        .collect();
    served.wait_for("cannot accept connections: out of descriptors");
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: sysconf cannot fail for this name.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    let used = cpu_ticks(pid) - before;
    assert!(
        used * 4 < 2 * ticks_per_second,
        "the node used {used} ticks of CPU in 2 s ({ticks_per_second} a second) while out of \
         descriptors, with {} connections waiting",
        held.len()
    );
    drop(held);
    served.wait_for("accepting connections again");
    let runtime = client_runtime();
    runtime.block_on(async {
        let client = Client::connect(&Endpoint::Unix(socket.clone()), ClientOptions::default())
            .await
            .unwrap();
        assert_eq!(client.enumerate(vec![]).await.unwrap().len(), 5);
    });
}

/// The serve config the README's example writes (its `printf` template, read from README.md),
/// for the uid of this process and a socket in `dir`.
fn readme_serve_config(dir: &Path) -> PathBuf {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let start = readme
        .find("printf '{\"listen\"")
        .expect("the README's serve example");
    let template = &readme[start + "printf '".len()..];
    let template = &template[..template.find("\\n' \\").expect("the template's end")];
    let config = template
        .replacen("%s", &dir.display().to_string(), 1)
        .replacen("%s", &uid().to_string(), 1);
    let path = dir.join("serve.json");
    std::fs::write(&path, config).unwrap();
    path
}

/// The README's first node, as a new user runs it: its serve example, then `accelhost demo`
/// at its default sizes through `ACCELHOST_ENDPOINT`, every row verified.
#[test]
fn the_readme_s_serve_example_runs_the_whole_demo() {
    let dir = scratch_dir("serve-readme");
    readme_serve_config(&dir);
    let out = run_accelhost(BIN, &dir, &["check-config", "serve.json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut node = Served::start(&[BIN], &dir, "accelhost serve: node '").0;
    let endpoint = format!("unix://{}", dir.join("node.sock").display());
    let out = run_accelhost(
        BIN,
        &dir,
        &["demo", "--host", "*"],
        &[("ACCELHOST_ENDPOINT", endpoint.as_str())],
    );
    let table = text(&out.stdout);
    assert!(out.status.success(), "{table}\n{}", text(&out.stderr));
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.contains("verified") || l.contains("FAILED"))
        .collect();
    assert_eq!(rows.len(), 7, "{table}");
    assert!(rows.iter().all(|r| r.contains("verified")), "{table}");
    node.signal(libc::SIGTERM);
    assert!(node.wait(Duration::from_secs(30)).success());
}

#[test]
fn a_node_killed_with_a_launch_on_its_ring_fails_the_launch_at_once() {
    use accelhost::workloads::capi;
    use accelhost::{Arg, MemoryKind, OpenMode};
    let dir = scratch_dir("serve-ring-kill");
    serve_config(&dir);
    let socket = dir.join("node.sock");
    let mut served = start(&dir);
    let endpoint = format!("unix://{}", socket.display());
    let host = accelhost::Host::builder()
        .config(accelhost::Config::for_endpoint(&endpoint).unwrap())
        .cache_dir(support::cache_dir())
        .remote(std::sync::Arc::new(accelhost_node::NodeConnector::new()))
        .build()
        .unwrap();
    let everywhere = accelhost::Filter {
        host: Some("*".into()),
        ..accelhost::Filter::new()
    };
    let token = host
        .enumerate(&[everywhere])
        .tokens
        .into_iter()
        .find(|t| capi::function(t) == Some("memcpy") && capi::node_kind(t) != Some('m'))
        .expect("the node's CAPI memcpy AFU");
    let handle = host.open(&token, OpenMode::Shared).unwrap();
    // A work queue of one line and no valid element: the AFU waits for work and never raises
    // the interrupt the launch finishes with.
    let work = handle.alloc(MemoryKind::Host, 4096).unwrap();
    let kernel = handle.builtin_program().unwrap().kernel("memcpy").unwrap();
    let queue = handle.create_queue().unwrap();
    let args = [
        Arg::Memory(&work),
        Arg::U32(1),
        Arg::U32(u32::from(capi::DONE_IRQ)),
    ];
    let pending = queue.enqueue_launch(&kernel, &args).unwrap();
    assert!(matches!(
        pending.wait_timeout(Duration::from_millis(500)),
        Err(accelhost::Error::WaitTimeout { .. })
    ));

    served.signal(libc::SIGKILL);
    let killed = Instant::now();
    let err = pending.wait_timeout(Duration::from_secs(30)).unwrap_err();
    let waited = killed.elapsed();
    assert!(
        matches!(err, accelhost::Error::Device { .. }),
        "the launch fails, it does not stay pending: {err}"
    );
    assert!(err.to_string().contains("exited"), "{err}");
    assert!(
        waited < Duration::from_secs(5),
        "heard {waited:?} after the kill"
    );
    served.wait(Duration::from_secs(10));
}
