//! The node against hostile local users and peers, and its clients' plugins: a shared-memory
//! ticket is redeemed only by the process that attached its session, once and in time; the
//! node-wide pools (connections on the socket, TCP connections before TLS) keep a share for
//! the clients the config names; and plugins that reach a node through the `remote` import
//! hold only their part of their host's sessions there.
//!
//! The tests that need other uids run as root (as the suite does): a thread or a child
//! process takes on another uid before it connects. Where that is refused, the test says so
//! and checks what it can.

use crate::remote;
use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use accelhost_node::proto::MemoryKind;
use accelhost_node::{Client, ClientOptions, Endpoint};
use remote::{RunningNode, start_in, uid};
use support::scratch_dir;

/// The environment variables the redeeming helper reads.
const HELPER_SOCKET: &str = "ACCELHOST_TEST_REDEEM_SOCKET";
const HELPER_TICKET: &str = "ACCELHOST_TEST_REDEEM_TICKET";
const HELPER_UID: &str = "ACCELHOST_TEST_REDEEM_UID";
const HELPER_ATTACH: &str = "ACCELHOST_TEST_REDEEM_ATTACH";
/// What the helper prints before its outcome.
const HELPER_SAYS: &str = "redeem helper: ";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// Not a test: the other process of the ticket tests. Given a node socket and a ticket in
/// its environment, it takes on another uid (if told), attaches a session of its own (if
/// told), then redeems the ticket and prints what happened.
#[test]
#[ignore = "a helper: the ticket tests run it in a process of its own"]
fn ticket_redeemer() {
    let (Ok(socket), Ok(ticket)) = (std::env::var(HELPER_SOCKET), std::env::var(HELPER_TICKET))
    else {
        return;
    };
    if let Ok(uid) = std::env::var(HELPER_UID) {
        let uid: u32 = uid.parse().unwrap();
        // SAFETY: plain calls; glibc applies them to every thread of the process.
        let changed = unsafe { libc::setgid(uid) == 0 && libc::setuid(uid) == 0 };
        if !changed {
            println!(
                "{HELPER_SAYS}cannot become uid {uid}: {}",
                std::io::Error::last_os_error()
            );
            return;
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _own = std::env::var(HELPER_ATTACH).is_ok().then(|| {
        let client = runtime
            .block_on(Client::connect(
                &Endpoint::Unix(socket.clone().into()),
                ClientOptions::default(),
            ))
            .unwrap();
        println!("{HELPER_SAYS}attached as client '{}'", client.client_name());
        client
    });
    let fetched = accelhost_node::shared_memory::fetch(
        Path::new(&socket),
        &unhex(&ticket),
        Instant::now() + Duration::from_secs(10),
    );
    match fetched {
        Ok(_) => println!("{HELPER_SAYS}REDEEMED"),
        Err(err) => println!("{HELPER_SAYS}REFUSED {err}"),
    }
}

/// Runs [`ticket_redeemer`] in a process of its own on `ticket` at `socket`, as `as_uid` if
/// given, attaching a session first if `attach`; its outcome line.
fn redeem_elsewhere(socket: &Path, ticket: &[u8], as_uid: Option<u32>, attach: bool) -> String {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "node_shares::ticket_redeemer",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER_SOCKET, socket)
        .env(HELPER_TICKET, hex(ticket))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(uid) = as_uid {
        command.env(HELPER_UID, uid.to_string());
    }
    if attach {
        command.env(HELPER_ATTACH, "1");
    }
    let mut child = command.spawn().unwrap();
    // Read on threads of their own, so that a helper that writes much never blocks.
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as _));
    let err = read(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the redeeming helper did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    let said: Vec<&str> = out
        .lines()
        .filter_map(|line| {
            line.find(HELPER_SAYS)
                .map(|at| &line[at + HELPER_SAYS.len()..])
        })
        .collect();
    assert!(!said.is_empty(), "the helper said nothing:\n{out}\n{err}");
    said.join("\n")
}

/// A node on a socket every uid may connect to, naming this process's uid as its client.
async fn open_node(label: &str, limits: &str) -> RunningNode {
    let dir = scratch_dir(label);
    let config = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@", "mode": "0666"}}}},
            "limits": {{{limits}}},
            "clients": [{{"name": "owner", "unix_uid": {},
                          "grants": {{"devices": ["*"], "dma_memory_mib": 64}}}}]}}"#,
        uid()
    );
    start_in(dir, &config).await
}

async fn fetch(socket: &Path, ticket: &[u8]) -> std::io::Result<std::os::fd::OwnedFd> {
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

/// A fresh 4 KiB of host memory on the card, and the ticket its reply offered.
async fn offered(client: &Client, handle: u64) -> Vec<u8> {
    client
        .alloc(handle, MemoryKind::Host, 4096, None)
        .await
        .unwrap()
        .shared
        .expect("a local client that asks is offered the memory")
        .ticket
        .to_vec()
}

/// The uid the tests take on as a local user no client names.
const STRANGER_UID: u32 = 65534;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_is_redeemed_by_the_process_that_attached_alone_once_and_in_time() {
    let node = open_node("tickets", "").await;
    let socket = node.socket.clone();
    let sharing = ClientOptions {
        share_memory: true,
        ..ClientOptions::default()
    };
    let client = Client::connect(&node.unix(), sharing).await.unwrap();
    client.enumerate(vec![]).await.unwrap();
    let handle = client.open("xocl/emu:xocl0", true).await.unwrap();
    let ticket = offered(&client, handle).await;

    // A local user no client names, with the ticket in hand.
    let (s, t) = (socket.clone(), ticket.clone());
    let stranger =
        tokio::task::spawn_blocking(move || redeem_elsewhere(&s, &t, Some(STRANGER_UID), false))
            .await
            .unwrap();
    if stranger.contains("cannot become uid") {
        eprintln!("not checked: another uid's redeem ({stranger}; it needs root)");
    } else {
        assert!(
            stranger.starts_with("REFUSED")
                && stranger.contains(&format!("uid {STRANGER_UID}"))
                && stranger.contains("not from the process that attached"),
            "another uid redeemed the ticket: {stranger}"
        );
    }

    // Another process of the same user, itself a client of the node with a session of its own.
    let (s, t) = (socket.clone(), ticket.clone());
    let neighbour = tokio::task::spawn_blocking(move || redeem_elsewhere(&s, &t, None, true))
        .await
        .unwrap();
    assert!(
        neighbour.contains("attached as client 'owner'"),
        "the other process attached: {neighbour}"
    );
    assert!(
        neighbour.contains("REFUSED") && neighbour.contains("not from the process that attached"),
        "another process of the client redeemed the ticket: {neighbour}"
    );

    // Their tries did not spend it: the process that attached redeems it, once.
    fetch(&socket, &ticket)
        .await
        .expect("the attaching process redeems its ticket after others were refused");
    let twice = fetch(&socket, &ticket).await.unwrap_err().to_string();
    assert!(twice.contains("no memory on offer"), "{twice}");

    // Late: past the offer's lifetime.
    let late = offered(&client, handle).await;
    tokio::time::sleep(accelhost_node::offer::OFFER_LIFETIME + Duration::from_millis(300)).await;
    let err = fetch(&socket, &late).await.unwrap_err().to_string();
    assert!(err.contains("expired"), "{err}");
    drop(client);
    node.stop().await;
}
