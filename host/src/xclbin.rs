//! The xclbin (axlf) container XRT cards load: a reader that checks every section an image
//! names, and a writer for the images the emulated cards run. `accelhost xclbin` and the
//! canonical vadd workload use it; so may a service that inspects images before loading them.

pub use crate::families::xocl::xclbin::*;
