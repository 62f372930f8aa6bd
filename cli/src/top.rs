//! `accelhost top`: a running node's figures for a person, live: its plugins, devices,
//! clients and the remote nodes it reaches, read from the node's Prometheus endpoint.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use accelhost_node::config::MetricsListen;

/// The figures shown, and where they come from.
pub const AFTER_HELP: &str = "\
Sections (each shown when the node reports it):
  plugins   state, calls (and calls/s between frames), errors, faults, restarts, p50 and
            p99 call latency (from the duration histogram), host and DMA memory
  devices   health (the node's last judgement) and the handles its clients hold
  clients   open sessions, calls, refusals, bytes written and read
  remote    the nodes builtin:remote reaches: reachable, last round trip

The node serves these at the address or socket its serve config's `listen.metrics` names;
give that address (unix:PATH for a socket), or the serve config itself with --serve-config.";

#[derive(clap::Args)]
pub struct Args {
    /// The node's metrics address (`host:port`, `http://host:port`, or `unix:PATH` for a
    /// node serving them on a socket).
    #[arg(
        required_unless_present = "serve_config",
        conflicts_with = "serve_config"
    )]
    address: Option<String>,
    /// Read the metrics address from this serve config (`listen.metrics.address`).
    #[arg(long, value_name = "FILE")]
    serve_config: Option<PathBuf>,
    /// Time between frames, in milliseconds.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
    interval: u64,
    /// Print one frame and exit, without clearing the screen (for scripts).
    #[arg(long)]
    once: bool,
}

/// How long one fetch of the metrics may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let url = match (&args.address, &args.serve_config) {
        (Some(address), _) => metrics_url(address),
        (None, Some(file)) => {
            let config = accelhost_node::ServeConfig::load(file)?;
            match config.metrics {
                None => bail!(
                    "{}: listen.metrics: the node serves no metrics; add \
                     \"metrics\": {{\"address\": \"127.0.0.1:9700\"}} under listen",
                    file.display()
                ),
                Some(MetricsListen::Tcp(mut address)) => {
                    if address.ip().is_unspecified() {
                        address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
                    }
                    metrics_url(&address.to_string())
                }
                Some(MetricsListen::Unix(unix)) => format!("unix:{}", unix.path.display()),
            }
        }
        (None, None) => unreachable!("clap requires one"),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let fetch = || {
        runtime.block_on(async {
            let answer = async {
                match url.strip_prefix("unix:") {
                    Some(socket) => get_over_unix(Path::new(socket)).await,
                    None => {
                        let uri: hyper::Uri = url
                            .parse()
                            .with_context(|| format!("'{url}' is not a URL"))?;
                        Ok(client.get(uri).await?)
                    }
                }
            };
            let answer = tokio::time::timeout(FETCH_TIMEOUT, answer)
                .await
                .with_context(|| format!("{url}: no answer within {FETCH_TIMEOUT:?}"))?
                .with_context(|| format!("{url}: cannot reach the node's metrics"))?;
            let status = answer.status();
            let body = tokio::time::timeout(FETCH_TIMEOUT, answer.into_body().collect())
                .await
                .with_context(|| format!("{url}: the answer did not finish"))?
                .with_context(|| format!("{url}: reading the answer"))?
                .to_bytes();
            if !status.is_success() {
                bail!("{url}: the node answered {status}");
            }
            Ok(String::from_utf8_lossy(&body).into_owned())
        })
    };
    let terminal = std::io::stdout().is_terminal() && !args.once;
    let mut previous: Option<(Instant, Figures)> = None;
    loop {
        let text = fetch()?;
        let now = Instant::now();
        let figures = Figures::parse(&text);
        let since = previous
            .as_ref()
            .map(|(at, before)| (now.duration_since(*at), before));
        let frame = render(&url, &figures, since);
        let mut out = std::io::stdout().lock();
        if terminal {
            write!(out, "\x1b[H\x1b[2J")?;
        }
        write!(out, "{frame}")?;
        out.flush()?;
        if args.once {
            return Ok(ExitCode::SUCCESS);
        }
        if !terminal {
            writeln!(out)?;
        }
        drop(out);
        previous = Some((now, figures));
        std::thread::sleep(Duration::from_millis(args.interval));
    }
}

