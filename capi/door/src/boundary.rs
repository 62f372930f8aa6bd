//! The C boundary itself: the panic guard every exported function runs in, `errno`, and the
//! one line a door says on stderr. Nothing here knows an API's codes.

use std::ffi::c_int;
use std::fmt::Display;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `body`, the body of exported function `call`: a panic (a bug of the door or the
/// library) never unwinds into C; it becomes what `on_panic` makes of its message, which
/// names the call.
pub fn guard<R>(call: &str, on_panic: impl FnOnce(String) -> R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            on_panic(format!("{call}: an internal error (a panic): {text}"))
        }
    }
}

/// Sets this thread's `errno`.
pub fn set_errno(errno: c_int) {
    // SAFETY: __errno_location gives this thread's errno.
    unsafe { *libc::__errno_location() = errno };
}

/// Says `message` on stderr as `door` (`accelhost XRT`), for `call`, on one line: whatever
/// text a plugin or a device put in it is made inert first.
pub fn say(door: &str, call: &str, message: impl Display) {
    eprintln!(
        "{door}: {call}: {}",
        accelhost::text::inert(&message.to_string())
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_calls_failure() {
        let answer = guard("xrtDeviceOpen", Err, || -> Result<u32, String> {
            panic!("broken {}", 7)
        });
        let why = answer.unwrap_err();
        assert!(why.starts_with("xrtDeviceOpen: an internal error"), "{why}");
        assert!(why.ends_with("broken 7"), "{why}");
        assert_eq!(guard("call", |_| 0, || 5), 5);
    }

    #[test]
    fn errno_is_this_threads() {
        set_errno(libc::EINVAL);
        // SAFETY: this thread's errno.
        assert_eq!(unsafe { *libc::__errno_location() }, libc::EINVAL);
        set_errno(0);
    }
}
