//! What the platform tells the user on stderr: each entry point it does not implement, once
//! per process (the program gets only `CL_INVALID_OPERATION`), why it has no devices, and a
//! setting it does not take.

use std::collections::HashSet;
use std::ffi::CStr;
use std::sync::Mutex;

static SAID: Mutex<Option<HashSet<&'static CStr>>> = Mutex::new(None);

/// Says once that `name` is not implemented.
pub fn unsupported(name: &'static CStr) {
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if said.get_or_insert_with(HashSet::new).insert(name) {
        eprintln!(
            "accelhost OpenCL: {} is not implemented by this platform; it returns \
             CL_INVALID_OPERATION",
            name.to_string_lossy()
        );
    }
}

/// Says why the platform lists no devices (plugin text made inert).
pub fn no_devices(why: &dyn std::fmt::Display) {
    accelhost_door::boundary::say("accelhost OpenCL", "the platform has no devices", why);
}

/// Says why a setting of the environment is not taken, and what is done instead.
pub fn setting_not_taken(why: &dyn std::fmt::Display) {
    accelhost_door::boundary::say("accelhost OpenCL", "the environment", why);
}