/// `http://address/metrics` for `address` given with or without the scheme.
/// `GET /metrics` on the node's metrics socket.
async fn get_over_unix(socket: &Path) -> anyhow::Result<hyper::Response<hyper::body::Incoming>> {
    let stream = tokio::net::UnixStream::connect(socket).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let request = hyper::Request::get("/metrics")
        .header(hyper::header::HOST, "localhost")
        .body(Empty::<bytes::Bytes>::new())?;
    Ok(sender.send_request(request).await?)
}

/// The metrics URL of an address as a person gives it (`host:port`, a URL, or
/// `unix:PATH` for a node serving metrics on a socket).
fn metrics_url(address: &str) -> String {
    if let Some(socket) = address.strip_prefix("unix:") {
        return format!("unix:{}", socket.trim_start_matches("//"));
    }
    let base = address.trim_end_matches('/');
    let base = base.strip_suffix("/metrics").unwrap_or(base);
    if base.starts_with("http://") || base.starts_with("https://") {
        format!("{base}/metrics")
    } else {
        format!("http://{base}/metrics")
    }
}

/// One sample of the text format.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

impl Sample {
    fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }
}

/// Parses the Prometheus text format (and OpenMetrics, which it reads alike); lines that do
/// not parse are skipped.
fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(parse_line)
        .collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_owned();
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices().peekable();
        let mut end = None;
        loop {
            while chars.next_if(|(_, c)| *c == ',' || *c == ' ').is_some() {}
            match chars.peek() {
                Some((at, '}')) => {
                    end = Some(*at + 1);
                    break;
                }
                None => break,
                _ => {}
            }
            let mut key = String::new();
            for (_, c) in chars.by_ref() {
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            chars.next_if(|(_, c)| *c == '"')?;
            let mut value = String::new();
            loop {
                match chars.next()? {
                    (_, '"') => break,
                    (_, '\\') => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        other => value.push(other),
                    },
                    (_, c) => value.push(c),
                }
            }
            labels.insert(key.trim().to_owned(), value);
        }
        rest = &inner[end?..];
    }
    let value = match rest.split_whitespace().next()? {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        other => other.parse().ok()?,
    };
    Some(Sample {
        name,
        labels,
        value,
    })
}

/// What a frame shows, gathered from the samples.
#[derive(Default)]
struct Figures {
    samples: Vec<Sample>,
}

impl Figures {
    fn parse(text: &str) -> Figures {
        Figures {
            samples: parse(text),
        }
    }

    fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }

    fn has(&self, name: &str) -> bool {
        self.named(name).next().is_some()
    }

    /// `name` summed by the value of label `by`.
    fn sum_by(&self, name: &str, by: &str) -> BTreeMap<String, f64> {
        let mut sums = BTreeMap::new();
        for s in self.named(name) {
            *sums.entry(s.label(by).to_owned()).or_insert(0.0) += s.value;
        }
        sums
    }

    /// `name` summed by label `by`, only samples whose `label` is `value`.
    fn sum_by_where(
        &self,
        name: &str,
        by: &str,
        label: &str,
        value: &str,
    ) -> BTreeMap<String, f64> {
        let mut sums = BTreeMap::new();
        for s in self.named(name).filter(|s| s.label(label) == value) {
            *sums.entry(s.label(by).to_owned()).or_insert(0.0) += s.value;
        }
        sums
    }

    /// The `q` quantile of histogram `name` per `by`, over all its other labels, with linear
    /// interpolation inside the bucket (as Prometheus's histogram_quantile does).
    fn quantile_by(&self, name: &str, by: &str, q: f64) -> BTreeMap<String, f64> {
        let bucket = format!("{name}_bucket");
        let mut buckets: BTreeMap<String, BTreeMap<u64, (f64, f64)>> = BTreeMap::new();
        for s in self.named(&bucket) {
            let le = match s.label("le") {
                "+Inf" => f64::INFINITY,
                le => match le.parse::<f64>() {
                    Ok(le) => le,
                    Err(_) => continue,
                },
            };
            let entry = buckets
                .entry(s.label(by).to_owned())
                .or_default()
                .entry(le.to_bits())
                .or_insert((le, 0.0));
            entry.1 += s.value;
        }
        buckets
            .into_iter()
            .filter_map(|(key, by_bound)| {
                let mut cumulative: Vec<(f64, f64)> = by_bound.into_values().collect();
                cumulative.sort_by(|a, b| a.0.total_cmp(&b.0));
                quantile(q, &cumulative).map(|v| (key, v))
            })
            .collect()
    }
}

