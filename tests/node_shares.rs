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
    let mut env = vec![
        (HELPER_SOCKET, socket.display().to_string()),
        (HELPER_TICKET, hex(ticket)),
    ];
    if let Some(uid) = as_uid {
        env.push((HELPER_UID, uid.to_string()));
    }
    if attach {
        env.push((HELPER_ATTACH, "1".to_string()));
    }
    let (_, out, err) = support::run_test_alone(
        "node_shares::ticket_redeemer",
        &env,
        Duration::from_secs(60),
    );
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

use crate::node::fetch_at as fetch;

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

// --- the node-wide connection pools keep a share for the named clients ---

/// `count` connections to `socket` made as `uid` (with the same gid): the thread that makes
/// them takes on that effective uid for its connects alone (a raw `setresuid` changes the
/// calling thread's credentials only, and the kernel records them as the connection's peer),
/// then goes back. An error when the system refuses the change (not root).
fn connect_as(
    uid: u32,
    socket: &Path,
    count: usize,
) -> std::io::Result<Vec<std::os::unix::net::UnixStream>> {
    let socket = socket.to_owned();
    std::thread::spawn(move || {
        // SAFETY: plain calls; -1 (as the kernel reads it, u32::MAX) leaves an id unchanged.
        let switch = |gid: u32, uid: u32| unsafe {
            let keep = -1 as libc::c_long;
            if libc::syscall(libc::SYS_setresgid, keep, gid as libc::c_long, keep) != 0
                || libc::syscall(libc::SYS_setresuid, keep, uid as libc::c_long, keep) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        };
        // SAFETY: getters without preconditions.
        let (own_uid, own_gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        switch(uid, uid)?;
        let made = (0..count)
            .map(|_| std::os::unix::net::UnixStream::connect(&socket))
            .collect::<std::io::Result<Vec<_>>>();
        // Back to our own, uid first (the gid may only change while root).
        // SAFETY: as above.
        unsafe {
            let keep = -1 as libc::c_long;
            libc::syscall(libc::SYS_setresuid, keep, own_uid as libc::c_long, keep);
            libc::syscall(libc::SYS_setresgid, keep, own_gid as libc::c_long, keep);
        }
        made
    })
    .join()
    .unwrap()
}

/// Whether the node closed `stream` (end of file or a reset), looking without waiting.
fn closed_unix(stream: &std::os::unix::net::UnixStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut byte = [0u8; 1];
    // SAFETY: one byte into a local buffer, on a socket the test holds.
    let n = unsafe {
        libc::recv(
            std::os::fd::AsRawFd::as_raw_fd(stream),
            byte.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n == 0 || (n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock)
}

/// The uids the flood comes from: none is named in the serve config.
fn stranger_uids(count: u32) -> impl Iterator<Item = u32> {
    (0..count).map(|i| 20_000 + i)
}

/// 30 local users no client names, 8 idle connections each, at once: together they hold at
/// most their share of the node's connections (an eighth of `max_connections` by default),
/// and the named client still connects and works meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unnamed_local_users_leave_the_socket_to_the_named_client() {
    let node = open_node(
        "unnamed",
        r#""max_connections": 240, "max_connections_per_peer": 8"#,
    )
    .await;
    let socket = node.socket.clone();
    let flood = tokio::task::spawn_blocking(move || {
        let mut held = Vec::new();
        for uid in stranger_uids(30) {
            held.extend(connect_as(uid, &socket, 8)?);
        }
        Ok::<_, std::io::Error>(held)
    })
    .await
    .unwrap();
    let held = match flood {
        Ok(held) => held,
        Err(err) => {
            eprintln!(
                "not checked: connecting as other uids is refused here ({err}; it needs root)"
            );
            node.stop().await;
            return;
        }
    };
    assert_eq!(held.len(), 240);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let open = held.iter().filter(|s| !closed_unix(s)).count();
    assert_eq!(
        open, 30,
        "the unnamed users hold exactly their share (240 / 8) of the node's connections"
    );
    let started = Instant::now();
    let client = Client::connect(&node.unix(), ClientOptions::default())
        .await
        .expect("the named client connects while strangers hold their share");
    assert!(!client.enumerate(vec![]).await.unwrap().is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(client.client_name(), "owner");
    drop((client, held));
    node.stop().await;
}

/// `count` TCP connections from `from` to `to` that never start TLS.
async fn silent_tcp(
    from: &str,
    to: std::net::SocketAddr,
    count: usize,
) -> Vec<tokio::net::TcpStream> {
    let mut made = Vec::with_capacity(count);
    for _ in 0..count {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        made.push(socket.connect(to).await.unwrap());
    }
    made
}

/// Whether the node closed `stream`, looking without waiting.
fn closed_tcp(stream: &tokio::net::TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.try_read(&mut byte) {
        Ok(_) => true,
        Err(err) => err.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// 60 addresses (127.0.0.2 to .61) open 8 TCP connections each and never start TLS, filling
/// `max_connections` as the flood of the issue did: they hold at most the handshakes' share,
/// a client with a valid certificate completes its handshake in the middle of them and
/// works, and so does a client of the Unix socket, long before the handshake time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_tcp_connections_of_many_addresses_leave_room_for_named_clients() {
    let pki = remote::Pki::new();
    let config = format!(
        r#"{{"listen": {{"unix": {{"path": "@SOCKET@", "mode": "0600"}},
                        "tcp": {{"address": "127.0.0.1:0", "certificate": "node.pem",
                                 "key": "node.key", "client_ca": "client-ca.pem"}}}},
            "limits": {{"max_connections": 480, "max_connections_per_peer": 8}},
            "clients": [{{"name": "remote", "certificate_san": "client1.test",
                          "grants": {{"devices": ["dfl/*"]}}}},
                        {{"name": "local", "unix_uid": {}, "grants": {{"devices": ["*"]}}}}]}}"#,
        uid()
    );
    let node = start_in(pki.dir.clone(), &config).await;
    let address = node.tcp.unwrap();
    let mut silent = Vec::new();
    for host in 2..62 {
        silent.extend(silent_tcp(&format!("127.0.0.{host}"), address, 8).await);
    }
    assert_eq!(silent.len(), 480);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = silent.iter().filter(|s| !closed_tcp(s)).count();
    assert_eq!(
        held, 60,
        "the silent connections hold the handshakes' share (480 / 8)"
    );

    let started = Instant::now();
    let remote = Client::connect(&pki.endpoint(address, "good"), ClientOptions::default())
        .await
        .expect("a client with a valid certificate connects through the silent ones");
    assert_eq!(remote.client_name(), "remote");
    remote.enumerate(vec![]).await.unwrap();
    remote::hello_fpga(&remote, "dfl/emu:dfl0", 64 << 10).await;
    let local = Client::connect(&node.unix(), ClientOptions::default())
        .await
        .expect("a client of the socket connects meanwhile");
    assert!(!local.enumerate(vec![]).await.unwrap().is_empty());
    let took = started.elapsed();
    assert!(
        took < accelhost_node::config::Limits::default().handshake_time() / 2,
        "the named clients waited {took:?}, as if for the silent ones' handshake time"
    );
    let held = silent.iter().filter(|s| !closed_tcp(s)).count();
    assert!(held <= 60, "{held} silent connections held");
    drop((remote, local, silent));
    node.stop().await;
}

