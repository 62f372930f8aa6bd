//! The `doors` target's smoke run, in a process of its own: the doors' hosts are the
//! process's, started on the config the target names through the environment.

#[test]
fn doors_survives_its_seeds_and_mutations() {
    accelhost_fuzz::smoke::smoke("doors");
}
