//! OPAE's sysobject API: `fpga_object`s over a device's attribute tree (the sysfs attributes
//! its plugin answers through the `attributes` export: `afu_id`, `errors/errors`, ...). A
//! container is a directory of the tree, an attribute a leaf with a text value. Values are read
//! afresh on every call, so `FPGA_OBJECT_SYNC` always holds.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use accelhost::{AttributeInfo, Token};

use crate::attributes::{device_name, read_number};
use crate::ffi::{c_str, copy_str, guard, non_null, write_out};
use crate::handle::handle_of;
use crate::registry::{self, Object};
use crate::result::{CapiError, CapiResult, invalid};
use crate::token::token_of;
use crate::types::*;

/// What C's `fpga_object` stands for: a path in a device's attribute tree.
pub(crate) struct SysObject {
    token: Token,
    /// Levels separated by `/`; empty for the root.
    path: String,
    container: bool,
}

impl Object for SysObject {
    const KIND: &'static str = "sysobject";
}

/// Whether `path` is an attribute (`Some(false)`), a container (`Some(true)`) or neither.
fn kind_of(list: &[AttributeInfo], path: &str) -> Option<bool> {
    if path.is_empty() {
        return Some(true);
    }
    if list.iter().any(|a| a.name == path) {
        return Some(false);
    }
    let prefix = format!("{path}/");
    list.iter()
        .any(|a| a.name.starts_with(&prefix))
        .then_some(true)
}

/// The direct children of container `path`: names and whether each is a container, in the
/// order the plugin lists them.
fn children(list: &[AttributeInfo], path: &str) -> Vec<(String, bool)> {
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let mut found: Vec<(String, bool)> = Vec::new();
    for attribute in list {
        let Some(rest) = attribute.name.strip_prefix(&prefix) else {
            continue;
        };
        let (name, container) = match rest.split_once('/') {
            Some((dir, _)) => (dir, true),
            None => (rest, false),
        };
        if !found.iter().any(|(n, _)| n == name) {
            found.push((name.to_string(), container));
        }
    }
    found
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

/// Whether `name` matches the shell pattern `pattern` (`*`, `?` and `[...]` with ranges and
/// `!` or `^`), as `fnmatch(3)` without flags matches one path level.
fn glob_matches(pattern: &[char], name: &[char]) -> bool {
    match pattern.first() {
        None => name.is_empty(),
        Some('*') => (0..=name.len()).any(|skip| glob_matches(&pattern[1..], &name[skip..])),
        Some('?') => !name.is_empty() && glob_matches(&pattern[1..], &name[1..]),
        Some('[') => match (bracket(&pattern[1..]), name.first()) {
            (Some((set, rest)), Some(&c)) => set(c) && glob_matches(rest, &name[1..]),
            // An unclosed bracket is an ordinary character.
            (None, Some('[')) => glob_matches(&pattern[1..], &name[1..]),
            _ => false,
        },
        Some(&c) => name.first() == Some(&c) && glob_matches(&pattern[1..], &name[1..]),
    }
}

/// A bracket expression after its `[`: the set it matches and the pattern after its `]`.
fn bracket(pattern: &[char]) -> Option<(impl Fn(char) -> bool + '_, &[char])> {
    let negated = matches!(pattern.first(), Some('!' | '^'));
    let body_start = usize::from(negated);
    // A `]` right after `[` or `[!` is a member, not the end.
    let end = body_start
        + 1
        + pattern
            .get(body_start + 1..)?
            .iter()
            .position(|&c| c == ']')?;
    let body = &pattern[body_start..end];
    let set = move |c: char| {
        let mut i = 0;
        let mut hit = false;
        while i < body.len() {
            if i + 2 < body.len() && body[i + 1] == '-' {
                hit |= (body[i]..=body[i + 2]).contains(&c);
                i += 3;
            } else {
                hit |= body[i] == c;
                i += 1;
            }
        }
        hit != negated
    };
    Some((set, &pattern[end + 1..]))
}

/// The first path of the tree (in byte order, as `glob(3)` sorts) that `pattern` matches
/// level by level.
fn resolve_glob(list: &[AttributeInfo], pattern: &str) -> Option<String> {
    let levels: Vec<Vec<char>> = pattern.split('/').map(|l| l.chars().collect()).collect();
    let mut paths: Vec<&str> = Vec::new();
    for attribute in list {
        let name = attribute.name.as_str();
        paths.push(name);
        paths.extend(name.match_indices('/').map(|(at, _)| &name[..at]));
    }
    paths.sort_unstable();
    paths.dedup();
    paths
        .into_iter()
        .find(|path| {
            let parts: Vec<&str> = path.split('/').collect();
            parts.len() == levels.len()
                && parts
                    .iter()
                    .zip(&levels)
                    .all(|(part, level)| glob_matches(level, &part.chars().collect::<Vec<_>>()))
        })
        .map(str::to_string)
}

/// Makes the object for `path` under `token`, checking that it exists. With
/// `FPGA_OBJECT_GLOB`, `path` is a pattern and the object is its first match.
fn make(token: Token, path: String, flags: c_int, call: &str) -> CapiResult<SysObject> {
    accelhost::attributes::check_name(&path).map_err(|why| invalid(format!("{call}: {why}")))?;
    let list = token.attributes()?;
    let path = if flags & FPGA_OBJECT_GLOB != 0 {
        resolve_glob(&list, &path).ok_or_else(|| {
            CapiError::NotFound(format!(
                "{call}: nothing of the device {} matches {path:?}",
                device_name(&token)
            ))
        })?
    } else {
        path
    };
    let container = kind_of(&list, &path).ok_or_else(|| {
        CapiError::NotFound(format!(
            "{call}: the device {} has no object {path:?}",
            device_name(&token)
        ))
    })?;
    Ok(SysObject {
        token,
        path,
        container,
    })
}

fn object_of(object: fpga_object) -> CapiResult<Arc<SysObject>> {
    registry::get::<SysObject>(object)
}

/// The attribute `object` stands for; a container is refused, having no value.
fn attribute_of<'a>(object: &'a SysObject, call: &str) -> CapiResult<&'a str> {
    if object.container {
        return Err(invalid(format!(
            "{call}: {:?} is a container, which has no value",
            object.path
        )));
    }
    Ok(&object.path)
}

