//! `accelhost serve` as a Kubernetes device plugin, driven from the kubelet's side by a
//! stand-in kubelet built on the project's own copy of the device-plugin API
//! (`node/proto/deviceplugin/v1beta1/api.proto`): registration (also when the kubelet's
//! socket appears late, and again when the kubelet restarts), health that follows a plugin's
//! fault and recovery, allocation, and a "pod" — a process given only the allocation's
//! environment and mount, in a mount namespace of its own — that runs NLB0 byte-exact and is
//! refused every other device.

use crate::served;
use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use accelhost_node::client::channel;
use accelhost_node::kubelet::v1beta1::{
    self, device_plugin_client::DevicePluginClient, registration_server,
};
use accelhost_node::{Client, ClientOptions, Endpoint};
use served::Served;
use support::{ShortScratch, cache_dir, chaos_plugin_with, dfl_devices, dfl_plugin, text};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::Channel;

const BIN: &str = env!("CARGO_BIN_EXE_accelhost");
/// NLB0's resource: the emulated DFL cards' AFU.
const NLB0: &str = "accelhost.io/af-d8424dc4a4a3c413f89e433683f9040b";
/// The chaos plugin's one accelerator's resource.
const CHAOS: &str = "accelhost.io/af-fa017fa017fa017f0000000000000001";
/// How long any one step may take.
const STEP: Duration = Duration::from_secs(60);

fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// Writes the host config (two NLB0 cards and the chaos plugin, which traps in `open` and
/// restarts after 2 s) and the serve config with the device plugin on, in `dir`.
fn write_configs(dir: &Path) {
    let chaos = chaos_plugin_with(
        "chaos",
        r#"{"trap_in": "open"}"#,
        &[],
        r#""on_fault": "restart", "restart_backoff_ms": 2000, "max_restarts": 100"#,
    );
    std::fs::write(
        dir.join("host.json"),
        format!(
            r#"{{"devices": {}, "plugins": [{}, {chaos}]}}"#,
            dfl_devices(&["d0", "d1"]),
            dfl_plugin(&["d0", "d1"])
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("serve.json"),
        format!(
            r#"{{"node_name": "k8s-node", "host_config": "host.json",
                "listen": {{"unix": {{"path": "node.sock"}},
                            "metrics": {{"address": "127.0.0.1:0"}}}},
                "health_interval_ms": 200,
                "clients": [{{"name": "ops", "unix_uid": {}, "grants": {{"devices": ["*"]}}}}],
                "kubernetes": {{"device_plugin_dir": "plugins", "allocation_dir": "allocations",
                                "container_dir": "/run/accelhost"}}}}"#,
            uid()
        ),
    )
    .unwrap();
}

/// The kubelet's registration service, as a stand-in: it records what registers.
struct Kubelet {
    registered: Arc<Mutex<mpsc::UnboundedSender<v1beta1::RegisterRequest>>>,
}

#[tonic::async_trait]
impl registration_server::Registration for Kubelet {
    async fn register(
        &self,
        request: tonic::Request<v1beta1::RegisterRequest>,
    ) -> Result<tonic::Response<v1beta1::Empty>, tonic::Status> {
        let request = request.into_inner();
        if request.version != "v1beta1" {
            return Err(tonic::Status::invalid_argument("unsupported version"));
        }
        let _ = self.registered.lock().unwrap().send(request);
        Ok(tonic::Response::new(v1beta1::Empty {}))
    }
}

/// A running stand-in kubelet.
struct RunningKubelet {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    registrations: mpsc::UnboundedReceiver<v1beta1::RegisterRequest>,
    dir: PathBuf,
}

