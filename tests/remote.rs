//! `builtin:remote` end to end: a host whose only plugin is the proxy reaches nodes served in
//! this process (over the Unix socket and over mutual TLS) through the `remote` import, and
//! runs the canonical workloads on their devices byte-exact through the ordinary host API. A
//! node that is missing, silent, stopped or not granted fails its own devices with an error
//! naming it, in bounded time, and is reached again once it is back.

use crate::remote;
use crate::support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use accelhost::workloads::{self, DemoSettings};
use accelhost::{Config, Filter, Host, OpenMode, PluginStatus, Token};
use accelhost_node::NodeConnector;
use accelhost_node::reach::Reach;
use remote::{Pki, RunningNode, start_in, uid};
use support::{cache_dir, json_path, scratch_dir};

/// A host on config text `json`, with the node connector.
fn remote_host(json: &str) -> Host {
    remote_host_reaching(json).0
}

/// [`remote_host`], and what its connector sees of the nodes.
fn remote_host_reaching(json: &str) -> (Host, Arc<Reach>) {
    let dir = scratch_dir("remote-client");
    let path = dir.join("accelhost.json");
    std::fs::write(&path, json).unwrap();
    let connector = Arc::new(NodeConnector::new());
    let reach = connector.reach();
    let host = Host::builder()
        .config(Config::load(&path).unwrap())
        .cache_dir(cache_dir())
        .remote(connector)
        .build()
        .unwrap();
    (host, reach)
}

/// The proxy's entry: `hosts` it is configured for, `granted` (endpoint, tls) its grants name.
fn proxy(hosts: &[String], granted: &[(String, Option<String>)], call_timeout_ms: u64) -> String {
    let grants: Vec<String> = granted
        .iter()
        .map(|(endpoint, tls)| match tls {
            Some(tls) => format!(r#"{{"endpoint": "{endpoint}", "tls": {tls}}}"#),
            None => format!(r#"{{"endpoint": "{endpoint}"}}"#),
        })
        .collect();
    format!(
        r#"{{"plugins": [{{"name": "remote", "module": "builtin:remote",
             "config": {{"hosts": {}}},
             "grants": {{"remote": [{}], "dma_memory_mib": 1024}},
             "load_policy": {{"busy_percent": 100, "call_timeout_ms": {call_timeout_ms}}}}}]}}"#,
        serde_json::to_string(hosts).unwrap(),
        grants.join(", ")
    )
}

fn unix_endpoint(node: &RunningNode) -> String {
    format!("unix://{}", node.socket.display())
}

async fn start_unix_node() -> RunningNode {
    start_unix_node_in(scratch_dir("remote-node")).await
}

/// A node serving this uid every device on a socket in `dir` (again, after a stop).
async fn start_unix_node_in(dir: std::path::PathBuf) -> RunningNode {
    let config = format!(
        r#"{{"node_name": "node-u",
            "listen": {{"unix": {{"path": "@SOCKET@", "mode": "0600"}}}},
            "clients": [{{"name": "proxy", "unix_uid": {},
                          "grants": {{"devices": ["*"], "reconfigure": true, "dma_memory_mib": 2048}}}}]}}"#,
        uid()
    );
    start_in(dir, &config).await
}

/// The proxy's entry for the one node at `endpoint`, granted it without TLS.
fn one_node(endpoint: &str, call_timeout_ms: u64) -> String {
    proxy(
        &[endpoint.to_string()],
        &[(endpoint.to_string(), None)],
        call_timeout_ms,
    )
}

