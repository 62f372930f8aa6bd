//! What the node-service tests share: OPAE's hello_fpga driven through a node client, and
//! test certificates made with rcgen.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;

use accelhost::families::dfl::abi::nlb0;
use accelhost_node::session::Sessions;
use accelhost_node::{BoundNode, Client, Endpoint, ServeConfig};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tokio::sync::oneshot;

use super::support::{cache_dir, json_path, scratch_dir};

/// OPAE's hello_fpga on a remote NLB0 port: every register write, buffer and poll crosses
/// the socket; the copy is checked byte for byte.
pub async fn hello_fpga(client: &Client, device: &str, bytes: u64) {
    let handle = client.open(device, false).await.unwrap();
    let (mmio, size) = client.map_mmio(handle, 0).await.unwrap();
    assert!(size >= 0x1000);
    assert_eq!(
        client.read64(mmio, nlb0::CSR_AFU_ID_H).await.unwrap(),
        nlb0::AFU_ID.high
    );
    let dsm = client.prepare_buffer(handle, 4096).await.unwrap();
    let src = client.prepare_buffer(handle, bytes).await.unwrap();
    let dst = client.prepare_buffer(handle, bytes).await.unwrap();
    let pattern: Vec<u8> = (0..bytes)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
        .collect();
    client.write(src.buffer, 0, &pattern).await.unwrap();
    client
        .fill_buffer(dst.buffer, 0, bytes, 0xBE)
        .await
        .unwrap();
    client.reset(handle).await.unwrap();
    client
        .write64(mmio, nlb0::CSR_DSM_BASEL, dsm.iova)
        .await
        .unwrap();
    client.write32(mmio, nlb0::CSR_CTL, 0).await.unwrap();
    client
        .write32(mmio, nlb0::CSR_CTL, nlb0::CTL_RESET_N)
        .await
        .unwrap();
    client
        .write64_batch(
            mmio,
            &[
                (nlb0::CSR_SRC_ADDR, src.iova / nlb0::CACHE_LINE),
                (nlb0::CSR_DST_ADDR, dst.iova / nlb0::CACHE_LINE),
            ],
        )
        .await
        .unwrap();
    client
        .write32(mmio, nlb0::CSR_NUM_LINES, (bytes / nlb0::CACHE_LINE) as u32)
        .await
        .unwrap();
    client
        .write32(mmio, nlb0::CSR_CFG, nlb0::CFG_HELLO_FPGA as u32)
        .await
        .unwrap();
    client
        .write32(mmio, nlb0::CSR_CTL, nlb0::CTL_RESET_N | nlb0::CTL_START)
        .await
        .unwrap();
    let status = client
        .poll_buffer(dsm.buffer, nlb0::DSM_STATUS, 1, 1, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(status >> 32, 0, "test_error");
    client
        .write32(
            mmio,
            nlb0::CSR_CTL,
            nlb0::CTL_RESET_N | nlb0::CTL_START | nlb0::CTL_STOP,
        )
        .await
        .unwrap();
    let copied = client.read(dst.buffer, 0, bytes).await.unwrap();
    assert!(
        copied == pattern,
        "the remote copy of {bytes} bytes is byte-exact"
    );
    client.close(handle).await.unwrap();
}

/// A node serving in this process until dropped.
pub struct RunningNode {
    pub dir: PathBuf,
    pub socket: PathBuf,
    pub tcp: Option<std::net::SocketAddr>,
    pub sessions: Arc<Sessions>,
    pub metrics: Arc<accelhost_node::metrics::NodeMetrics>,
    stop: Option<oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<Result<(), accelhost_node::ServeError>>>,
}

impl RunningNode {
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let served = self.served.take().unwrap();
        tokio::time::timeout(Duration::from_secs(30), served)
            .await
            .expect("the node stops within 30 s")
            .unwrap()
            .unwrap();
    }

    pub fn unix(&self) -> Endpoint {
        Endpoint::Unix(self.socket.clone())
    }
}

pub fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// Starts a node in `dir` whose serve config is `config`, with `@SOCKET@` standing for the
/// socket path and `@DIR@` for the folder.
pub async fn start_in(dir: PathBuf, config: &str) -> RunningNode {
    let host = Arc::new(tokio::task::spawn_blocking(node_host).await.unwrap());
    start_with_host(dir, config, host).await
}

/// A host on the embedded default as `accelhost serve` starts one: its memory shareable with
/// local clients.
pub fn node_host() -> accelhost::Host {
    accelhost::Host::builder()
        .config(accelhost::Config::embedded_default())
        .cache_dir(cache_dir())
        .shareable_memory(true)
        .build()
        .expect("the embedded default starts")
}

/// [`start_in`], serving `host`'s plugins.
pub async fn start_with_host(
    dir: PathBuf,
    config: &str,
    host: Arc<accelhost::Host>,
) -> RunningNode {
    let socket = dir.join("node.sock");
    let text = config
        .replace("@SOCKET@", &json_path(&socket))
        .replace("@DIR@", &json_path(&dir));
    let path = dir.join("serve.json");
    std::fs::write(&path, &text).unwrap();
    let serve = Arc::new(ServeConfig::load(&path).unwrap());
    let node = BoundNode::bind(serve, host).await.unwrap();
    let tcp = node.tcp_address();
    let sessions = node.sessions();
    let metrics = node.service().metrics();
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(node.run(async {
        let _ = stopped.await;
    }));
    RunningNode {
        dir,
        socket,
        tcp,
        sessions,
        metrics,
        stop: Some(stop),
        served: Some(served),
    }
}

/// Test certificates in a folder of their own.
pub struct Pki {
    /// The folder.
    pub dir: PathBuf,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn leaf(
    dir: &Path,
    name: &str,
    sans: &[&str],
    issuer: &CertifiedIssuer<'static, KeyPair>,
    expired: bool,
) {
    let mut params =
        CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
}

impl Pki {
    /// A CA for the node, a CA for clients, the node's certificate for `localhost`, and
    /// clients: `good` (SAN client1.test), `stranger` (a SAN no client entry names),
    /// `expired` and `rogue` (signed by another CA).
    pub fn new() -> Pki {
        let dir = scratch_dir("pki");
        let node_ca = ca("node CA");
        let client_ca = ca("client CA");
        let rogue_ca = ca("rogue CA");
        std::fs::write(dir.join("node-ca.pem"), node_ca.pem()).unwrap();
        std::fs::write(dir.join("client-ca.pem"), client_ca.pem()).unwrap();
        leaf(&dir, "node", &["localhost", "node-a"], &node_ca, false);
        leaf(&dir, "good", &["client1.test"], &client_ca, false);
        leaf(&dir, "stranger", &["client9.test"], &client_ca, false);
        leaf(&dir, "expired", &["client1.test"], &client_ca, true);
        leaf(&dir, "rogue", &["client1.test"], &rogue_ca, false);
        Pki { dir }
    }

    pub fn endpoint(&self, address: std::net::SocketAddr, client: &str) -> Endpoint {
        self.endpoint_named(address, "localhost", client)
    }

    /// `client`'s endpoint for the node at `address`, whose certificate names `server_name`.
    pub fn endpoint_named(
        &self,
        address: std::net::SocketAddr,
        server_name: &str,
        client: &str,
    ) -> Endpoint {
        Endpoint::Tls {
            address: address.to_string(),
            server_name: server_name.into(),
            ca: self.dir.join("node-ca.pem"),
            certificate: self.dir.join(format!("{client}.pem")),
            key: self.dir.join(format!("{client}.key")),
        }
    }
}
