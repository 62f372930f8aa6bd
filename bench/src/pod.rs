//! The pod path of `accelhost bench`: each canonical workload as an application runs it in
//! process, against the same workload through a node's Unix socket (`builtin:remote` on a
//! host of its own, as `ACCELHOST_ENDPOINT` makes one), measured in turns.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::measure::{self, Settings};
use accelhost::workloads::{capi, vadd};
use accelhost::{Config, Handle, Host, OpenMode, Token};
use anyhow::Context;

use crate::figure::Figure;
use crate::figure::Target;
use crate::tls::BenchPki;

/// The memcpy AFU's run, as `accelhost demo` makes it: 128 copies of 32 KiB and an IRQ.
const CAPI_COPIES: u64 = 128;
const CAPI_CHUNK: u16 = 32 * 1024;

/// The three devices of the embedded default, opened.
struct Devices<'a> {
    host: &'a Host,
    nlb0: Handle,
    /// Opened afresh for each run: an AFU context starts work once.
    capi: Token,
    xocl: Handle,
    kernel: accelhost::Kernel,
}

impl<'a> Devices<'a> {
    fn open(host: &'a Host) -> anyhow::Result<Devices<'a>> {
        let everywhere = accelhost::Filter {
            host: Some("*".into()),
            ..accelhost::Filter::new()
        };
        let tokens = host.enumerate(&[everywhere]).tokens;
        let find = |what: &str, pick: fn(&Token) -> bool| {
            tokens
                .iter()
                .find(|t| pick(t))
                .with_context(|| format!("no {what} among {} devices", tokens.len()))
        };
        let nlb0 = host.open(
            find("NLB0 port", accelhost::workloads::nlb0::is_nlb0)?,
            OpenMode::Shared,
        )?;
        let capi = find("CAPI memcpy AFU", |t| {
            capi::function(t) == Some("memcpy") && capi::node_kind(t) != Some('m')
        })?
        .clone();
        let xocl = host.open(find("XRT card", vadd::is_xocl)?, OpenMode::Shared)?;
        let kernel = measure::vadd_kernel(&xocl);
        Ok(Devices {
            host,
            nlb0,
            capi,
            xocl,
            kernel,
        })
    }

    fn capi_gbps(&self) -> f64 {
        let handle = self
            .host
            .open(&self.capi, OpenMode::Shared)
            .expect("open the AFU");
        let report = capi::memcpy_run(&handle, CAPI_COPIES, CAPI_CHUNK).expect("capi memcpy");
        assert!(report.verified(), "capi memcpy did not verify");
        handle.close().expect("close the AFU");
        report.gigabytes_per_second()
    }

    fn vadd_seconds(&self, elements: u32) -> f64 {
        let report = vadd::run(&self.xocl, &self.kernel, elements).expect("vadd");
        assert!(report.verified(), "vadd did not verify");
        report.elapsed.as_secs_f64()
    }
}

/// Measures the workloads in process (a host on the embedded default) and through the node
/// at `socket`, in turns; and tiny launches through the same node over loopback TCP with
/// mutual TLS (`tls`: the certificates and the node's address).
pub fn figures(
    settings: &Settings,
    cache: &Path,
    socket: PathBuf,
    tls: (BenchPki, SocketAddr),
) -> anyhow::Result<Vec<Figure>> {
    let local = Host::builder()
        .config(Config::embedded_default())
        .cache_dir(cache)
        .build()?;
    let endpoint = format!("unix://{}", socket.display());
    let pod = Host::builder()
        .config(Config::for_endpoint(&endpoint)?)
        .cache_dir(cache)
        .remote(Arc::new(accelhost_node::NodeConnector::new()))
        .build()?;
    let (here, there) = (Devices::open(&local)?, Devices::open(&pod)?);
    let mut figures = Vec::new();

    let bytes = 64u64 << 20;
    measure::nlb0_gbps(&there.nlb0, bytes);
    let nlb = measure::paired(
        settings.workload_samples,
        || measure::nlb0_gbps(&here.nlb0, bytes),
        || measure::nlb0_gbps(&there.nlb0, bytes),
        |pod, local| pod / local,
    );
    figures.push(throughput(
        "NLB0 64 MiB through a node's socket",
        format!("{:.2} GB/s", nlb.measured),
        format!("in process {:.2} GB/s", nlb.baseline),
        nlb.ratio,
        AT_LEAST_0_8,
    ));

    there.capi_gbps();
    let capi = measure::paired(
        settings.workload_samples,
        || here.capi_gbps(),
        || there.capi_gbps(),
        |pod, local| pod / local,
    );
    figures.push(throughput(
        "CAPI memcpy ×128 + IRQ through a node's socket",
        format!("{:.2} GB/s", capi.measured),
        format!("in process {:.2} GB/s", capi.baseline),
        capi.ratio,
        (0.9, "≥ 0.9× in process"),
    ));

    let elements = 16u32 << 20;
    there.vadd_seconds(elements);
    let vadd = measure::paired(
        settings.workload_samples,
        || here.vadd_seconds(elements),
        || there.vadd_seconds(elements),
        |pod, local| local / pod,
    );
    figures.push(throughput(
        "vadd 16 Mi through a node's socket",
        format!("{:.1} ms", vadd.measured * 1e3),
        format!("in process {:.1} ms", vadd.baseline * 1e3),
        vadd.ratio,
        AT_LEAST_0_8,
    ));
    let (pki, address) = tls;
    let over_tls = Host::builder()
        .config(pki.proxy_config(address)?)
        .cache_dir(cache)
        .remote(Arc::new(accelhost_node::NodeConnector::new()))
        .build()?;
    let far = Devices::open(&over_tls)?;
    let tiny_launches = |what, remote: &Devices, held_back: bool, target, bound| {
        let launches: u32 = if settings.samples > 5 { 20_000 } else { 5_000 };
        let tiny = |devices: &Devices| {
            let run = if held_back {
                vadd::tiny_launches_held_back
            } else {
                vadd::tiny_launches
            };
            let report = run(&devices.xocl, &devices.kernel, launches).expect("tiny launches");
            assert!(report.verified, "the tiny launches did not verify");
            report.per_second()
        };
        tiny(remote);
        let rate = measure::paired(
            settings.workload_samples,
            || tiny(&here),
            || tiny(remote),
            |remote, local| remote / local,
        );
        Figure {
            what,
            measured: format!("{:.0}/s", rate.measured),
            baseline: format!("in process {:.0}/s", rate.baseline),
            ratio: rate.ratio,
            target,
            bound: Some(Target::AtLeast(bound)),
        }
    };
    figures.push(tiny_launches(
        "tiny launches through a node's socket",
        &there,
        false,
        "≥ 0.5× in process",
        0.5,
    ));
    figures.push(tiny_launches(
        "tiny launches held back, through a node's socket (batches)",
        &there,
        true,
        "≥ 0.5× in process",
        0.5,
    ));
    figures.push(tiny_launches(
        "tiny launches through builtin:remote over TCP + mutual TLS (loopback)",
        &far,
        false,
        "≥ 0.1× in process",
        0.1,
    ));
    for devices in [here, there, far] {
        drop(devices.kernel);
        for handle in [devices.nlb0, devices.xocl] {
            handle.close()?;
        }
    }
    Ok(figures)
}

/// The bound of the data rows through the socket that round three set.
const AT_LEAST_0_8: (f64, &str) = (0.8, "≥ 0.8× in process");

/// A row judged as at least `bound` of the in-process rate (`ratio`: the socket's rate over
/// the in-process one).
fn throughput(
    what: &'static str,
    measured: String,
    baseline: String,
    ratio: f64,
    (bound, target): (f64, &'static str),
) -> Figure {
    Figure {
        what,
        measured,
        baseline,
        ratio,
        target,
        bound: Some(Target::AtLeast(bound)),
    }
}