/// Reads the value of attribute object `object`.
fn value_of(object: &SysObject, call: &str) -> CapiResult<String> {
    Ok(object.token.read_attribute(attribute_of(object, call)?)?)
}

/// OPAE's `fpgaTokenGetObject`: the object `name` (such as `errors/errors`) of the token's
/// device, to destroy with `fpgaDestroyObject`.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `object` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaTokenGetObject(
    token: fpga_token,
    name: *const c_char,
    object: *mut fpga_object,
    flags: c_int,
) -> fpga_result {
    guard("fpgaTokenGetObject", || {
        let token = token_of(token)?;
        // SAFETY: NULL or NUL-terminated by the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        non_null(object, "object")?;
        let made = make(token, name.to_string(), flags, "fpgaTokenGetObject")?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(object, registry::insert(made), "object") }
    })
}

/// OPAE's `fpgaHandleGetObject`: as [`fpgaTokenGetObject`], for the open device's token.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `object` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaHandleGetObject(
    handle: fpga_handle,
    name: *const c_char,
    object: *mut fpga_object,
    flags: c_int,
) -> fpga_result {
    guard("fpgaHandleGetObject", || {
        let token = handle_of(handle)?.token.clone();
        // SAFETY: NULL or NUL-terminated by the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        non_null(object, "object")?;
        let made = make(token, name.to_string(), flags, "fpgaHandleGetObject")?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(object, registry::insert(made), "object") }
    })
}

/// OPAE's `fpgaObjectGetObject`: the object `name` below container `parent`.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `object` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaObjectGetObject(
    parent: fpga_object,
    name: *const c_char,
    object: *mut fpga_object,
    flags: c_int,
) -> fpga_result {
    guard("fpgaObjectGetObject", || {
        let parent = object_of(parent)?;
        if !parent.container {
            return Err(invalid(format!(
                "parent {:?} is an attribute, not a container",
                parent.path
            )));
        }
        // SAFETY: NULL or NUL-terminated by the caller's contract.
        let name = unsafe { c_str(name, "name") }?;
        non_null(object, "object")?;
        let path = join(&parent.path, name);
        let made = make(parent.token.clone(), path, flags, "fpgaObjectGetObject")?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(object, registry::insert(made), "object") }
    })
}

