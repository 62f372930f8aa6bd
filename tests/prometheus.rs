//! A real Prometheus scrapes `accelhost serve`: `promtool check metrics` passes on what the
//! node serves, and Prometheus reads back a counter moving because of refusals this test
//! causes. Needs Debian's `prometheus` package (CI installs it); without it the trial is
//! reported ignored with the reason, or fails under `ACCELHOST_REQUIRE_TOOLCHAINS=1`.

#[path = "support/served.rs"]
mod served;
mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

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
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return None;
    }
    let why = format!("`{tool}` is not installed (Debian's `prometheus` package has it)");
    if std::env::var_os("ACCELHOST_REQUIRE_TOOLCHAINS").is_some_and(|v| v == "1") {
        panic!("{why}, and ACCELHOST_REQUIRE_TOOLCHAINS=1");
    }
    Some(why)
}

/// Starts `accelhost serve` in `dir`; returns it and its metrics address.
fn serve(dir: &Path) -> (Served, String) {
    std::fs::write(
        dir.join("serve.json"),
        format!(
            r#"{{"listen": {{"unix": {{"path": "{}"}}, "metrics": {{"address": "127.0.0.1:0"}}}},
                "clients": [{{"name": "operator", "unix_uid": {}, "grants": {{"devices": ["dfl/*"]}}}}]}}"#,
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
    ] {
        assert!(text.contains(expected), "no `{expected}` in:\n{text}");
    }
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
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    let web = format!("127.0.0.1:{}", free_port());
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: accelhost\n    static_configs:\n      - targets: ['{metrics}']\n"
        ),
    )
    .unwrap();
    let _prometheus = Running(
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
    let query = "accelhost_client_refusals_total%7Bcall%3D%22Open%22%7D";
    wait_for_value(&web, query, "1");
    refuse_an_open(&runtime, &client);
    refuse_an_open(&runtime, &client);
    wait_for_value(&web, query, "3");
    Outcome::Passed
}

fn main() -> ExitCode {
    support::harness::run(&[Trial {
        name: "prometheus_scrapes_the_node",
        run: prometheus_scrapes_the_node,
    }])
}