/// The `q` quantile from cumulative buckets (upper bound, count up to it), sorted by bound.
fn quantile(q: f64, cumulative: &[(f64, f64)]) -> Option<f64> {
    let total = cumulative.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0, 0.0);
    for &(bound, count) in cumulative {
        if count >= rank {
            if bound.is_infinite() {
                return Some(lower.0);
            }
            let inside = count - lower.1;
            let fraction = if inside > 0.0 {
                (rank - lower.1) / inside
            } else {
                1.0
            };
            return Some(lower.0 + (bound - lower.0) * fraction);
        }
        lower = (bound, count);
    }
    Some(lower.0)
}

fn count(v: Option<&f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.0}"))
}

fn bytes(v: Option<&f64>) -> String {
    match v {
        None => "-".into(),
        Some(&v) if v >= (1u64 << 30) as f64 => format!("{:.1} GiB", v / (1u64 << 30) as f64),
        Some(&v) if v >= (1 << 20) as f64 => format!("{:.1} MiB", v / (1 << 20) as f64),
        Some(&v) if v >= 1024.0 => format!("{:.1} KiB", v / 1024.0),
        Some(&v) => format!("{v:.0} B"),
    }
}

fn seconds(v: Option<&f64>) -> String {
    match v {
        None => "-".into(),
        Some(&v) if v >= 1.0 => format!("{v:.2} s"),
        Some(&v) if v >= 1e-3 => format!("{:.2} ms", v * 1e3),
        Some(&v) => format!("{:.1} µs", v * 1e6),
    }
}

