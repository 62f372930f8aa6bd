//! A real Prometheus scrapes `accelhost serve`: `promtool check metrics` passes on what the
//! node serves, and Prometheus reads back a counter moving because of refusals this test
//! causes. Needs Debian's `prometheus` package (CI installs it); without it the trial is
//! reported ignored with the reason, or fails under `ACCELHOST_REQUIRE_TOOLCHAINS=1`.

use crate::served;
use crate::support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use accelhost::Host;
use accelhost_node::{Client, ClientOptions, Endpoint};
use served::Served;
use support::harness::{Outcome, Trial};
use support::{json_path, scratch_dir};

const BIN: &str = env!("CARGO_BIN_EXE_accelhost");

fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// A process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The body of `GET http://{address}{path}`.
fn get(address: &str, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    assert!(head.starts_with("HTTP/1.1 200"), "GET {path}: {head}");
    Ok(body.to_string())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn missing(tool: &str) -> Option<String> {
    support::tool_missing(
        tool,
        "--version",
        format!("`{tool}` is not installed (Debian's `prometheus` package has it)"),
    )
}

/// Starts `accelhost serve` in `dir` (an NLB0 card, an XRT card, and the chaos plugin, which
/// traps in `open` and restarts); returns it and its metrics address.
fn serve(dir: &Path) -> (Served, String) {
    let chaos = support::chaos_plugin_with(
        "chaos",
        r#"{"trap_in": "open"}"#,
        &[],
        r#""on_fault": "restart", "restart_backoff_ms": 100"#,
    );
    std::fs::write(
        dir.join("host.json"),
        format!(
            r#"{{"devices": [{{"id": "dfl0", "family": "dfl"}}, {{"id": "xocl0", "family": "xocl"}}],
                "plugins": [{{"name": "dfl", "module": "builtin:dfl", "grants": {{"devices": ["emu:dfl0"]}}}},
                            {{"name": "xocl", "module": "builtin:xocl", "grants": {{"devices": ["emu:xocl0"]}}}},
                            {chaos}]}}"#
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("serve.json"),
        format!(
            r#"{{"host_config": "host.json", "health_interval_ms": 200,
                "listen": {{"unix": {{"path": "{}"}}, "metrics": {{"address": "127.0.0.1:0"}}}},
                "clients": [{{"name": "operator", "unix_uid": {}, "grants": {{"devices": ["dfl/*", "chaos/*"]}}}}]}}"#,
            json_path(&dir.join("node.sock")),
            uid()
        ),
    )
    .unwrap();
    let (node, line) = Served::start(&[BIN], dir, "metrics at http://");
    let address = line
        .split_once("metrics at http://")
        .and_then(|(_, rest)| rest.split("/metrics").next())
        .expect("the metrics address")
        .to_string();
    (node, address)
}

fn refuse_an_open(runtime: &tokio::runtime::Runtime, client: &Client) {
    runtime.block_on(async {
        client.enumerate(vec![]).await.unwrap();
        let err = client.open("xocl/emu:xocl0", false).await.unwrap_err();
        assert!(err.to_string().contains("grants.devices"), "{err}");
    });
}

/// `promtool check metrics` passes on `text`.
fn promtool_check_metrics(text: &str) {
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let checked = check.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}\n{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr),
        text.chars().take(4096).collect::<String>()
    );
}

