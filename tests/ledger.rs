//! The host-memory ledger as a real process's allocator (the tests' support installs it, as the
//! `accelhost` binary does): blocks charged where they are allocated and credited where they
//! are freed, an import's charge that only checks, and a plugin whose instance, store and kept
//! objects are counted while they live.

use crate::support;

use accelhost::devices::Budget;
use accelhost::ledger::{Account, block_cost, is_installed};
use accelhost::{Host, OpenMode};
use support::host;

#[test]
fn the_tests_allocate_through_the_ledger() {
    assert!(is_installed());
    let account = Account::new();
    let kept: Vec<u8> = account.charge_while(|| vec![7; 100_000]);
    assert_eq!(account.held(), block_cost(100_000));
    let moved = std::thread::spawn(move || drop(kept));
    moved.join().unwrap();
    assert_eq!(account.held(), 0, "freed on another thread, credited here");
}

#[test]
fn with_the_ledger_an_imports_charge_only_checks_and_the_ledger_counts() {
    let budget = Budget::host(1 << 20);
    assert!(budget.is_ledgered());
    let estimate = budget.charge(4096).unwrap();
    assert_eq!(
        budget.used(),
        0,
        "the estimate is not counted on top of the real blocks"
    );
    let kept: Vec<u8> = budget.charge_while(|| Vec::with_capacity(600_000));
    assert_eq!(
        budget.used(),
        block_cost(600_000),
        "the capacity, not the length, is what the host holds"
    );
    let refused = budget.charge(500_000).unwrap_err();
    assert_eq!(refused.used, block_cost(600_000));
    assert!(budget.check_held().is_ok());
    let over: Vec<u8> = budget.charge_while(|| Vec::with_capacity(600_000));
    let found = budget.check_held().unwrap_err();
    assert_eq!(found.held, 2 * block_cost(600_000));
    assert!(
        found.to_string().contains("load_policy.host_memory_mib"),
        "{found}"
    );
    drop((kept, over, estimate));
    assert_eq!(budget.used(), 0);
}

#[test]
fn with_the_ledger_memory_it_cannot_see_is_counted_by_its_charge() {
    let budget = Budget::host(1 << 20);
    assert!(budget.is_ledgered());
    let code = budget.charge_unseen(300_000).unwrap();
    assert_eq!(
        budget.used(),
        300_000,
        "mapped memory the allocator never saw"
    );
    let kept: Vec<u8> = budget.charge_while(|| Vec::with_capacity(600_000));
    assert_eq!(budget.used(), 300_000 + block_cost(600_000));
    let refused = budget.charge_unseen(200_000).unwrap_err();
    assert_eq!(refused.used, 300_000 + block_cost(600_000));
    drop(code);
    assert_eq!(budget.used(), block_cost(600_000));
    drop(kept);
    assert_eq!(budget.used(), 0);
}

/// A host of the dfl plugin with one emulated port.
fn one_dfl_port() -> Host {
    let config = format!(
        r#"{{"devices": [{{"id": "w0", "family": "dfl"}}],
            "plugins": [{}]}}"#,
        support::dfl_plugin(&["w0"])
    );
    host(&config).unwrap()
}

#[test]
fn a_plugins_instance_and_what_it_keeps_are_counted_while_they_live() {
    let host = one_dfl_port();
    let held = || host.plugin("dfl").unwrap().memory.host_bytes;
    let started = held();
    assert!(started > 0, "its store and instance are the host's memory");
    let tokens = host.enumerate(&[]).tokens;
    let with_tokens = held();
    assert!(
        with_tokens > started,
        "the properties the host keeps for its devices: {started} -> {with_tokens}"
    );
    let handle = host.open(&tokens[0], OpenMode::Exclusive).unwrap();
    handle.close().unwrap();
    // An open and close leave a few hundred bytes charged that are not the tokens': what the
    // tokens give back is measured from just before they go.
    let with_tokens = held();
    drop(tokens);
    assert!(
        held() < with_tokens,
        "the tokens' properties are credited when they go: {} after {with_tokens}",
        held()
    );
}

/// The first open and close leave a few hundred bytes charged that later ones reuse; a leak
/// per open would grow with every one.
#[test]
fn opens_and_closes_over_and_over_leave_the_plugins_charge_where_one_left_it() {
    let host = one_dfl_port();
    let held = || host.plugin("dfl").unwrap().memory.host_bytes;
    let tokens = host.enumerate(&[]).tokens;
    let cycle = || {
        let handle = host.open(&tokens[0], OpenMode::Exclusive).unwrap();
        handle.close().unwrap();
    };
    cycle();
    let after_one = held();
    for _ in 0..200 {
        cycle();
    }
    assert_eq!(
        held(),
        after_one,
        "what an open and close leave charged is kept once, not once per open"
    );
}
