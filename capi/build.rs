//! Builds `src/log.c`: OPAE's variadic `opae_print`, which stable Rust cannot define.

fn main() {
    println!("cargo:rerun-if-changed=src/log.c");
    cc::Build::new()
        .file("src/log.c")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("accelhost_opae_log");
}