/// Runs `token`'s canonical workload (small sizes) and asserts every measurement verified.
fn run_canonical(host: &Host, token: &Token) -> usize {
    let workload =
        workloads::recognize(token).unwrap_or_else(|why| panic!("{}: {why}", token.id()));
    let settings = DemoSettings {
        sizes: vec![1 << 20],
        elements: vec![1 << 10],
        launches: 20,
    };
    let outcomes = (workload.run)(host, token, &settings, &mut |_| {});
    assert!(!outcomes.is_empty());
    for outcome in &outcomes {
        if let Err(why) = &outcome.result {
            panic!("{} on {}: {why}", outcome.workload, token.id());
        }
    }
    outcomes.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canonical_workloads_run_byte_exact_through_the_proxy() {
    let node = start_unix_node().await;
    let endpoint = unix_endpoint(&node);
    let config = one_node(&endpoint, 10_000);
    tokio::task::spawn_blocking(move || {
        let host = remote_host(&config);
        let found = host.enumerate(&[Filter {
            host: Some("*".into()),
            ..Filter::new()
        }]);
        assert!(found.failures.is_empty(), "{:?}", found.failures);
        let names: Vec<String> = found
            .tokens
            .iter()
            .map(|t| t.properties().name.to_string())
            .collect();
        for family in ["dfl/", "cxl/", "xocl/"] {
            assert!(
                names.iter().any(|n| n.contains(family)),
                "the node's {family} devices are listed: {names:?}"
            );
        }
        for token in &found.tokens {
            assert_eq!(token.plugin(), "remote");
            assert_eq!(
                token.properties().host,
                "localhost",
                "a node on this machine's socket serves local devices"
            );
        }
        let mut ran = 0;
        for token in &found.tokens {
            if workloads::recognize(token).is_ok() {
                ran += run_canonical(&host, token);
            }
        }
        assert!(
            ran >= 5,
            "hello_fpga, CAPI memcpy and vadd, XRT vadd ran: {ran}"
        );
    })
    .await
    .unwrap();
    let metrics = node.metrics.render();
    assert!(
        !metrics.contains("call=\"BufferSync\""),
        "a local proxy maps the node's memory and never mirrors it:\n{metrics}"
    );
    let until = Instant::now() + Duration::from_secs(10);
    while !node.sessions.is_empty() {
        assert!(
            Instant::now() < until,
            "the proxy's session ends with its host"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    node.stop().await;
}

/// A node serving this uid every device on a socket in `dir`, from a host built without
/// `shareable_memory`: its clients' buffers are mirrored.
async fn start_unshared_node(dir: std::path::PathBuf) -> RunningNode {
    let host = Arc::new(
        tokio::task::spawn_blocking(support::default_host)
            .await
            .unwrap(),
    );
    let config = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@", "mode": "0600"}}}},
            "clients": [{{"name": "proxy", "unix_uid": {},
                          "grants": {{"devices": ["*"], "reconfigure": true,
                                      "dma_memory_mib": 2048}}}}]}}"#,
        uid()
    );
    remote::start_with_host(dir, &config, host).await
}

/// A node whose memory cannot be shared (a host built without `shareable_memory`, or a
/// driver's mapping) still serves a local proxy: through mirrors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_shareable_memory_a_local_proxy_mirrors() {
    let node = start_unshared_node(scratch_dir("remote-mirrored")).await;
    let config = one_node(&unix_endpoint(&node), 10_000);
    tokio::task::spawn_blocking(move || {
        let host = remote_host(&config);
        for token in host.enumerate(&[]).tokens {
            if workloads::recognize(&token).is_ok() {
                run_canonical(&host, &token);
            }
        }
    })
    .await
    .unwrap();
    assert!(node.metrics.render().contains("call=\"BufferSync\""));
    node.stop().await;
}

/// The first XRT card `host` lists, opened, with the one-CU vadd loaded.
fn vadd_on_the_xrt_card(host: &Host) -> (accelhost::Handle, accelhost::Kernel) {
    let tokens = host.enumerate(&[]).tokens;
    let card = tokens
        .iter()
        .find(|t| workloads::vadd::is_xocl(t))
        .expect("an XRT card");
    let handle = host.open(card, OpenMode::Shared).unwrap();
    let kernel = workloads::vadd::load(&handle, 1).unwrap();
    (handle, kernel)
}

/// The node's count of `call` in its metrics.
fn calls(node: &RunningNode, call: &str) -> u64 {
    let wanted = format!("call=\"{call}\"");
    node.metrics
        .render()
        .lines()
        .filter(|line| !line.starts_with('#') && line.contains(&wanted))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|n| n as u64)
        .sum()
}

/// Through mirrors, a launch completes once a pull shows what the device wrote, and one pull
/// serves every completion that came back before it set out: a queue of tiny launches costs
/// far fewer pulls than launches (it cost one each, a round trip per launch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrored_launches_share_their_pulls() {
    let node = start_unshared_node(scratch_dir("remote-mirrored-launches")).await;
    let config = one_node(&unix_endpoint(&node), 10_000);
    let launches = 2000;
    let before = calls(&node, "BufferSync");
    tokio::task::spawn_blocking(move || {
        let host = remote_host(&config);
        let (handle, kernel) = vadd_on_the_xrt_card(&host);
        let report = workloads::vadd::tiny_launches(&handle, &kernel, launches).unwrap();
        assert!(report.verified, "each launch saw the one before it");
        // Every completion was heard after a pull: the last output is in the mirror.
        let chain = workloads::vadd::TinyLaunchChain::new(&handle).unwrap();
        for i in 0..5 {
            chain.launch(&kernel, i).unwrap().wait().unwrap();
            assert!(
                chain.verify(i + 1).unwrap(),
                "launch {i}'s output is pulled when it completes"
            );
        }
    })
    .await
    .unwrap();
    let pulls = calls(&node, "BufferSync") - before;
    assert!(
        pulls < u64::from(launches) / 4,
        "{pulls} pulls for {launches} launches"
    );
    node.stop().await;
}

