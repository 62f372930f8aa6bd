//! Writes the generated seed corpus to `host/fuzz/corpus/<target>/seed-*`, replacing the
//! `seed-*` files already there (other files, such as saved regressions, are kept).
//!
//! `cargo run -p accelhost-fuzz --example write_seeds`

use accelhost_fuzz::{TARGETS, corpus_dir, seeds};

fn main() -> std::io::Result<()> {
    for target in TARGETS {
        let dir = corpus_dir(target.name);
        std::fs::create_dir_all(&dir)?;
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("seed-"))
            {
                std::fs::remove_file(path)?;
            }
        }
        let seeds = seeds::seeds(target.name);
        for (name, data) in &seeds {
            std::fs::write(dir.join(format!("seed-{name}")), data)?;
        }
        println!(
            "{}: {} seeds in {}",
            target.name,
            seeds.len(),
            dir.display()
        );
    }
    Ok(())
}