/// One frame: a header line and a table per section the node reports. `since` is the time
/// since the last frame and its figures, for rates.
fn render(url: &str, now: &Figures, since: Option<(Duration, &Figures)>) -> String {
    let mut out = format!(
        "accelhost top: {url} at {}\n",
        humantime_now().unwrap_or_else(|| "now".into())
    );
    if now.has("accelhost_plugin_state") {
        let states: BTreeMap<String, String> = now
            .named("accelhost_plugin_state")
            .filter(|s| s.value == 1.0)
            .map(|s| (s.label("plugin").to_owned(), s.label("state").to_owned()))
            .collect();
        let calls = now.sum_by("accelhost_plugin_calls_total", "plugin");
        let before =
            since.map(|(took, f)| (took, f.sum_by("accelhost_plugin_calls_total", "plugin")));
        let errors = now.sum_by("accelhost_plugin_call_errors_total", "plugin");
        let faults = now.sum_by("accelhost_plugin_faults_total", "plugin");
        let restarts = now.sum_by("accelhost_plugin_restarts_total", "plugin");
        let host = now.sum_by("accelhost_plugin_host_memory_bytes", "plugin");
        let dma = now.sum_by("accelhost_plugin_dma_memory_bytes", "plugin");
        let p50 = now.quantile_by("accelhost_plugin_call_duration_seconds", "plugin", 0.5);
        let p99 = now.quantile_by("accelhost_plugin_call_duration_seconds", "plugin", 0.99);
        let rows: Vec<Vec<String>> = states
            .iter()
            .map(|(plugin, state)| {
                let rate = match &before {
                    Some((took, before)) => {
                        let delta = calls.get(plugin).copied().unwrap_or(0.0)
                            - before.get(plugin).copied().unwrap_or(0.0);
                        format!("{:.1}", delta.max(0.0) / took.as_secs_f64().max(1e-3))
                    }
                    None => "-".into(),
                };
                vec![
                    plugin.clone(),
                    state.clone(),
                    count(calls.get(plugin)),
                    rate,
                    count(errors.get(plugin)),
                    count(faults.get(plugin)),
                    count(restarts.get(plugin)),
                    seconds(p50.get(plugin)),
                    seconds(p99.get(plugin)),
                    bytes(host.get(plugin)),
                    bytes(dma.get(plugin)),
                ]
            })
            .collect();
        out.push_str("\nPLUGINS\n");
        out.push_str(&accelhost::text::table(
            &[
                "PLUGIN", "STATE", "CALLS", "CALLS/S", "ERRORS", "FAULTS", "RESTARTS", "P50",
                "P99", "HOST MEM", "DMA",
            ],
            &rows,
        ));
    }
    if now.has("accelhost_device_healthy") {
        let handles = now.sum_by("accelhost_device_open_handles", "device");
        let rows: Vec<Vec<String>> = now
            .named("accelhost_device_healthy")
            .map(|s| {
                let device = s.label("device").to_owned();
                vec![
                    device.clone(),
                    s.label("plugin").to_owned(),
                    if s.value == 1.0 {
                        "healthy"
                    } else {
                        "UNHEALTHY"
                    }
                    .into(),
                    count(handles.get(&device)),
                ]
            })
            .collect();
        out.push_str("\nDEVICES\n");
        out.push_str(&accelhost::text::table(
            &["DEVICE", "PLUGIN", "HEALTH", "HANDLES"],
            &rows,
        ));
    }
    if now.has("accelhost_client_sessions") || now.has("accelhost_client_calls_total") {
        let sessions = now.sum_by("accelhost_client_sessions", "client");
        let calls = now.sum_by("accelhost_client_calls_total", "client");
        let refusals = now.sum_by("accelhost_client_refusals_total", "client");
        let written = now.sum_by_where(
            "accelhost_client_transferred_bytes_total",
            "client",
            "direction",
            "written",
        );
        let read = now.sum_by_where(
            "accelhost_client_transferred_bytes_total",
            "client",
            "direction",
            "read",
        );
        let mut clients: Vec<&String> = sessions.keys().chain(calls.keys()).collect();
        clients.sort();
        clients.dedup();
        let rows: Vec<Vec<String>> = clients
            .into_iter()
            .map(|client| {
                vec![
                    client.clone(),
                    count(sessions.get(client).or(Some(&0.0))),
                    count(calls.get(client)),
                    count(refusals.get(client)),
                    bytes(written.get(client)),
                    bytes(read.get(client)),
                ]
            })
            .collect();
        out.push_str("\nCLIENTS\n");
        out.push_str(&accelhost::text::table(
            &["CLIENT", "SESSIONS", "CALLS", "REFUSED", "WRITTEN", "READ"],
            &rows,
        ));
    }
    if now.has("accelhost_remote_node_reachable") {
        let round_trip = now.sum_by("accelhost_remote_node_round_trip_seconds", "node");
        let rows: Vec<Vec<String>> = now
            .named("accelhost_remote_node_reachable")
            .map(|s| {
                let node = s.label("node").to_owned();
                vec![
                    node.clone(),
                    if s.value == 1.0 { "yes" } else { "NO" }.into(),
                    seconds(round_trip.get(&node)),
                ]
            })
            .collect();
        out.push_str("\nREMOTE NODES\n");
        out.push_str(&accelhost::text::table(
            &["NODE", "REACHABLE", "ROUND TRIP"],
            &rows,
        ));
    }
    out
}

