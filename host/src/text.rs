//! Making untrusted text inert. Names, extras, error messages, log lines and output a plugin
//! chose reach terminals and logs; [`inert`] is what every human output passes them through,
//! so that no control sequence (a window title, a clipboard write, a cleared screen, a
//! carriage return over an earlier line, a fake log line) takes effect. JSON output keeps the
//! exact values: [`inert_json`] only changes how they are spelled. [`table`] lays rows out
//! for a terminal, every cell inert.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as it is: C0 controls (CR, LF and TAB included),
/// DEL, C1 controls, and the invisible format characters that reorder or hide text (bidi
/// overrides and isolates, zero-width characters, the byte-order mark).
fn is_active(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1F}'
        | '\u{7F}'..='\u{9F}'
        | '\u{200B}'..='\u{200F}'
        | '\u{2028}'..='\u{202E}'
        | '\u{2060}'..='\u{2069}'
        | '\u{FEFF}'
        | '\u{FFF9}'..='\u{FFFB}')
}

/// `text` with every active character written as an escape: `\n`, `\r`, `\t`, `\e` for ESC,
/// and `\u{..}` for the rest. Text with none comes back borrowed, unchanged.
pub fn inert(text: &str) -> Cow<'_, str> {
    let Some(first) = text.find(is_active) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1B}' => out.push_str("\\e"),
            c if is_active(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Serialized JSON with every active character that JSON allows raw inside a string (DEL, C1
/// controls, the invisible format characters) written as a `\uXXXX` escape instead: the same
/// JSON value, decoded exactly as before, but safe to print. JSON encoders already escape C0.
pub fn inert_json(json: String) -> String {
    // C0 characters outside strings are the layout's newlines and indentation.
    let raw_in_strings = |c: char| c > '\u{1F}' && is_active(c);
    if !json.contains(raw_in_strings) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if raw_in_strings(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` cut to at most `max` bytes (on a character boundary), marked ` [cut]` if it was. A
/// cut text gives back the capacity it no longer uses: a kept message costs what it says.
pub fn cut_to(mut text: String, max: usize) -> String {
    if text.len() > max {
        text.truncate(text.floor_char_boundary(max));
        text.push_str(" [cut]");
        text.shrink_to_fit();
    }
    text
}

/// `rows` under `header` as plain text, each column as wide as its widest cell. Cells often
/// hold what a plugin chose (names, hosts, reasons), so every cell is made [`inert`] first.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_columns_align() {
        let out = table(&["A", "BB"], &[vec!["long".into(), "x".into()]]);
        assert_eq!(out, "A     BB\nlong  x\n");
    }

    #[test]
    fn table_cells_are_inert() {
        let out = table(&["A"], &[vec!["x\u{1b}]0;t\u{7}\ry".into()]]);
        assert_eq!(out, "A\nx\\e]0;t\\u{7}\\ry\n");
    }

    #[test]
    fn json_stays_the_same_value() {
        let value = serde_json::json!({"name": "a\u{9b}31m\u{202e}b\u{1b}\n\u{7f}"});
        let json = inert_json(serde_json::to_string_pretty(&value).unwrap());
        assert!(!json.chars().any(|c| c != '\n' && is_active(c)), "{json}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&json).unwrap(),
            value
        );
    }

    #[test]
    fn a_cut_text_keeps_no_more_than_it_says() {
        let cut = cut_to("é".repeat(1 << 20), 1025);
        assert_eq!(
            cut.len(),
            1024 + " [cut]".len(),
            "cut on a character boundary"
        );
        assert!(cut.capacity() < 2048, "capacity {} kept", cut.capacity());
        let short = cut_to("short".to_string(), 1024);
        assert_eq!(short, "short");
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "emu:dfl0 — NLB0 ü 漢字 \\ \"quoted\"";
        assert!(matches!(inert(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn every_control_character_is_escaped() {
        let attacks = [
            ("\u{1b}]0;pwned\u{7}", "\\e]0;pwned\\u{7}"),
            ("\u{1b}]52;c;ZXZpbA==\u{7}", "\\e]52;c;ZXZpbA==\\u{7}"),
            ("\u{1b}[2J\u{1b}[8m", "\\e[2J\\e[8m"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("ok\rERROR", "ok\\rERROR"),
            (
                "line\nERROR accelhost: fake",
                "line\\nERROR accelhost: fake",
            ),
            ("\u{e}\u{f}\u{7f}", "\\u{e}\\u{f}\\u{7f}"),
            ("a\u{202e}evil\u{2066}", "a\\u{202e}evil\\u{2066}"),
            ("zero\u{200b}width\u{feff}", "zero\\u{200b}width\\u{feff}"),
            ("tab\tnul\0", "tab\\tnul\\u{0}"),
        ];
        for (raw, shown) in attacks {
            let out = inert(raw);
            assert_eq!(out, shown, "{raw:?}");
            assert!(!out.chars().any(is_active), "{out:?}");
        }
    }
}