/// The value of `query` Prometheus reports, once it reports one equal to `expected`.
fn wait_for_value(prometheus: &str, query: &str, expected: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok(body) = get(prometheus, &format!("/api/v1/query?query={query}")) {
            if body.contains(&format!("\"{expected}\"]")) {
                return;
            }
            last = body;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("Prometheus never read {query} = {expected}; last answer: {last}");
}

fn prometheus_scrapes_the_node() -> Outcome {
    for tool in ["prometheus", "promtool"] {
        if let Some(why) = missing(tool) {
            return Outcome::Skipped(why);
        }
    }
    let dir = scratch_dir("prometheus");
    let (_node, metrics) = serve(&dir);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime
        .block_on(Client::connect(
            &Endpoint::Unix(dir.join("node.sock")),
            ClientOptions::default(),
        ))
        .unwrap();
    refuse_an_open(&runtime, &client);

    let text = get(&metrics, "/metrics").unwrap();
    for expected in [
        r#"accelhost_client_refusals_total{client="operator",call="Open"} 1"#,
        r#"accelhost_client_calls_total{client="operator",call="Enumerate"} 1"#,
        r#"accelhost_client_sessions{client="operator"} 1"#,
        r#"accelhost_plugin_state{plugin="dfl",state="running"} 1"#,
        r#"accelhost_plugin_restarts_total{plugin="xocl"} 0"#,
        r#"accelhost_device_healthy{device="dfl/emu:dfl0",plugin="dfl"} 1"#,
    ] {
        assert!(text.contains(expected), "no `{expected}` in:\n{text}");
    }
    promtool_check_metrics(&text);

    let (_prometheus, web) = start_prometheus(&dir, &metrics);
    let query = "accelhost_client_refusals_total%7Bcall%3D%22Open%22%7D";
    wait_for_value(&web, query, "1");
    refuse_an_open(&runtime, &client);
    refuse_an_open(&runtime, &client);
    wait_for_value(&web, query, "3");

    // A plugin fault: the chaos plugin traps in open; Prometheus reads the fault counted.
    let faults = "accelhost_plugin_faults_total%7Bplugin%3D%22chaos%22%2Ccause%3D%22trap%22%7D";
    runtime.block_on(async {
        client.enumerate(vec![]).await.unwrap();
        let trapped = client.open("chaos/chaos0", true).await.unwrap_err();
        assert!(trapped.to_string().contains("trap"), "{trapped}");
    });
    wait_for_value(&web, faults, "1");
    Outcome::Passed
}

/// Slow scrapers against `/metrics` at `address` until dropped: each keeps a connection
/// with a request half sent, and opens another `again` after the node closes it.
struct SlowScrapers {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

impl SlowScrapers {
    fn start(address: &str, count: usize, again: Duration) -> SlowScrapers {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let (stop, address) = (stop.clone(), address.to_string());
                std::thread::spawn(move || {
                    let mut closed = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let Ok(mut stream) = TcpStream::connect(&address) else {
                            std::thread::sleep(again);
                            continue;
                        };
                        let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n");
                        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                        let mut byte = [0u8; 1024];
                        while !stop.load(Ordering::Relaxed) {
                            match stream.read(&mut byte) {
                                Ok(0) => break,
                                Err(err)
                                    if err.kind() == std::io::ErrorKind::WouldBlock
                                        || err.kind() == std::io::ErrorKind::TimedOut => {}
                                _ => break,
                            }
                        }
                        closed += 1;
                        std::thread::sleep(again);
                    }
                    closed
                })
            })
            .collect();
        SlowScrapers { stop, threads }
    }

    /// Stops them; how many of their connections the node closed.
    fn stop(self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.threads.into_iter().map(|t| t.join().unwrap()).sum()
    }
}

/// Starts Prometheus scraping `metrics` every second, its web interface on a free port of
/// its own; returns it and that address.
fn start_prometheus(dir: &Path, metrics: &str) -> (Running, String) {
    let web = format!("127.0.0.1:{}", free_port());
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: accelhost\n    static_configs:\n      - targets: ['{metrics}']\n"
        ),
    )
    .unwrap();
    let prometheus = Running(
        Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    (prometheus, web)
}

