//! How the bench talks to its reader: a progress line on stderr while it measures, tables
//! (aligned text or Markdown) on stdout.

use std::io::Write;

/// Replaces the progress line with what is being measured now.
pub fn progress(what: &str) {
    eprint!("\r\x1b[2K  measuring {what} ...");
    let _ = std::io::stderr().flush();
}

/// Prints `rows` under `header`, as Markdown or as aligned text.
pub fn print_table(header: &[&str], rows: &[Vec<String>], markdown: bool) {
    if markdown {
        println!("| {} |", header.join(" | "));
        println!("|{}", "---|".repeat(header.len()));
        for row in rows {
            println!("| {} |", row.join(" | "));
        }
    } else {
        print!("{}", accelhost::text::table(header, rows));
    }
}
