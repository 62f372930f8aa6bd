//! The node service's end-to-end tests, one binary: the node on loopback (`node`), the
//! `builtin:remote` proxy through it (`builtin_remote`), a fake node that lies about its
//! answers' size (`lying_node`), and the node under load (`soak`), which watches the whole
//! process's memory and descriptors and so runs in a process of its own.

#[path = "support/remote.rs"]
mod remote;
mod support;

#[path = "remote.rs"]
mod builtin_remote;
mod lying_node;
mod node;
mod node_shares;
mod soak;

/// [`soak`] in a process of its own. Named to start first: it takes both cores for 20 s,
/// and the other tests mostly wait on peers and clocks beside it.
#[test]
fn a_node_under_load_loses_no_call_and_holds_steady() {
    let (status, out, err) = support::run_test_alone(
        "soak::sixty_four_clients_a_hostile_one_and_a_faulting_plugin",
        &[],
        soak::soak_time() + std::time::Duration::from_secs(120),
    );
    // Its figures (calls, latencies, memory by tenths of the run) are on its stderr.
    eprint!("{err}");
    assert!(
        status.success() && out.contains("1 passed"),
        "the soak failed ({status}):\n{out}\n{err}"
    );
}