/// Forty slow scrapers keep `/metrics` connections with half-sent requests open, from the
/// scraper's own address, and open new ones as the node closes theirs: Prometheus still
/// scrapes, and reads back counters as they move.
fn slow_scrapers_do_not_keep_prometheus_out() -> Outcome {
    if let Some(why) = missing("prometheus") {
        return Outcome::Skipped(why);
    }
    let dir = scratch_dir("slow-scrapers");
    let (_node, metrics) = serve(&dir);
    let slow = SlowScrapers::start(&metrics, 40, Duration::from_millis(200));
    std::thread::sleep(Duration::from_secs(1));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime
        .block_on(Client::connect(
            &Endpoint::Unix(dir.join("node.sock")),
            ClientOptions::default(),
        ))
        .unwrap();
    refuse_an_open(&runtime, &client);
    let (_prometheus, web) = start_prometheus(&dir, &metrics);
    let started = Instant::now();
    let query = "accelhost_client_refusals_total%7Bcall%3D%22Open%22%7D";
    wait_for_value(&web, query, "1");
    refuse_an_open(&runtime, &client);
    refuse_an_open(&runtime, &client);
    wait_for_value(&web, query, "3");
    // Not one scrape failed: the slow scrapers never took a scrape's place.
    std::thread::sleep(Duration::from_secs(15).saturating_sub(started.elapsed()));
    let up = "up%7Bjob%3D%22accelhost%22%7D%5B12s%5D";
    let scrapes = get(&web, &format!("/api/v1/query?query=count_over_time({up})")).unwrap();
    let answered = get(&web, &format!("/api/v1/query?query=sum_over_time({up})")).unwrap();
    let value = |body: &str| {
        body.rsplit_once(",\"")
            .and_then(|(_, rest)| rest.split('"').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no value in {body}"))
    };
    let (scrapes, answered) = (value(&scrapes), value(&answered));
    let slowest = get(
        &web,
        "/api/v1/query?query=max_over_time(scrape_duration_seconds%7Bjob%3D%22accelhost%22%7D%5B12s%5D)",
    )
    .unwrap();
    eprintln!(
        "Prometheus scraped {answered} of {scrapes} times in the last 12 s, the slowest in {} s",
        value(&slowest)
    );
    assert!(scrapes >= 8.0, "only {scrapes} scrapes in 12 s");
    assert_eq!(
        answered, scrapes,
        "scrapes failed while slow scrapers held connections"
    );
    let closed = slow.stop();
    assert!(
        closed > 0,
        "the node never closed a slow scraper's connection"
    );
    Outcome::Passed
}

/// A node of 10,000 devices across 100 plugins: one scrape reports every device and every
/// plugin, and `promtool check metrics` passes on it.
fn a_scrape_of_ten_thousand_devices_is_whole_and_valid() -> Outcome {
    use std::sync::Arc;
    let host = Host::builder()
        .config(accelhost_bench::measure::config_of_plugins(100, 100, false))
        .cache_dir(support::cache_dir())
        .build()
        .unwrap();
    let config = accelhost_node::ServeConfig::parse(
        r#"{"listen": {"unix": {"path": "/nonexistent/scrape.sock"}}}"#,
        Path::new("scrape.json"),
    )
    .unwrap();
    let service = accelhost_node::service::NodeService::new(Arc::new(host), Arc::new(config));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(service.check_health()).len(), 10_000);
    let text = service.metrics().render_prometheus_text();
    let healthy = text
        .lines()
        .filter(|l| l.starts_with("accelhost_device_healthy{") && l.ends_with(" 1"))
        .count();
    assert_eq!(healthy, 10_000, "every device reported healthy");
    let running = text
        .lines()
        .filter(|l| l.starts_with("accelhost_plugin_state{") && l.contains(r#"state="running"} 1"#))
        .count();
    assert_eq!(running, 100, "every plugin reported running");
    if missing("promtool").is_none() {
        promtool_check_metrics(&text);
    } else {
        eprintln!("note: promtool is missing; the 10,000-device scrape was counted, not linted");
    }
    Outcome::Passed
}

/// The Kubernetes examples' folder.
fn kubernetes_examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kubernetes")
}

/// Runs promtool with `args` in the examples' folder; its output, and whether it succeeded.
fn promtool(args: &[&str]) -> (bool, String) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(kubernetes_examples())
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn the_example_alerts_fire_and_the_static_scrape_config_checks() -> Outcome {
    if let Some(why) = missing("promtool") {
        return Outcome::Skipped(why);
    }
    for args in [
        &["check", "rules", "alerts.yml"][..],
        &["test", "rules", "alerts_test.yml"],
        &["check", "config", "prometheus-static.yml"],
    ] {
        let (ok, output) = promtool(args);
        assert!(ok, "promtool {}: {output}", args.join(" "));
    }
    Outcome::Passed
}

fn the_example_kubernetes_scrape_config_checks() -> Outcome {
    if let Some(why) = missing("promtool") {
        return Outcome::Skipped(why);
    }
    let (ok, output) = promtool(&["check", "config", "prometheus.yml"]);
    if !ok && output.contains("kubernetes_sd_configs not found") {
        return Outcome::Skipped(
            "this promtool was built without Kubernetes service discovery (Debian's is)".into(),
        );
    }
    assert!(ok, "promtool check config prometheus.yml: {output}");
    Outcome::Passed
}

/// The DaemonSet's serve config passes the node's own checks, and the pod asks for NLB0's
/// resource by the name the node gives it.
fn the_example_manifests_hold_a_valid_serve_config_and_resource() -> Outcome {
    let daemonset = std::fs::read_to_string(kubernetes_examples().join("daemonset.yaml")).unwrap();
    let mut lines = daemonset
        .lines()
        .skip_while(|l| !l.trim_end().ends_with("serve.json: |"));
    lines.next().expect("the ConfigMap holds serve.json");
    let json: String = lines
        .take_while(|l| l.is_empty() || l.starts_with("    "))
        .map(|l| format!("{}\n", l.get(4..).unwrap_or("")))
        .collect();
    let config = accelhost_node::ServeConfig::parse(&json, Path::new("/etc/accelhost/serve.json"))
        .unwrap_or_else(|err| panic!("{err}\n{json}"));
    let kubernetes = config.kubernetes.expect("the device plugin is on");
    assert_eq!(kubernetes.container_dir, Path::new("/run/accelhost"));
    assert!(
        daemonset.contains(&format!(
            "mountPath: {}",
            kubernetes.allocation_dir.display()
        )),
        "the allocation folder is mounted at the same path as on the host"
    );
    let afu = accelhost::families::dfl::abi::nlb0::AFU_ID;
    let resource = format!(
        "{}/af-{:016x}{:016x}",
        kubernetes.resource_domain, afu.high, afu.low
    );
    let pod = std::fs::read_to_string(kubernetes_examples().join("pod.yaml")).unwrap();
    assert!(
        pod.contains(&format!("{resource}: 1")),
        "pod.yaml asks for {resource}"
    );
    // The YAML structure itself, where PyYAML is at hand.
    let files = ["daemonset.yaml", "pod.yaml", "prometheus.yml", "alerts.yml"];
    let parsed = Command::new("python3")
        .args([
            "-c",
            "import sys, yaml\nfor f in sys.argv[1:]: list(yaml.safe_load_all(open(f)))",
        ])
        .args(files)
        .current_dir(kubernetes_examples())
        .output();
    match parsed {
        Ok(out) if out.status.success() => {}
        Ok(out) if String::from_utf8_lossy(&out.stderr).contains("No module named 'yaml'") => {
            eprintln!("note: PyYAML is not installed; the YAML structure was not parsed");
        }
        Ok(out) => panic!("YAML: {}", String::from_utf8_lossy(&out.stderr)),
        Err(err) => eprintln!("note: no python3 ({err}); the YAML structure was not parsed"),
    }
    Outcome::Passed
}

/// This file's trials, run by tests/suite_cli_trials.rs.
pub fn trials() -> Vec<Trial> {
    vec![
        Trial {
            name: "prometheus_scrapes_the_node",
            run: prometheus_scrapes_the_node,
        },
        Trial {
            name: "slow_scrapers_do_not_keep_prometheus_out",
            run: slow_scrapers_do_not_keep_prometheus_out,
        },
        Trial {
            name: "a_scrape_of_ten_thousand_devices_is_whole_and_valid",
            run: a_scrape_of_ten_thousand_devices_is_whole_and_valid,
        },
        Trial {
            name: "the_example_alerts_fire_and_the_static_scrape_config_checks",
            run: the_example_alerts_fire_and_the_static_scrape_config_checks,
        },
        Trial {
            name: "the_example_kubernetes_scrape_config_checks",
            run: the_example_kubernetes_scrape_config_checks,
        },
        Trial {
            name: "the_example_manifests_hold_a_valid_serve_config_and_resource",
            run: the_example_manifests_hold_a_valid_serve_config_and_resource,
        },
    ]
}
