//! libcxl over accelhost: `libcxl.so`, the library that programs written against IBM's
//! `libcxl.h` link, with libcxl's soname and symbol versions (`LIBCXL_1` to `LIBCXL_1.7`), so
//! that a program built against IBM's library runs on it too. Its AFUs are the config's CAPI
//! AFUs, emulated or real (`accelhost::cxl`), named as the cxl driver names them
//! (`/dev/cxl/afuC.S{m,s,d}`). A libcxl program drives its AFU itself, so no plugin stands
//! between: its contexts reach the program's own memory at the addresses it uses, as the cxl
//! driver gives them.
//!
//! The layers: `handles` (the live handles) and `error` (errno and messages), `state` (the
//! AFUs and their names), `work` (the START_WORK struct and its calls), `event_queue` and
//! `mapping` (a context's events and MMIO mapping), `context` (the AFU handle), then the
//! calls by part of the API: `enumerate` (adapters), `afu` (open, attach), `events`, `mmio`,
//! `sysfs` (the attribute getters and setters). README, "libcxl", says what is implemented
//! and what answers unsupported.

mod afu;
mod context;
mod enumerate;
mod error;
mod event_queue;
mod events;
mod handles;
mod mapping;
mod mmio;
mod state;
mod sysfs;
mod work;

/// The exported names, each bound to its libcxl version node (build.rs writes them from
/// symver.map). Only the shared library is linked with them: nothing links the rlib, and the
/// library has no unit-test binary (`test = false`).
mod exports {
    use crate::afu::*;
    use crate::enumerate::*;
    use crate::events::*;
    use crate::mmio::*;
    use crate::sysfs::*;
    use crate::work::*;

    include!(concat!(env!("OUT_DIR"), "/exports.rs"));
}
