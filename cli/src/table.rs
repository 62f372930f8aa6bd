//! Plain-text tables with aligned columns.

use accelhost::text::inert;

/// Renders `rows` under `header`, each column as wide as its widest cell. Cells often hold
/// what a plugin chose (names, hosts, reasons), so every cell is made inert first.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| inert(cell).into_owned()).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let last = cells.len() - 1;
        for (i, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if i < last {
                out.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
            }
        }
        out.push('\n');
    };
    line(header.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

pub use accelhost::workloads::size;

#[cfg(test)]
mod tests {
    #[test]
    fn columns_align() {
        let out = super::render(&["A", "BB"], &[vec!["long".into(), "x".into()]]);
        assert_eq!(out, "A     BB\nlong  x\n");
    }

    #[test]
    fn cells_are_inert() {
        let out = super::render(&["A"], &[vec!["x\u{1b}]0;t\u{7}\ry".into()]]);
        assert_eq!(out, "A\nx\\e]0;t\\u{7}\\ry\n");
    }
}
