//! A Python program reaches the node as users write them: grpcio (the gRPC C core) with stubs
//! generated from `node.proto`, dialing `unix:PATH`. grpcio sends the socket's path as the
//! HTTP/2 `:authority`, which the node must take. Needs grpcio and grpcio-tools from PyPI
//! (`tests/support/install-python.sh grpc-python`, which CI runs); without them the trial is reported
//! ignored with the reason, or fails under `ACCELHOST_REQUIRE_TOOLCHAINS=1`.

use crate::served;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use served::Served;
use support::harness::{Outcome, Trial};
use support::{json_path, scratch_dir};

const BIN: &str = env!("CARGO_BIN_EXE_accelhost");

/// The Python with grpcio: the install script's virtual environment, or `python3` if that
/// has it; else why there is none.
fn grpc_python() -> Result<PathBuf, String> {
    let home = std::env::var_os("ACCELHOST_GRPC_PYTHON_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".cache/accelhost-grpc-python"))
        });
    let candidates = home
        .map(|home| home.join("bin/python"))
        .into_iter()
        .chain([PathBuf::from("python3")]);
    for python in candidates {
        let has_grpc = Command::new(&python)
            .args(["-c", "import grpc, grpc_tools"])
            .output()
            .is_ok_and(|out| out.status.success());
        if has_grpc {
            return Ok(python);
        }
    }
    let why =
        "grpcio and grpcio-tools are not installed (tests/support/install-python.sh grpc-python \
               installs them)"
            .to_string();
    if std::env::var_os("ACCELHOST_REQUIRE_TOOLCHAINS").is_some_and(|v| v == "1") {
        panic!("{why}, and ACCELHOST_REQUIRE_TOOLCHAINS=1");
    }
    Err(why)
}

/// Runs the Python client against `target`; its JSON line.
fn python_client(python: &Path, target: &str, extra: &[&str]) -> serde_json::Value {
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/support/python_client.py");
    let out = Command::new(python)
        .arg(client)
        .arg(target)
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python_client.py {target} {extra:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

fn a_grpcio_client_attaches_and_enumerates_over_the_socket() -> Outcome {
    let python = match grpc_python() {
        Ok(python) => python,
        Err(why) => return Outcome::Skipped(why),
    };
    let dir = scratch_dir("grpc-python");
    let socket = dir.join("node.sock");
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    std::fs::write(
        dir.join("serve.json"),
        format!(
            r#"{{"node_name": "py-node",
                "listen": {{"unix": {{"path": "{}", "mode": "0600"}}}},
                "clients": [{{"name": "py", "unix_uid": {uid},
                              "grants": {{"devices": ["dfl/*", "xocl/*"]}}}}]}}"#,
            json_path(&socket)
        ),
    )
    .unwrap();
    let (_node, _) = Served::start(&[BIN], &dir, "accelhost serve: node");
    let target = format!("unix:{}", socket.display());
    // grpcio's own authority (the socket's path), then names a client might set.
    for extra in [
        &[][..],
        &["--authority", "localhost"],
        &["--authority", "node.example:7700"],
    ] {
        let answer = python_client(&python, &target, extra);
        assert_eq!(answer["client"], "py", "{answer}");
        assert_eq!(answer["node"], "py-node", "{answer}");
        assert_eq!(
            answer["session"].as_str().map(str::len),
            Some(32),
            "{answer}"
        );
        let devices: Vec<&str> = answer["devices"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d.as_str())
            .collect();
        assert_eq!(devices, ["dfl/emu:dfl0", "xocl/emu:xocl0"], "{answer}");
    }
    // `unix://` with an absolute path is the same socket to grpcio.
    let answer = python_client(&python, &format!("unix://{}", socket.display()), &[]);
    assert_eq!(answer["client"], "py", "{answer}");
    Outcome::Passed
}

/// This file's trials, run by tests/suite_cli_trials.rs.
pub fn trials() -> Vec<Trial> {
    vec![Trial {
        name: "a_grpcio_client_attaches_and_enumerates_over_the_socket",
        run: a_grpcio_client_attaches_and_enumerates_over_the_socket,
    }]
}
