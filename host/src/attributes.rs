//! A device's attributes: the sysfs-style tree (`afu_id`, `errors/errors`,
//! `fme/hwmon/hwmon0/temp1_input`) a plugin answers through the optional `attributes` export,
//! and which OPAE's sysobject, error, metric and user-clock calls read. What a plugin gives is
//! checked here before anything else sees it.

use std::fmt;

/// The most attributes one device may list.
pub const MAX_ATTRIBUTES: usize = 1024;
/// The longest attribute name, in bytes.
pub const MAX_NAME: usize = 256;
/// The longest attribute value, in bytes (a sysfs attribute is at most a page; some binary
/// ones, such as bitstream metadata, are longer).
pub const MAX_VALUE: usize = 64 * 1024;

/// One attribute of a device, as its plugin lists it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AttributeInfo {
    /// Its path, levels separated by `/`: `errors/first_error`.
    pub name: String,
    /// Whether it may be written.
    pub writable: bool,
}

/// Why an attribute name is refused: empty, too long, or not a plain relative path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadName(String);

impl fmt::Display for BadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks that `name` is a relative path of plain segments (no empty segment, `.` or `..`,
/// no control characters) of at most [`MAX_NAME`] bytes.
pub fn check_name(name: &str) -> Result<(), BadName> {
    if name.is_empty() {
        return Err(BadName("an attribute name is empty".into()));
    }
    if name.len() > MAX_NAME {
        return Err(BadName(format!(
            "an attribute name is {} bytes long (at most {MAX_NAME})",
            name.len()
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(BadName(format!(
            "the attribute name {name:?} holds a control character"
        )));
    }
    if name
        .split('/')
        .any(|segment| segment.is_empty() || segment == "." || segment == "..")
    {
        return Err(BadName(format!(
            "the attribute name {name:?} is not a relative path of plain names"
        )));
    }
    Ok(())
}

/// Checks a plugin's list: bounded, every name valid, none twice.
pub(crate) fn check_list(list: &[AttributeInfo]) -> Result<(), String> {
    if list.len() > MAX_ATTRIBUTES {
        return Err(format!(
            "{} attributes (at most {MAX_ATTRIBUTES})",
            list.len()
        ));
    }
    let mut names: Vec<&str> = Vec::with_capacity(list.len());
    for attribute in list {
        check_name(&attribute.name).map_err(|e| e.to_string())?;
        names.push(&attribute.name);
    }
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(format!("the attribute {:?} is listed twice", pair[0]));
    }
    Ok(())
}

/// Checks a value read from or written to an attribute: at most [`MAX_VALUE`] bytes.
pub(crate) fn check_value(value: &str) -> Result<(), String> {
    if value.len() > MAX_VALUE {
        return Err(format!(
            "an attribute value of {} bytes (at most {MAX_VALUE})",
            value.len()
        ));
    }
    Ok(())
}

/// A number as the kernel's `kstrtou64(.., 0, ..)` reads an attribute write: decimal, `0x`
/// hex or `0` octal, one trailing newline allowed (`strtoull` reads values the same way).
pub fn parse_number(text: &str) -> Option<u64> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if text.len() > 1 && text.starts_with('0') {
        u64::from_str_radix(&text[1..], 8).ok()
    } else {
        text.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str) -> AttributeInfo {
        AttributeInfo {
            name: name.into(),
            writable: false,
        }
    }

    #[test]
    fn names_are_plain_relative_paths() {
        for good in ["afu_id", "errors/errors", "fme/hwmon/hwmon0/temp1_input"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "/afu_id",
            "errors/",
            "errors//x",
            "../x",
            "a/./b",
            "a/../b",
            "a\nb",
            "a\u{1b}[2J",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"x".repeat(MAX_NAME + 1)).is_err());
    }

    #[test]
    fn lists_are_bounded_and_unique() {
        assert!(check_list(&[info("a"), info("b/c")]).is_ok());
        let twice = check_list(&[info("a"), info("b"), info("a")]).unwrap_err();
        assert!(twice.contains("listed twice"), "{twice}");
        let many: Vec<_> = (0..=MAX_ATTRIBUTES)
            .map(|i| info(&format!("a{i}")))
            .collect();
        assert!(check_list(&many).unwrap_err().contains("at most"));
        assert!(check_list(&[info("../etc/passwd")]).is_err());
        assert!(check_value(&"v".repeat(MAX_VALUE + 1)).is_err());
        assert!(check_value("0x0").is_ok());
    }

    #[test]
    fn numbers_parse_as_the_kernel_does() {
        assert_eq!(parse_number("10"), Some(10));
        assert_eq!(parse_number("0x10\n"), Some(16));
        assert_eq!(parse_number("010"), Some(8));
        assert_eq!(parse_number("0"), Some(0));
        assert_eq!(parse_number(""), None);
        assert_eq!(parse_number("-1"), None);
    }
}