/// How many launch calls (`enqueue-launch` and `enqueue-launches`) the node made into its
/// plugins.
fn node_launch_calls(node: &RunningNode) -> u64 {
    node.metrics
        .render_prometheus_text()
        .lines()
        .filter(|line| line.starts_with("accelhost_plugin_calls_total{"))
        .filter(|line| {
            line.contains(r#"call="enqueue-launch""#) || line.contains(r#"call="enqueue-launches""#)
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Launches a program holds back reach the node as batches: through the proxy, a queue of
/// tiny launches nobody asks an event of is a few calls into the node's plugin (it was one
/// per launch), each launch still seeing the one before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn launches_held_back_reach_the_node_in_batches() {
    let node = start_unix_node().await;
    let config = one_node(&unix_endpoint(&node), 10_000);
    let launches = 2000;
    let before = node_launch_calls(&node);
    tokio::task::spawn_blocking(move || {
        let host = remote_host(&config);
        let (handle, kernel) = vadd_on_the_xrt_card(&host);
        let report = workloads::vadd::tiny_launches_held_back(&handle, &kernel, launches).unwrap();
        assert!(report.verified, "each launch saw the one before it");
    })
    .await
    .unwrap();
    let calls = node_launch_calls(&node) - before;
    assert!(
        calls <= u64::from(launches) / 100,
        "{calls} launch calls on the node for {launches} launches"
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_node_s_devices_carry_its_name_and_answer_host_filters() {
    let pki = Pki::new();
    let config = r#"{"node_name": "node-a",
                     "listen": {"tcp": {"address": "127.0.0.1:0", "certificate": "node.pem",
                                        "key": "node.key", "client_ca": "client-ca.pem"}},
                     "clients": [{"name": "peer", "certificate_san": "client1.test",
                                  "grants": {"devices": ["dfl/*"]}}]}"#;
    let node = start_in(pki.dir.clone(), config).await;
    let endpoint = format!("127.0.0.1:{}", node.tcp.unwrap().port());
    let tls = format!(
        r#"{{"ca": "{}", "certificate": "{}", "key": "{}", "server_name": "localhost"}}"#,
        json_path(&pki.dir.join("node-ca.pem")),
        json_path(&pki.dir.join("good.pem")),
        json_path(&pki.dir.join("good.key")),
    );
    let config = proxy(
        std::slice::from_ref(&endpoint),
        &[(endpoint.clone(), Some(tls))],
        10_000,
    );
    tokio::task::spawn_blocking(move || {
        let host = remote_host(&config);
        let on = |filter: &str| {
            let found = host.enumerate(&[Filter {
                host: Some(filter.into()),
                ..Filter::new()
            }]);
            assert!(found.failures.is_empty(), "{filter}: {:?}", found.failures);
            found.tokens
        };
        let all = on("*");
        assert_eq!(all.len(), 1, "the grants show the node's dfl port only");
        assert_eq!(all[0].properties().host, "node-a");
        assert_eq!(on("^localhost").len(), 1);
        assert_eq!(on("node-a").len(), 1);
        assert!(
            on("localhost").is_empty(),
            "a remote node's devices are not local"
        );
        assert!(on("node-b").is_empty());
        run_canonical(&host, &all[0]);
    })
    .await
    .unwrap();
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_node_fails_alone_and_a_stopped_node_is_reached_again() {
    let node = start_unix_node().await;
    let dir = node.dir.clone();
    let live = unix_endpoint(&node);
    let missing = format!(
        "unix://{}",
        json_path(&scratch_dir("no-node").join("none.sock"))
    );
    let config = proxy(
        &[missing.clone(), live.clone()],
        &[(missing.clone(), None), (live.clone(), None)],
        5_000,
    );
    let (host, reach) = tokio::task::spawn_blocking(move || remote_host_reaching(&config))
        .await
        .unwrap();
    let reachable = |endpoint: &str| reach.nodes().get(endpoint).map(|n| n.reachable);

    let probe = host.clone();
    let (token, mmio) = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let found = probe.enumerate(&[]);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "a missing node costs little"
        );
        assert!(found.failures.is_empty(), "a partial answer is no failure");
        let token = found
            .tokens
            .into_iter()
            .find(|t| t.properties().name.contains("dfl/"))
            .expect("the live node's NLB0 port");
        let handle = probe.open(&token, OpenMode::Exclusive).unwrap();
        let mmio = handle.map_mmio(0).unwrap();
        assert_eq!(
            mmio.read64(accelhost::families::dfl::abi::nlb0::CSR_AFU_ID_H)
                .unwrap(),
            accelhost::families::dfl::abi::nlb0::AFU_ID.high
        );
        (token, (handle, mmio))
    })
    .await
    .unwrap();
    assert_eq!(reachable(&live), Some(true));
    assert_eq!(reachable(&missing), Some(false));
    assert!(reach.nodes()[&live].round_trip.is_some());

    node.stop().await;
    let (handle, mmio) = mmio;
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        let err = mmio
            .read64(accelhost::families::dfl::abi::nlb0::CSR_AFU_ID_H)
            .unwrap_err()
            .to_string();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "within the call timeout"
        );
        assert!(err.contains("node"), "the error names the node: {err}");
        drop(handle);
    })
    .await
    .unwrap();
    assert_eq!(
        reachable(&live),
        Some(false),
        "a stopped node is unreachable"
    );

    let restarted = start_unix_node_in(dir).await;
    let probe = host.clone();
    tokio::task::spawn_blocking(move || {
        let until = Instant::now() + Duration::from_secs(15);
        loop {
            let found = probe.enumerate(&[]);
            if let Some(again) = found
                .tokens
                .iter()
                .find(|t| t.properties().name == token.properties().name)
            {
                run_canonical(&probe, again);
                break;
            }
            assert!(
                Instant::now() < until,
                "the node is reached again: {:?}",
                found.failures
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let status = probe.plugin("remote").unwrap().status;
        assert_eq!(status, PluginStatus::Running, "no fault on the way");
    })
    .await
    .unwrap();
    assert_eq!(reachable(&live), Some(true), "reached again");
    drop(host);
    restarted.stop().await;
}

#[test]
fn a_silent_node_costs_a_bounded_wait_and_no_fault() {
    let dir = scratch_dir("silent-node");
    let socket = dir.join("silent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let held = std::thread::spawn(move || {
        // Accepts and never answers, as a node stopped with SIGSTOP would.
        let mut kept = Vec::new();
        for stream in listener.incoming().take(4) {
            kept.push(stream);
        }
        std::thread::sleep(Duration::from_secs(5));
    });
    let endpoint = format!("unix://{}", json_path(&socket));
    let host = remote_host(&one_node(&endpoint, 2_000));
    for _ in 0..2 {
        let started = Instant::now();
        let found = host.enumerate(&[]);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(found.tokens.is_empty());
        let message = found.failures[0].to_string();
        assert!(
            message.contains("silent.sock"),
            "the error names the node: {message}"
        );
    }
    let status = host.plugin("remote").unwrap().status;
    assert_eq!(
        status,
        PluginStatus::Running,
        "waiting on a node is no fault of the plugin"
    );
    drop(host);
    let _ = held;
}

