//! The node service across two network namespaces joined by a veth pair, as two machines
//! would see it: `accelhost serve` with mutual TLS in one, the client in the other. The
//! namespaces, and the addresses inside them, exist only for the test. Where namespaces
//! cannot be made (no root, no CAP_NET_ADMIN, no `ip`), the trials are reported ignored with
//! the reason.

use crate::remote;
use crate::served;
use crate::support;

use std::fs::File;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use accelhost_node::{Client, ClientOptions, RemoteError};
use remote::{Pki, hello_fpga};
use served::Served;
use support::harness::{Outcome, Trial};

const BIN: &str = env!("CARGO_BIN_EXE_accelhost");
const NODE_ADDRESS: &str = "10.231.0.1";
const CLIENT_ADDRESS: &str = "10.231.0.2";

/// Two namespaces and the veth pair between them; removed when dropped.
struct Namespaces {
    node: String,
    client: String,
    /// The client's end of the veth pair.
    client_link: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|err| format!("`ip` cannot run: {err}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` was refused: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Namespaces {
    fn create() -> Result<Namespaces, String> {
        // Unique per trial as well as per process: the trials run side by side.
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let id = format!(
            "{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let (a, b) = (format!("ah{id}n"), format!("ah{id}c"));
        let spaces = Namespaces {
            node: format!("accelhost-{id}-node"),
            client: format!("accelhost-{id}-client"),
            client_link: b.clone(),
        };
        ip(&["netns", "add", &spaces.node])?;
        ip(&["netns", "add", &spaces.client])?;
        ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
        ip(&["link", "set", &a, "netns", &spaces.node])?;
        ip(&["link", "set", &b, "netns", &spaces.client])?;
        for (space, link, address) in [
            (&spaces.node, &a, NODE_ADDRESS),
            (&spaces.client, &b, CLIENT_ADDRESS),
        ] {
            ip(&[
                "-n",
                space,
                "addr",
                "add",
                &format!("{address}/24"),
                "dev",
                link,
            ])?;
            ip(&["-n", space, "link", "set", link, "up"])?;
            ip(&["-n", space, "link", "set", "lo", "up"])?;
        }
        Ok(spaces)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end inside it, and with it the pair.
        let _ = ip(&["netns", "del", &self.node]);
        let _ = ip(&["netns", "del", &self.client]);
    }
}

/// `accelhost serve` inside the node's namespace, on the serve config in `dir`.
fn serve_in(spaces: &Namespaces, dir: &Path) -> Served {
    Served::start(
        &["ip", "netns", "exec", &spaces.node, BIN],
        dir,
        "(mutual TLS)",
    )
    .0
}

/// Runs `work` on a thread whose sockets live in namespace `name`.
fn in_namespace<R: Send + 'static>(name: &str, work: impl FnOnce() -> R + Send + 'static) -> R {
    let path = format!("/var/run/netns/{name}");
    std::thread::spawn(move || {
        let space = File::open(&path).unwrap_or_else(|err| panic!("{path}: {err}"));
        // SAFETY: the descriptor is a network namespace file, open for the call; setns moves
        // only this thread.
        let rc = unsafe { libc::setns(space.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        work()
    })
    .join()
    .unwrap()
}

fn client_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn setup() -> Result<(Namespaces, Pki, SocketAddr), String> {
    let spaces = Namespaces::create()?;
    let pki = Pki::new();
    std::fs::write(
        pki.dir.join("serve.json"),
        format!(
            r#"{{"node_name": "node-a",
                "listen": {{"tcp": {{"address": "{NODE_ADDRESS}:7700", "certificate": "node.pem",
                                    "key": "node.key", "client_ca": "client-ca.pem"}}}},
                "clients": [{{"name": "peer", "certificate_san": "client1.test",
                             "grants": {{"devices": ["dfl/*"]}}}}]}}"#
        ),
    )
    .unwrap();
    let address: SocketAddr = format!("{NODE_ADDRESS}:7700").parse().unwrap();
    Ok((spaces, pki, address))
}

/// hello_fpga from the client's namespace on the node's NLB0 port, byte-exact, over mutual
/// TLS across the veth pair; a client with a stranger's certificate is refused.
fn hello_fpga_across_namespaces() -> Outcome {
    let (spaces, pki, address) = match setup() {
        Ok(set) => set,
        Err(why) => return Outcome::Skipped(why),
    };
    let _served = serve_in(&spaces, &pki.dir);
    let good = pki.endpoint_named(address, "node-a", "good");
    let stranger = pki.endpoint_named(address, "node-a", "stranger");
    in_namespace(&spaces.client, move || {
        client_runtime().block_on(async {
            let client = Client::connect(&good, ClientOptions::default())
                .await
                .unwrap_or_else(|err| panic!("{err}"));
            assert_eq!(client.node_name(), "node-a");
            let devices = client.enumerate(vec![]).await.unwrap();
            assert_eq!(devices.len(), 1);
            hello_fpga(&client, "dfl/emu:dfl0", 4 << 20).await;
            let refused: RemoteError = Client::connect(&stranger, ClientOptions::default())
                .await
                .err()
                .expect("a stranger's certificate is refused");
            assert!(
                refused.to_string().contains("is not a client of this node"),
                "{refused}"
            );
        })
    });
    // From this test's own namespace the node's address does not exist.
    let outside = client_runtime().block_on(Client::connect(
        &pki.endpoint_named(address, "node-a", "good"),
        ClientOptions {
            connect_timeout: Duration::from_secs(1),
            ..ClientOptions::default()
        },
    ));
    assert!(
        outside.is_err(),
        "the node is reachable only inside the namespaces"
    );
    Outcome::Passed
}

/// Polls a register that never matches from the client's namespace (for up to 50 s), does
/// `cut` to the node once the poll waits, and returns the error and how long the poll took.
fn poll_then_cut(keepalive: Duration, cut: impl FnOnce(&Namespaces, &mut Served)) -> Outcome {
    let (spaces, pki, address) = match setup() {
        Ok(set) => set,
        Err(why) => return Outcome::Skipped(why),
    };
    let mut served = serve_in(&spaces, &pki.dir);
    let good = pki.endpoint_named(address, "node-a", "good");
    let (ready, go) = mpsc::channel::<()>();
    let (polled, result) = mpsc::channel();
    let client_space = spaces.client.clone();
    let worker = std::thread::spawn(move || {
        in_namespace(&client_space, move || {
            client_runtime().block_on(async {
                let options = ClientOptions {
                    keepalive,
                    ..ClientOptions::default()
                };
                let client = Client::connect(&good, options).await.unwrap();
                client.enumerate(vec![]).await.unwrap();
                let handle = client.open("dfl/emu:dfl0", false).await.unwrap();
                let (region, _) = client.map_mmio(handle, 0).await.unwrap();
                ready.send(()).unwrap();
                let started = Instant::now();
                let err = client
                    .poll64(region, 0x100, u64::MAX, 1, Duration::from_secs(50))
                    .await
                    .unwrap_err();
                polled.send((err.to_string(), started.elapsed())).unwrap();
            })
        })
    });
    go.recv_timeout(Duration::from_secs(60)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    cut(&spaces, &mut served);
    let (message, waited) = result.recv_timeout(Duration::from_secs(60)).unwrap();
    worker.join().unwrap();
    assert!(
        message.starts_with(&format!("node https://{address}: MmioPoll:")),
        "{message}"
    );
    assert!(
        waited < Duration::from_secs(15),
        "the call ended after {waited:?}"
    );
    Outcome::Passed
}

/// The node is killed mid-call: the client's call fails within its deadline, naming the
/// node.
fn a_node_killed_mid_call_fails_the_call_across_namespaces() -> Outcome {
    poll_then_cut(ClientOptions::default().keepalive, |_, served| {
        served.child.kill().unwrap();
    })
}

/// The link between the namespaces goes down mid-poll: no connection is closed, nothing
/// answers, and the client's keepalive ends the call well within the poll's 50 s.
fn a_partition_mid_call_ends_the_call_within_the_keepalive() -> Outcome {
    poll_then_cut(Duration::from_secs(2), |spaces, _| {
        ip(&[
            "-n",
            &spaces.client,
            "link",
            "set",
            &spaces.client_link,
            "down",
        ])
        .unwrap();
    })
}

/// This file's trials, run by tests/suite_cli_trials.rs.
pub fn trials() -> Vec<Trial> {
    vec![
        Trial {
            name: "hello_fpga_across_namespaces",
            run: hello_fpga_across_namespaces,
        },
        Trial {
            name: "a_node_killed_mid_call_fails_the_call_across_namespaces",
            run: a_node_killed_mid_call_fails_the_call_across_namespaces,
        },
        Trial {
            name: "a_partition_mid_call_ends_the_call_within_the_keepalive",
            run: a_partition_mid_call_ends_the_call_within_the_keepalive,
        },
    ]
}