/// OPAE's `fpgaObjectGetObjectAt`: child `idx` of container `parent`, in the order the
/// plugin lists the attributes.
///
/// # Safety
/// `object` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaObjectGetObjectAt(
    parent: fpga_object,
    idx: usize,
    object: *mut fpga_object,
) -> fpga_result {
    guard("fpgaObjectGetObjectAt", || {
        let parent = object_of(parent)?;
        non_null(object, "object")?;
        if !parent.container {
            return Err(invalid(format!(
                "parent {:?} is an attribute, not a container",
                parent.path
            )));
        }
        let list = parent.token.attributes()?;
        let all = children(&list, &parent.path);
        let (name, container) = all.get(idx).ok_or_else(|| {
            invalid(format!(
                "{:?} has {} objects; there is none at index {idx}",
                parent.path,
                all.len()
            ))
        })?;
        let made = SysObject {
            token: parent.token.clone(),
            path: join(&parent.path, name),
            container: *container,
        };
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(object, registry::insert(made), "object") }
    })
}

/// OPAE's `fpgaObjectGetType`: `FPGA_OBJECT_CONTAINER` or `FPGA_OBJECT_ATTRIBUTE`.
///
/// # Safety
/// `object_type` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaObjectGetType(
    obj: fpga_object,
    object_type: *mut c_int,
) -> fpga_result {
    guard("fpgaObjectGetType", || {
        let object = object_of(obj)?;
        let kind = if object.container {
            FPGA_OBJECT_CONTAINER
        } else {
            FPGA_OBJECT_ATTRIBUTE
        };
        // SAFETY: NULL or valid for one write by the caller's contract.
        unsafe { write_out(object_type, kind, "type") }
    })
}

/// OPAE's `fpgaObjectGetName`: the object's own name (the last level of its path).
///
/// # Safety
/// `name` must be NULL or valid for `max_len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaObjectGetName(
    obj: fpga_object,
    name: *mut c_char,
    max_len: usize,
) -> fpga_result {
    guard("fpgaObjectGetName", || {
        let object = object_of(obj)?;
        let own = object.path.rsplit('/').next().unwrap_or(&object.path);
        // SAFETY: valid for `max_len` bytes by the caller's contract.
        unsafe { copy_str(name, max_len, own, "name") }
    })
}

/// OPAE's `fpgaObjectGetSize`: the bytes of an attribute's value, or the number of objects
/// in a container.
///
/// # Safety
/// `value` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaObjectGetSize(
    obj: fpga_object,
    value: *mut u32,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaObjectGetSize", || {
        let object = object_of(obj)?;
        non_null(value, "value")?;
        let size = if object.container {
            children(&object.token.attributes()?, &object.path).len()
        } else {
            value_of(&object, "fpgaObjectGetSize")?.len()
        };
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(value, u32::try_from(size).unwrap_or(u32::MAX), "value") }
    })
}

/// OPAE's `fpgaObjectRead`: `len` bytes of the attribute's value from `offset` (text, without
/// a NUL).
///
/// # Safety
/// `buffer` must be NULL or valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaObjectRead(
    obj: fpga_object,
    buffer: *mut u8,
    offset: usize,
    len: usize,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaObjectRead", || {
        let object = object_of(obj)?;
        non_null(buffer, "buffer")?;
        let value = value_of(&object, "fpgaObjectRead")?;
        let end = offset
            .checked_add(len)
            .filter(|&end| end <= value.len())
            .ok_or_else(|| {
                invalid(format!(
                    "offset {offset} + len {len} is past the value's {} bytes",
                    value.len()
                ))
            })?;
        // SAFETY: valid for `len` bytes of writes by the caller's contract.
        unsafe { std::ptr::copy_nonoverlapping(value[offset..end].as_ptr(), buffer, len) };
        Ok(())
    })
}