#[test]
fn an_endpoint_the_grants_do_not_name_is_refused() {
    let dir = scratch_dir("ungranted");
    let asked = format!("unix://{}", json_path(&dir.join("a.sock")));
    let granted = format!("unix://{}", json_path(&dir.join("b.sock")));
    let host = remote_host(&proxy(&[asked], &[(granted, None)], 2_000));
    let found = host.enumerate(&[]);
    let message = found.failures[0].to_string();
    assert!(
        message.contains("may not connect to node") && message.contains("no remote grant"),
        "{message}"
    );
}

#[test]
fn without_a_connector_the_proxy_says_the_host_cannot_reach_nodes() {
    let dir = scratch_dir("no-connector");
    let endpoint = format!("unix://{}", json_path(&dir.join("a.sock")));
    let path = dir.join("accelhost.json");
    std::fs::write(&path, one_node(&endpoint, 2_000)).unwrap();
    let host = Host::builder()
        .config(Config::load(&path).unwrap())
        .cache_dir(cache_dir())
        .build()
        .unwrap();
    let message = host.enumerate(&[]).failures[0].to_string();
    assert!(message.contains("cannot reach nodes"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_handle_s_buffers_leave_the_mirrors_of_the_others() {
    let node = start_unix_node().await;
    let endpoint = unix_endpoint(&node);
    let config = one_node(&endpoint, 10_000);
    tokio::task::spawn_blocking(move || {
        let host = remote_host(&config);
        let token = host
            .enumerate(&[])
            .tokens
            .into_iter()
            .find(|t| t.properties().name.ends_with("capi0.0s"))
            .expect("the node's CAPI slave node");
        let first = host.open(&token, OpenMode::Shared).unwrap();
        let second = host.open(&token, OpenMode::Shared).unwrap();
        // Kept past the close: the node released it, so it must not be synced again.
        let kept = first.prepare_buffer(4096).unwrap();
        first.close().unwrap();
        let report = accelhost::workloads::capi::memcpy_run(&second, 16, 128).unwrap();
        assert!(
            report.verified(),
            "the other handle's work reads back byte-exact"
        );
        drop(kept);
        second.close().unwrap();
    })
    .await
    .unwrap();
    node.stop().await;
}