impl RunningKubelet {
    /// Starts the kubelet on `dir/kubelet.sock`, deleting every other socket there first, as
    /// the kubelet does when it starts.
    fn start(dir: &Path) -> RunningKubelet {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
        let listener = tokio::net::UnixListener::bind(dir.join("kubelet.sock")).unwrap();
        let (send, registrations) = mpsc::unbounded_channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = registration_server::RegistrationServer::new(Kubelet {
            registered: Arc::new(Mutex::new(send)),
        });
        let task = tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming_shutdown(UnixListenerStream::new(listener), async {
                    let _ = stopped.await;
                })
                .await;
        });
        RunningKubelet {
            stop: Some(stop),
            task,
            registrations,
            dir: dir.to_owned(),
        }
    }

    /// Waits for registrations until every resource of `resources` registered; returns
    /// the endpoint of each.
    async fn registered(&mut self, resources: &[&str]) -> BTreeMap<String, String> {
        let mut endpoints = BTreeMap::new();
        while !resources.iter().all(|r| endpoints.contains_key(*r)) {
            let request = tokio::time::timeout(STEP, self.registrations.recv())
                .await
                .expect("the node registers within a minute")
                .unwrap();
            let options = request.options.unwrap();
            assert!(options.get_preferred_allocation_available);
            assert!(!options.pre_start_required);
            assert!(
                self.dir.join(&request.endpoint).exists(),
                "{}",
                request.endpoint
            );
            endpoints.insert(request.resource_name, request.endpoint);
        }
        endpoints
    }

    /// Stops like a kubelet that goes down: its socket is gone.
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let _ = self.task.await;
        let _ = std::fs::remove_file(self.dir.join("kubelet.sock"));
    }
}

/// A client of the plugin socket `endpoint` in `dir`, as the kubelet dials it.
async fn plugin(dir: &Path, endpoint: &str) -> DevicePluginClient<Channel> {
    let endpoint = Endpoint::Unix(dir.join(endpoint));
    DevicePluginClient::new(channel(&endpoint, ClientOptions::default()).await.unwrap())
}

/// The body of `GET http://{address}/metrics`.
fn scrape(address: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(STEP)).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// The next device list of a `ListAndWatch` stream, as id → health.
async fn next_list(
    stream: &mut tonic::Streaming<v1beta1::ListAndWatchResponse>,
) -> BTreeMap<String, String> {
    let answer = tokio::time::timeout(STEP, stream.message())
        .await
        .expect("ListAndWatch answers within a minute")
        .unwrap()
        .expect("the stream goes on");
    answer
        .devices
        .into_iter()
        .map(|d| (d.id, d.health))
        .collect()
}

/// Reads `stream` until its device `id` has `health`.
async fn until_health(
    stream: &mut tonic::Streaming<v1beta1::ListAndWatchResponse>,
    id: &str,
    health: &str,
) {
    loop {
        let list = next_list(stream).await;
        if list.get(id).map(String::as_str) == Some(health) {
            return;
        }
    }
}

async fn allocate(
    client: &mut DevicePluginClient<Channel>,
    containers: &[&[&str]],
) -> Result<v1beta1::AllocateResponse, tonic::Status> {
    client
        .allocate(v1beta1::AllocateRequest {
            container_requests: containers
                .iter()
                .map(|ids| v1beta1::ContainerAllocateRequest {
                    devices_ids: ids.iter().map(|s| s.to_string()).collect(),
                })
                .collect(),
        })
        .await
        .map(tonic::Response::into_inner)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Starts the node in `dir`; returns it and its metrics address.
fn start_node(dir: &Path) -> (Served, String) {
    let (node, line) = Served::start(&[BIN], dir, "accelhost serve: node 'k8s-node' on");
    let metrics = line
        .split_once("metrics at http://")
        .and_then(|(_, rest)| rest.split("/metrics").next())
        .expect("the metrics address")
        .to_owned();
    (node, metrics)
}

/// Runs `args` of `accelhost` as a container of the pod would: in a mount namespace of its
/// own, with a fresh /run holding only the allocation's folder at its container path, and an
/// environment of nothing but what Allocate gave (and the path to find `sh`). Where mount
/// namespaces are refused, the same command runs against the folder's host path, and says so.
fn in_pod(allocated: &v1beta1::ContainerAllocateResponse, args: &[&str]) -> Output {
    let mount = &allocated.mounts[0];
    let mut env: Vec<(String, String)> = allocated
        .envs
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    env.push(("PATH".into(), "/usr/bin:/bin".into()));
    env.push((
        "ACCELHOST_CACHE_DIR".into(),
        cache_dir().display().to_string(),
    ));
    let namespaces = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .status()
        .is_ok_and(|s| s.success());
    let mut command = if namespaces {
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private", "sh", "-c"]).arg(format!(
            "mount -t tmpfs tmpfs /run && mkdir -p '{0}' && mount --bind -o ro '{1}' '{0}' && exec \"$@\"",
            mount.container_path, mount.host_path
        ));
        c.arg("pod").arg(BIN);
        c
    } else {
        eprintln!(
            "mount namespaces are refused here: the pod's command reaches the allocation's \
             socket at its host path instead of a mount"
        );
        for (key, value) in env.iter_mut() {
            if key == "ACCELHOST_ENDPOINT" {
                *value = value.replace(&mount.container_path, &mount.host_path);
            }
        }
        Command::new(BIN)
    };
    command.args(args).env_clear().envs(env);
    command.output().unwrap()
}

