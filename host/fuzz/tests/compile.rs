//! The `compile` target's smoke run (its seeds, checked-in corpus and mutations), in a binary
//! that serves as its own compile worker, as the `accelhost` command does: the library's
//! tests cannot, having no `main` of their own.

fn main() {
    accelhost::compile_worker::serve_if_asked();
    let started = std::time::Instant::now();
    accelhost_fuzz::compile::check_shapes();
    accelhost_fuzz::smoke::smoke("compile");
    println!(
        "test compile_survives_its_seeds_and_mutations ... ok ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
}
