//! `accelhost bench`: what the node's metrics cost — a Prometheus scrape of a node with
//! 10,000 devices across 100 plugins, against printing the same devices as JSON, and the
//! per-call counting behind them, on and off in the same run.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use accelhost::OpenMode;
use accelhost_node::ServeConfig;
use accelhost_node::service::NodeService;

use crate::figure::Figure;
use crate::measure::{self, BenchHost, Settings, median, ns, ns_per_call};

/// Devices and plugins of the scraped node.
const PLUGINS: usize = 100;
const PORTS: usize = 100;

/// The scrape figure: the node's `/metrics` text for 10,000 devices and 100 plugins (after a
/// health check, so every device is in it), against `list --json` of the same devices.
pub fn scrape(settings: &Settings, cache: &Path) -> anyhow::Result<Figure> {
    let host = Arc::new(measure::enumeration_host(cache, PLUGINS, PORTS)?);
    let config = ServeConfig::parse(
        r#"{"listen": {"unix": {"path": "/nonexistent/accelhost-bench.sock"}}}"#,
        Path::new("bench-serve.json"),
    )?;
    let service = NodeService::new(host.clone(), Arc::new(config));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let judged = runtime.block_on(service.check_health());
    anyhow::ensure!(
        judged.len() == PLUGINS * PORTS,
        "the health check saw {} devices, expected {}",
        judged.len(),
        PLUGINS * PORTS
    );
    let metrics = service.metrics();
    let rounds = settings.samples.max(5);
    let mut bytes = 0;
    let mut scrapes: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            let text = metrics.render_prometheus_text();
            let took = started.elapsed().as_nanos() as f64;
            bytes = text.len();
            took
        })
        .collect();
    let tokens = host.enumerate(&[]).tokens;
    let mut listings: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            let listed: Vec<&accelhost::Properties> =
                tokens.iter().map(|t| t.properties()).collect();
            let text = serde_json::to_string(&listed).unwrap_or_default();
            std::hint::black_box(text);
            started.elapsed().as_nanos() as f64
        })
        .collect();
    let scrape = median(&mut scrapes);
    let listing = median(&mut listings);
    Ok(Figure {
        what: "Prometheus scrape of a node: 10,000 devices, 100 plugins",
        measured: format!("{:.2} ms ({} KiB of text)", scrape / 1e6, bytes / 1024),
        baseline: format!("list --json of the same devices {:.2} ms", listing / 1e6),
        ratio: scrape / 50e6,
        target: "≤ 50 ms",
        bound: Some(crate::figure::Target::AtMost(1.0)),
    })
}

/// open + close and reset with per-call counting on (the default) and off, alternated in
/// rounds so drift hits both alike; the best round of each is compared.
pub fn counting(settings: &Settings, cache: &Path) -> anyhow::Result<Vec<Figure>> {
    let on = BenchHost::start_counting(cache, true)?;
    let off = BenchHost::start_counting(cache, false)?;
    let open_close = |bench: &BenchHost| {
        ns_per_call(settings, || {
            bench
                .host
                .open(&bench.nlb0, OpenMode::Exclusive)
                .unwrap()
                .close()
                .unwrap();
        }) / 2.0
    };
    let reset = |bench: &BenchHost| -> anyhow::Result<f64> {
        let handle = bench.host.open(&bench.nlb0, OpenMode::Exclusive)?;
        let took = ns_per_call(settings, || handle.reset().unwrap());
        handle.close()?;
        Ok(took)
    };
    let mut best = [f64::MAX; 4];
    for _ in 0..5 {
        best[0] = best[0].min(open_close(&on));
        best[1] = best[1].min(open_close(&off));
        best[2] = best[2].min(reset(&on)?);
        best[3] = best[3].min(reset(&off)?);
    }
    let row = |what, on: f64, off: f64| Figure {
        what,
        measured: format!("{} counted", ns(on)),
        baseline: format!("{} uncounted (count_calls(false))", ns(off)),
        ratio: on / off,
        target: "≤ 1.05× uncounted",
        bound: Some(crate::figure::Target::AtMost(1.05)),
    };
    Ok(vec![
        row("open + close with per-call metrics", best[0], best[1]),
        row("reset with per-call metrics", best[2], best[3]),
    ])
}