#[test]
fn a_pod_runs_nlb0_on_its_allocated_device_and_is_refused_every_other() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = ShortScratch::new("alloc");
    std::fs::create_dir_all(scratch.0.join("plugins")).unwrap();
    let dir = &scratch.0;
    write_configs(dir);
    // As a DaemonSet's `DirectoryOrCreate` leaves it: open to everyone. The node closes it.
    std::fs::create_dir(dir.join("allocations")).unwrap();
    std::fs::set_permissions(
        dir.join("allocations"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let rt = runtime();
    let mut kubelet = rt.block_on(async { RunningKubelet::start(&dir.join("plugins")) });
    let (mut node, _) = start_node(dir);
    assert_eq!(
        std::fs::metadata(dir.join("allocations"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700,
        "the node makes the allocation folder its own at start"
    );
    rt.block_on(async {
        let endpoints = kubelet.registered(&[NLB0, CHAOS]).await;
        let mut nlb0 = plugin(&dir.join("plugins"), &endpoints[NLB0]).await;
        let options = nlb0
            .get_device_plugin_options(v1beta1::Empty {})
            .await
            .unwrap()
            .into_inner();
        assert!(options.get_preferred_allocation_available);
        let mut watch = nlb0
            .list_and_watch(v1beta1::Empty {})
            .await
            .unwrap()
            .into_inner();
        let list = next_list(&mut watch).await;
        assert_eq!(
            list,
            BTreeMap::from([
                ("dfl/emu:d0".to_string(), "Healthy".to_string()),
                ("dfl/emu:d1".to_string(), "Healthy".to_string()),
            ])
        );
        let preferred = nlb0
            .get_preferred_allocation(v1beta1::PreferredAllocationRequest {
                container_requests: vec![v1beta1::ContainerPreferredAllocationRequest {
                    available_device_ids: vec!["dfl/emu:d1".into(), "dfl/emu:d0".into()],
                    must_include_device_ids: vec![],
                    allocation_size: 1,
                }],
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            preferred.container_responses[0].device_ids,
            vec!["dfl/emu:d0"]
        );

        // Bad requests name what is wrong, and allocate nothing.
        let unknown = allocate(&mut nlb0, &[&["dfl/emu:nope"]]).await.unwrap_err();
        assert_eq!(unknown.code(), tonic::Code::InvalidArgument);
        assert!(unknown.message().contains("'dfl/emu:nope'"), "{unknown:?}");
        assert!(
            unknown.message().contains("dfl/emu:d0, dfl/emu:d1"),
            "{unknown:?}"
        );
        let chaos_here = allocate(&mut nlb0, &[&["chaos/chaos0"]]).await.unwrap_err();
        assert_eq!(
            chaos_here.code(),
            tonic::Code::InvalidArgument,
            "another resource's device"
        );
        let twice = allocate(&mut nlb0, &[&["dfl/emu:d1"], &["dfl/emu:d1"]])
            .await
            .unwrap_err();
        assert!(twice.message().contains("asked for twice"), "{twice:?}");
        let allocations = dir.join("allocations");
        let folders = |dir: &Path| {
            std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .filter(|e| e.path().is_dir())
                .count()
        };
        assert_eq!(
            folders(&allocations),
            0,
            "a refused Allocate leaves nothing"
        );

        let answer = allocate(&mut nlb0, &[&["dfl/emu:d0"]]).await.unwrap();
        let container = answer.container_responses[0].clone();
        assert_eq!(
            container.envs["ACCELHOST_ENDPOINT"],
            "unix:///run/accelhost/node.sock"
        );
        assert_eq!(container.mounts.len(), 1);
        let mount = &container.mounts[0];
        assert_eq!(mount.container_path, "/run/accelhost");
        assert!(mount.read_only);
        assert!(Path::new(&mount.host_path).join("node.sock").exists());
        assert!(
            container.devices.is_empty(),
            "no raw device nodes by default"
        );
        let host_socket = Path::new(&mount.host_path).join("node.sock");

        // The pod sees one device, runs hello_fpga on it byte-exact.
        let listed = in_pod(&container, &["list", "--host", "*", "--json"]);
        assert!(listed.status.success(), "{}", text(&listed.stderr));
        let devices: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
        assert_eq!(devices.len(), 1, "{devices:?}");
        assert_eq!(devices[0]["extras"]["node-id"], "dfl/emu:d0", "{devices:?}");
        let demo = in_pod(
            &container,
            &[
                "demo",
                "--host",
                "*",
                "--sizes",
                "1MiB",
                "--elements",
                "1Ki",
                "--launches",
                "10",
            ],
        );
        let table = text(&demo.stdout);
        assert!(demo.status.success(), "{table}\n{}", text(&demo.stderr));
        assert!(
            table
                .lines()
                .any(|l| l.contains("hello_fpga") && l.contains("verified")),
            "{table}"
        );

        // A client of the allocation's socket is refused the device it was not given.
        let pod_client = Client::connect(
            &Endpoint::Unix(host_socket.clone()),
            ClientOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(
            pod_client
                .enumerate(vec![])
                .await
                .unwrap()
                .iter()
                .map(|d| d.id.clone())
                .collect::<Vec<_>>(),
            vec!["dfl/emu:d0"]
        );
        let refused = pod_client.open("dfl/emu:d1", true).await.unwrap_err();
        assert_eq!(refused.grpc, tonic::Code::PermissionDenied, "{refused:?}");
        assert!(refused.message.contains("dfl/emu:d1"), "{refused:?}");

        // A pod whose init container and app container both ask for d1: the kubelet calls
        // Allocate for each before either starts. Both allocations work, one after the other,
        // and the init container's ends once the app container has used its own.
        let init = allocate(&mut nlb0, &[&["dfl/emu:d1"]]).await.unwrap();
        let app = allocate(&mut nlb0, &[&["dfl/emu:d1"]]).await.unwrap();
        let init = init.container_responses[0].clone();
        let app = app.container_responses[0].clone();
        let init_folder = PathBuf::from(&init.mounts[0].host_path);
        assert!(
            init_folder.join("node.sock").exists(),
            "the init container's allocation stays until it has run"
        );
        for container in [&init, &app] {
            let listed = in_pod(container, &["list", "--host", "*", "--json"]);
            assert!(listed.status.success(), "{}", text(&listed.stderr));
            let devices: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
            assert_eq!(devices.len(), 1, "{devices:?}");
            assert_eq!(devices[0]["extras"]["node-id"], "dfl/emu:d1", "{devices:?}");
        }
        let deadline = std::time::Instant::now() + STEP;
        while init_folder.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the init container's allocation outlived the app container's start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            Path::new(&app.mounts[0].host_path)
                .join("node.sock")
                .exists()
        );

        // While the pod is attached its device is not given again; once it is gone, it is.
        let busy = allocate(&mut nlb0, &[&["dfl/emu:d0"]]).await.unwrap_err();
        assert_eq!(busy.code(), tonic::Code::FailedPrecondition, "{busy:?}");
        assert!(busy.message().contains("still in use"), "{busy:?}");
        drop(pod_client);
        let again = loop {
            match allocate(&mut nlb0, &[&["dfl/emu:d0"]]).await {
                Ok(again) => break again,
                Err(status) if status.code() == tonic::Code::FailedPrecondition => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(status) => panic!("{status:?}"),
            }
        };
        assert!(
            host_socket.exists(),
            "the earlier allocation is superseded, and stays until the later one is used"
        );
        let second = again.container_responses[0].mounts[0].host_path.clone();
        assert_eq!(folders(&allocations), 3, "d1's app container, d0 twice");
        let second_client = Client::connect(
            &Endpoint::Unix(Path::new(&second).join("node.sock")),
            ClientOptions::default(),
        )
        .await
        .unwrap();
        second_client.enumerate(vec![]).await.unwrap();
        let deadline = std::time::Instant::now() + STEP;
        while host_socket.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "the superseded allocation outlived the use of the one that superseded it"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        drop(second_client);
        assert_eq!(folders(&allocations), 2);

        // The allocation outlives a restart of the node: its socket comes back in its folder.
        node.signal(libc::SIGTERM);
        assert!(node.wait(STEP).success());
        assert!(
            Path::new(&second).is_dir(),
            "the folder stays for the next run"
        );
        node = start_node(dir).0;
        let socket = Endpoint::Unix(Path::new(&second).join("node.sock"));
        let client = Client::connect(&socket, ClientOptions::default())
            .await
            .unwrap();
        let seen: Vec<String> = client
            .enumerate(vec![])
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect();
        assert_eq!(seen, vec!["dfl/emu:d0"]);
    });
    node.signal(libc::SIGTERM);
    assert!(node.wait(STEP).success());
}

#[test]
fn health_follows_faults_and_the_kubelet_is_found_late_and_again_after_a_restart() {
    let scratch = ShortScratch::new("health");
    std::fs::create_dir_all(scratch.0.join("plugins")).unwrap();
    let dir = &scratch.0;
    write_configs(dir);
    let rt = runtime();
    // The kubelet is not there yet: the node waits for it and says so.
    let (mut node, metrics) = start_node(dir);
    node.wait_for("waiting for the kubelet");
    let mut kubelet = rt.block_on(async { RunningKubelet::start(&dir.join("plugins")) });
    rt.block_on(async {
        let endpoints = kubelet.registered(&[NLB0, CHAOS]).await;
        let mut chaos = plugin(&dir.join("plugins"), &endpoints[CHAOS]).await;
        let mut watch = chaos
            .list_and_watch(v1beta1::Empty {})
            .await
            .unwrap()
            .into_inner();
        until_health(&mut watch, "chaos/chaos0", "Healthy").await;

        // The chaos plugin traps in open: its device is unhealthy while it restarts.
        let ops = Client::connect(
            &Endpoint::Unix(dir.join("node.sock")),
            ClientOptions::default(),
        )
        .await
        .unwrap();
        ops.enumerate(vec![]).await.unwrap();
        let trapped = ops.open("chaos/chaos0", true).await.unwrap_err();
        assert!(
            trapped.message.contains("trap") || trapped.message.contains("fault"),
            "{trapped:?}"
        );
        until_health(&mut watch, "chaos/chaos0", "Unhealthy").await;
        // A scrape while the plugin restarts: the fault counted, the device down.
        let scraped = scrape(&metrics);
        for line in [
            r#"accelhost_device_healthy{device="chaos/chaos0",plugin="chaos"} 0"#,
            r#"accelhost_device_healthy{device="dfl/emu:d0",plugin="dfl"} 1"#,
            r#"accelhost_plugin_faults_total{plugin="chaos",cause="trap"} 1"#,
            r#"accelhost_plugin_state{plugin="chaos",state="restarting"} 1"#,
        ] {
            assert!(scraped.contains(line), "{line} missing from:\n{scraped}");
        }
        until_health(&mut watch, "chaos/chaos0", "Healthy").await;

        // The kubelet restarts mid-ListAndWatch: the node registers again with the new one.
        kubelet.stop().await;
        let mut kubelet = RunningKubelet::start(&dir.join("plugins"));
        let endpoints = kubelet.registered(&[NLB0, CHAOS]).await;
        let mut nlb0 = plugin(&dir.join("plugins"), &endpoints[NLB0]).await;
        let mut watch = nlb0
            .list_and_watch(v1beta1::Empty {})
            .await
            .unwrap()
            .into_inner();
        until_health(&mut watch, "dfl/emu:d1", "Healthy").await;
        kubelet.stop().await;
    });
    node.signal(libc::SIGTERM);
    assert!(node.wait(STEP).success());
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("plugins"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        leftovers.is_empty(),
        "the node removes its sockets: {leftovers:?}"
    );
}

/// Every socket file under `dir`, recursively, as paths relative to it.
fn sockets_under(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let mut found = Vec::new();
    let mut folders = vec![dir.to_owned()];
    while let Some(folder) = folders.pop() {
        // A live node binds each socket in a folder of its own beside it, then removes the
        // folder: one gone by the time it is read held nothing that stays.
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && folder != dir => continue,
            Err(err) => panic!("{}: {err}", folder.display()),
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                folders.push(entry.path());
            } else if kind.is_socket() {
                found.push(entry.path().strip_prefix(dir).unwrap().to_owned());
            }
        }
    }
    found.sort();
    found
}

/// SIGTERM while the kubelet is up, watching, with a pod's allocation attached: the node
/// removes every socket it made (its own, the metrics socket, each resource's in the
/// kubelet's folder, each allocation's) and keeps only the allocations' folders for its next
/// run, which serves them again.
#[test]
fn sigterm_leaves_no_socket_behind() {
    let scratch = ShortScratch::new("term");
    let dir = &scratch.0;
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    write_configs(dir);
    let serve = std::fs::read_to_string(dir.join("serve.json"))
        .unwrap()
        .replace(
            r#""metrics": {"address": "127.0.0.1:0"}"#,
            r#""metrics": {"unix": {"path": "metrics.sock", "mode": "0600"}}"#,
        );
    assert!(serve.contains("metrics.sock"), "{serve}");
    std::fs::write(dir.join("serve.json"), serve).unwrap();
    let rt = runtime();
    let mut kubelet = rt.block_on(async { RunningKubelet::start(&dir.join("plugins")) });
    let (mut node, _) = Served::start(&[BIN], dir, "accelhost serve: node 'k8s-node' on");
    let (watching, pod, folder) = rt.block_on(async {
        let endpoints = kubelet.registered(&[NLB0, CHAOS]).await;
        let mut nlb0 = plugin(&dir.join("plugins"), &endpoints[NLB0]).await;
        let mut watch = nlb0
            .list_and_watch(v1beta1::Empty {})
            .await
            .unwrap()
            .into_inner();
        next_list(&mut watch).await;
        let answer = allocate(&mut nlb0, &[&["dfl/emu:d0"]]).await.unwrap();
        let folder = PathBuf::from(&answer.container_responses[0].mounts[0].host_path);
        let pod = Client::connect(
            &Endpoint::Unix(folder.join("node.sock")),
            ClientOptions::default(),
        )
        .await
        .unwrap();
        pod.enumerate(vec![]).await.unwrap();
        (watch, pod, folder)
    });
    let mut made = sockets_under(dir);
    made.retain(|p| !p.ends_with("kubelet.sock"));
    assert_eq!(
        made.len(),
        5,
        "node, metrics, two resources, one allocation: {made:?}"
    );

    node.signal(libc::SIGTERM);
    assert!(node.wait(STEP).success());
    let mut left = sockets_under(dir);
    left.retain(|p| !p.ends_with("kubelet.sock"));
    assert!(left.is_empty(), "sockets left after SIGTERM: {left:?}");
    assert!(
        folder.is_dir(),
        "the allocation's folder stays for the next run"
    );
    drop((watching, pod));

    // The next run serves the allocation again, in the same folder.
    let (mut node, _) = Served::start(&[BIN], dir, "accelhost serve: node 'k8s-node' on");
    rt.block_on(async {
        kubelet.registered(&[NLB0, CHAOS]).await;
        let pod = Client::connect(
            &Endpoint::Unix(folder.join("node.sock")),
            ClientOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(pod.enumerate(vec![]).await.unwrap().len(), 1);
        drop(pod);
        kubelet.stop().await;
    });

    // A kubelet that takes connections and never answers: SIGTERM while the node waits for
    // its registration ends the wait, and the resource's socket goes too.
    let plugins = dir.join("plugins");
    // As a kubelet starting does: every socket in its folder is deleted first.
    for socket in sockets_under(&plugins) {
        match std::fs::remove_file(plugins.join(&socket)) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                panic!("{}: {err}", socket.display())
            }
            _ => {}
        }
    }
    let hung = std::os::unix::net::UnixListener::bind(plugins.join("kubelet.sock")).unwrap();
    hung.set_nonblocking(true).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let held = std::thread::spawn({
        let done = done.clone();
        move || {
            let mut held = Vec::new();
            let until = std::time::Instant::now() + STEP;
            while !done.load(std::sync::atomic::Ordering::Relaxed)
                && std::time::Instant::now() < until
            {
                match hung.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
    });
    let deadline = std::time::Instant::now() + STEP;
    while !sockets_under(&plugins)
        .iter()
        .any(|p| p.to_string_lossy().starts_with("accelhost-"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the node never bound a resource's socket for the new kubelet"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let asked = std::time::Instant::now();
    node.signal(libc::SIGTERM);
    assert!(node.wait(STEP).success());
    assert!(
        asked.elapsed() < accelhost_node::server::DRAIN,
        "a silent kubelet held the stop up for {:?}",
        asked.elapsed()
    );
    let mut left = sockets_under(dir);
    left.retain(|p| !p.ends_with("kubelet.sock"));
    assert!(left.is_empty(), "sockets left after SIGTERM: {left:?}");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    held.join().unwrap();
}
