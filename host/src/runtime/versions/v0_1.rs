//! `accel:plugin@0.1.0`, the first version. Every interface of it is in the latest version
//! with the same functions and types (the latest only added to it), so the latest
//! implementation serves its imports as they are, under its names; the frozen WIT is in
//! `wit/0.1.0/`, and a plugin built for it is in `tests/fixtures/v0.1.0/`.

use super::{Version, add_latest_imports_as};

/// The version, and how its imports are linked.
pub(crate) const VERSION: Version = Version {
    version: "0.1.0",
    add_imports: |linker| add_latest_imports_as(linker, "0.1.0"),
};
