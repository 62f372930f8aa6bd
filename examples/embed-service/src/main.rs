//! `accelhost-example-service [ADDRESS]`: serves the line protocol of the library docs on
//! ADDRESS (default 127.0.0.1:7878), with the host's usual config lookup.

/// The service charges the host memory each plugin makes it hold to that plugin, where it is
/// allocated, as the `accelhost` binary does (`accelhost::ledger`); without these two lines
/// the host falls back on the charges its call sites make.
#[global_allocator]
static LEDGER: accelhost::ledger::Ledger = accelhost::ledger::Ledger::system();

fn main() -> anyhow::Result<()> {
    // This binary compiles the config's plugin files in children of itself, bounded by their
    // load_policy, rather than in the service's own process.
    accelhost::compile_worker::serve_if_asked();
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7878".into());
    let host = accelhost::Host::new()?;
    let listener = std::net::TcpListener::bind(&address)?;
    println!("listening on {}", listener.local_addr()?);
    accelhost_example_service::serve(listener, host)
}