/// OPAE's `fpgaObjectRead64`: the attribute's value as a number (`0x` hex, octal or
/// decimal, as `strtoull` reads it).
///
/// # Safety
/// `value` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaObjectRead64(
    obj: fpga_object,
    value: *mut u64,
    _flags: c_int,
) -> fpga_result {
    guard("fpgaObjectRead64", || {
        let object = object_of(obj)?;
        non_null(value, "value")?;
        let number = read_number(&object.token, attribute_of(&object, "fpgaObjectRead64")?)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(value, number, "value") }
    })
}

/// OPAE's `fpgaObjectWrite64`: writes `value` (as `0x` hex) to the attribute.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaObjectWrite64(obj: fpga_object, value: u64, _flags: c_int) -> fpga_result {
    guard("fpgaObjectWrite64", || {
        let object = object_of(obj)?;
        let name = attribute_of(&object, "fpgaObjectWrite64")?;
        Ok(object
            .token
            .write_attribute(name, &format!("0x{value:x}"))?)
    })
}

/// OPAE's `fpgaDestroyObject`: destroys `*obj` and sets it to NULL.
///
/// # Safety
/// `obj` must be NULL or valid for a read and a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaDestroyObject(obj: *mut fpga_object) -> fpga_result {
    guard("fpgaDestroyObject", || {
        // SAFETY: NULL or valid for a read and a write by the caller's contract.
        unsafe { registry::destroy::<SysObject>(obj, "obj") }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(names: &[&str]) -> Vec<AttributeInfo> {
        names
            .iter()
            .map(|n| AttributeInfo {
                name: n.to_string(),
                writable: false,
            })
            .collect()
    }

    #[test]
    fn the_tree_has_containers_and_attributes() {
        let l = list(&["afu_id", "errors/errors", "errors/first_error", "id"]);
        assert_eq!(kind_of(&l, "afu_id"), Some(false));
        assert_eq!(kind_of(&l, "errors"), Some(true));
        assert_eq!(kind_of(&l, "errors/errors"), Some(false));
        assert_eq!(kind_of(&l, "err"), None);
        assert_eq!(kind_of(&l, "errors/nope"), None);
        let root: Vec<String> = children(&l, "").into_iter().map(|(n, _)| n).collect();
        assert_eq!(root, ["afu_id", "errors", "id"]);
        assert_eq!(children(&l, "errors").len(), 2);
    }

    fn matches(pattern: &str, name: &str) -> bool {
        let p: Vec<char> = pattern.chars().collect();
        let n: Vec<char> = name.chars().collect();
        glob_matches(&p, &n)
    }

    #[test]
    fn glob_patterns_match_as_fnmatch_does() {
        assert!(matches("*", "errors"));
        assert!(matches("*", ""));
        assert!(matches("err*", "errors"));
        assert!(matches("*_error", "first_error"));
        assert!(!matches("*_error", "first_errors"));
        assert!(matches("e?rors", "errors"));
        assert!(!matches("e?rors", "erors"));
        assert!(matches("temp[0-9]", "temp1"));
        assert!(!matches("temp[!0-9]", "temp1"));
        assert!(matches("temp[^a]", "temp1"));
        assert!(matches("[]]x", "]x"));
        assert!(matches("a[b", "a[b"), "an unclosed bracket is literal");
        assert!(!matches("a[b", "ab"));
        assert!(!matches("errors", "errors2"));
    }

    #[test]
    fn a_glob_resolves_to_its_first_match_level_by_level() {
        let l = list(&[
            "errors/first_error",
            "errors/errors",
            "hwmon/hwmon3/temp1_input",
            "id",
        ]);
        assert_eq!(
            resolve_glob(&l, "errors/*").as_deref(),
            Some("errors/errors")
        );
        assert_eq!(
            resolve_glob(&l, "hwmon/hwmon*/temp1_input").as_deref(),
            Some("hwmon/hwmon3/temp1_input")
        );
        assert_eq!(resolve_glob(&l, "hwmon/*").as_deref(), Some("hwmon/hwmon3"));
        assert_eq!(resolve_glob(&l, "e*").as_deref(), Some("errors"));
        assert_eq!(resolve_glob(&l, "*/nothing"), None);
        assert_eq!(resolve_glob(&l, "i?/x"), None);
    }
}
