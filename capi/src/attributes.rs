//! A device's attributes as the C API reads them: values as numbers, and the device's name
//! for messages. The sysobject, error, metric, user-clock and properties calls all go
//! through here.

use accelhost::{ErrorCode, Token};

use crate::result::{CapiResult, invalid};

/// The device's id for a message: its plugin chose the name, so it is made inert.
pub(crate) fn device_name(token: &Token) -> String {
    accelhost::text::inert(&token.id()).into_owned()
}

/// A number as sysfs writes one and `strtoull(.., 0)` reads it: decimal, `0x` hex or `0`
/// octal, surrounding blanks ignored.
pub(crate) fn parse_number(text: &str) -> Option<u64> {
    accelhost::attributes::parse_number(text.trim())
}

/// Attribute `name`'s value `text` as a number.
fn number_in(token: &Token, name: &str, text: &str) -> CapiResult<u64> {
    parse_number(text).ok_or_else(|| {
        invalid(format!(
            "the attribute {name:?} of {} is not a number: {:?}",
            device_name(token),
            text.chars().take(40).collect::<String>()
        ))
    })
}

/// Reads attribute `name` of `token` as a number.
pub(crate) fn read_number(token: &Token, name: &str) -> CapiResult<u64> {
    number_in(token, name, &token.read_attribute(name)?)
}

/// Reads attribute `name` of `token` as a number; `None` when the device has no such
/// attribute.
pub(crate) fn optional_number(token: &Token, name: &str) -> CapiResult<Option<u64>> {
    match token.read_attribute(name) {
        Ok(text) => number_in(token, name, &text).map(Some),
        Err(err) if err.code() == ErrorCode::NotFound => Ok(None),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_strtoull_reads_them() {
        assert_eq!(parse_number("0x1f\n"), Some(31));
        assert_eq!(parse_number(" 42 "), Some(42));
        assert_eq!(parse_number("017"), Some(15));
        assert_eq!(parse_number("nlb0"), None);
    }
}