// --- a plugin's part of its host's sessions ---

/// A host of this process whose one plugin (`hoarder`, the chaos plugin) connects to the node
/// at `endpoint` through the `remote` import as often as the host lets it at `enumerate`, and
/// keeps every session; `sessions` is what its grant says, if anything.
fn hoarding_host(endpoint: &str, sessions: Option<u32>) -> accelhost::Host {
    let share = sessions.map_or(String::new(), |n| format!(r#", "sessions": {n}"#));
    let config = format!(
        r#"{{"plugins": [{{"name": "hoarder", "module": "builtin:chaos",
             "config": {{"attack_in": "enumerate", "attack": "hoard-sessions",
                         "target": "{endpoint}"}},
             "grants": {{"remote": [{{"endpoint": "{endpoint}"{share}}}]}},
             "load_policy": {{"call_timeout_ms": 20000, "busy_percent": 100,
                              "on_fault": "disable"}}}}]}}"#
    );
    let path = scratch_dir("hoarder").join("accelhost.json");
    std::fs::write(&path, config).unwrap();
    accelhost::Host::builder()
        .config(accelhost::Config::load(&path).unwrap())
        .cache_dir(support::cache_dir())
        .remote(std::sync::Arc::new(accelhost_node::NodeConnector::new()))
        .build()
        .unwrap()
}

/// Five hosts of this user, each with a plugin that connects to the node through the
/// `remote` import as often as its host lets it and keeps every session: each plugin holds
/// its grant's part (4 by default) and is refused past it, naming the grant, and an
/// unrelated program of the same user still attaches and lists the node's devices.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_hold_only_their_part_of_their_host_s_sessions_on_a_node() {
    let node = open_node("plugin-share", "").await;
    let endpoint = format!("unix://{}", node.socket.display());
    let hosts = tokio::task::spawn_blocking(move || {
        let hosts: Vec<accelhost::Host> = (0..5).map(|_| hoarding_host(&endpoint, None)).collect();
        for host in &hosts {
            let answer = host.enumerate(&[]);
            let refused = answer
                .failures
                .first()
                .unwrap_or_else(|| panic!("the hoarder met no limit: {:?}", answer.tokens.len()))
                .to_string();
            assert!(
                refused.contains("holds 4 sessions with that node")
                    && refused.contains("grants.remote[].sessions: 4"),
                "{refused}"
            );
        }
        hosts
    })
    .await
    .unwrap();
    assert_eq!(
        node.sessions.per_client().get("owner").copied(),
        Some(20),
        "five hosts' plugins hold four sessions each"
    );
    let unrelated = Client::connect(&node.unix(), ClientOptions::default())
        .await
        .expect("an unrelated program of the same user still attaches");
    assert!(!unrelated.enumerate(vec![]).await.unwrap().is_empty());
    drop(unrelated);

    // A grant may give a plugin more, up to what its host's identity may hold on the node.
    let endpoint = format!("unix://{}", node.socket.display());
    let generous = tokio::task::spawn_blocking(move || {
        let host = hoarding_host(&endpoint, Some(10));
        let refused = host.enumerate(&[]).failures[0].to_string();
        assert!(
            refused.contains("holds 10 sessions with that node"),
            "{refused}"
        );
        host
    })
    .await
    .unwrap();
    assert_eq!(node.sessions.per_client().get("owner").copied(), Some(30));
    tokio::task::spawn_blocking(move || drop((hosts, generous)))
        .await
        .unwrap();
    node.stop().await;
}
