//! OPAE's `log.h`: `opae_print`. It is variadic, which stable Rust cannot define, and a C
//! function linked into a Rust `cdylib` is not exported (rustc's export list names Rust
//! functions only); so the C definition (`src/log.c`, built by `build.rs`) is reached through
//! an exported Rust function that is a single jump. A jump leaves every register and the
//! stack as the caller set them, which is what a variadic call needs.

unsafe extern "C" {
    fn accelhost_opae_print();
}

/// OPAE's `void opae_print(int loglevel, const char *fmt, ...)`: prints when `loglevel` is at
/// most `LIBOPAE_LOG`'s value (default 0: errors only); errors go to stderr, the rest to
/// `LIBOPAE_LOGFILE` or stdout.
///
/// # Safety
/// Called from C as OPAE declares it: `fmt` a printf format, the arguments matching it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn opae_print() {
    #[cfg(target_arch = "x86_64")]
    core::arch::naked_asm!("jmp {}", sym accelhost_opae_print);
    #[cfg(target_arch = "aarch64")]
    core::arch::naked_asm!("b {}", sym accelhost_opae_print);
}
