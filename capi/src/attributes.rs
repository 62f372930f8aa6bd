//! A device's attributes as the C API reads them: the list, and values as numbers. The
//! sysobject, error, metric, user-clock and properties calls all go through here.

use accelhost::{AttributeInfo, Token};

use crate::result::{CapiResult, invalid};

/// The attributes of `token`'s device.
pub(crate) fn attributes_of(token: &Token) -> CapiResult<Vec<AttributeInfo>> {
    Ok(token.attributes()?)
}

/// A number as sysfs writes one and `strtoull(.., 0)` reads it: decimal, `0x` hex or `0`
/// octal, surrounding blanks ignored.
pub(crate) fn parse_number(text: &str) -> Option<u64> {
    accelhost::attributes::parse_number(text.trim())
}

/// Reads attribute `name` of `token` as a number.
pub(crate) fn read_number(token: &Token, name: &str) -> CapiResult<u64> {
    let text = token.read_attribute(name)?;
    parse_number(&text).ok_or_else(|| {
        invalid(format!(
            "the attribute {name} of {} is not a number: {:?}",
            token.id(),
            text.chars().take(40).collect::<String>()
        ))
    })
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