/// The wall-clock time as `HH:MM:SS` UTC.
fn humantime_now() -> Option<String> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    let day = secs % 86_400;
    Some(format!(
        "{:02}:{:02}:{:02} UTC",
        day / 3600,
        day / 60 % 60,
        day % 60
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP accelhost_plugin_state 1 for the state
# TYPE accelhost_plugin_state gauge
accelhost_plugin_state{plugin="dfl",state="running"} 1
accelhost_plugin_state{plugin="dfl",state="faulted"} 0
accelhost_plugin_state{plugin="chaos",state="restarting"} 1
accelhost_plugin_calls_total{plugin="dfl",call="open"} 3
accelhost_plugin_calls_total{plugin="dfl",call="close"} 1
accelhost_plugin_faults_total{plugin="chaos",cause="trap"} 2
accelhost_plugin_call_duration_seconds_bucket{le="1e-6",plugin="dfl",call="open"} 0
accelhost_plugin_call_duration_seconds_bucket{le="1e-5",plugin="dfl",call="open"} 2
accelhost_plugin_call_duration_seconds_bucket{le="+Inf",plugin="dfl",call="open"} 3
accelhost_plugin_call_duration_seconds_bucket{le="1e-6",plugin="dfl",call="close"} 0
accelhost_plugin_call_duration_seconds_bucket{le="1e-5",plugin="dfl",call="close"} 2
accelhost_plugin_call_duration_seconds_bucket{le="+Inf",plugin="dfl",call="close"} 2
accelhost_device_healthy{device="chaos/chaos0",plugin="chaos"} 0
accelhost_device_open_handles{device="chaos/chaos0",plugin="chaos"} 0
accelhost_client_sessions{client="ops \"a\"\nb"} 1
accelhost_client_transferred_bytes_total{client="ops \"a\"\nb",direction="read"} 2048
"#;

    #[test]
    fn samples_parse_with_escapes_and_infinities() {
        let samples = parse(TEXT);
        assert_eq!(samples.len(), 16);
        let client = samples
            .iter()
            .find(|s| s.name == "accelhost_client_sessions")
            .unwrap();
        assert_eq!(client.label("client"), "ops \"a\"\nb");
        assert_eq!(
            parse_line(r#"x_bucket{le="+Inf"} +Inf"#).unwrap().value,
            f64::INFINITY
        );
        assert_eq!(parse_line("up 1 1700000000").unwrap().value, 1.0);
        assert!(parse_line(r#"broken{a="x} 1"#).is_none());
    }

    #[test]
    fn histogram_quantiles_interpolate_inside_the_bucket() {
        let figures = Figures::parse(TEXT);
        let p50 = figures.quantile_by("accelhost_plugin_call_duration_seconds", "plugin", 0.5);
        // 5 calls: 4 in (1 µs, 10 µs], 1 above; the median is 2.5 of 4 into that bucket.
        assert!(
            (p50["dfl"] - (1e-6 + 9e-6 * 2.5 / 4.0)).abs() < 1e-12,
            "{p50:?}"
        );
        assert_eq!(
            quantile(0.99, &[(1e-6, 0.0), (f64::INFINITY, 3.0)]),
            Some(1e-6)
        );
        assert_eq!(quantile(0.5, &[(1.0, 0.0)]), None);
    }

    #[test]
    fn a_frame_has_a_section_per_family_present() {
        let now = Figures::parse(TEXT);
        let frame = render("http://n:9700/metrics", &now, None);
        assert!(frame.contains("PLUGINS"), "{frame}");
        let dfl = frame.lines().find(|l| l.starts_with("dfl ")).unwrap();
        assert!(dfl.contains("running") && dfl.contains(" 4 "), "{dfl}");
        let chaos = frame.lines().find(|l| l.starts_with("chaos ")).unwrap();
        assert!(chaos.contains("restarting"), "{chaos}");
        assert!(frame.contains("UNHEALTHY"), "{frame}");
        assert!(
            frame.contains(r#"ops "a"\nb"#),
            "a label is printed inert: {frame}"
        );
        assert!(frame.contains("2.0 KiB"), "{frame}");
        assert!(
            !frame.contains("REMOTE NODES"),
            "absent families make no section"
        );
        let later = Figures::parse(&TEXT.replace(r#"call="open"} 3"#, r#"call="open"} 13"#));
        let frame = render("u", &later, Some((Duration::from_secs(2), &now)));
        let dfl = frame.lines().find(|l| l.starts_with("dfl ")).unwrap();
        assert!(dfl.contains("5.0"), "10 calls in 2 s: {dfl}");
    }

    #[test]
    fn addresses_become_metrics_urls() {
        assert_eq!(
            metrics_url("127.0.0.1:9700"),
            "http://127.0.0.1:9700/metrics"
        );
        assert_eq!(
            metrics_url("http://n:9700/metrics"),
            "http://n:9700/metrics"
        );
        assert_eq!(
            metrics_url("unix:///run/accelhost/metrics.sock"),
            "unix:/run/accelhost/metrics.sock"
        );
    }
}
