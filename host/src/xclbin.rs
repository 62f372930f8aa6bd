//! The xclbin (axlf) container XRT cards load: a reader that checks every section an image
//! names, and a writer for the images the emulated cards run. `accelhost xclbin` and the
//! canonical vadd workload use it; so may a service that inspects images before loading them.

pub use crate::families::xocl::xclbin::*;

/// Kernels for the emulated card from C/C++ sources (built with the system's clang) or a
/// prebuilt WebAssembly module: what `accelhost xclbin build` puts in an image.
pub use crate::families::xocl::kernel_source as kernels;

/// Kernel builds are kept on the compile cache's [`Shelf::KernelBuilds`].
impl kernels::KeptBuilds for crate::runtime::ComponentCache {
    fn find_build(&self, key: &[u8; 32]) -> Option<Vec<u8>> {
        self.kept(crate::runtime::Shelf::KernelBuilds, key)
    }

    fn keep_build(&self, key: &[u8; 32], built: &[u8]) {
        self.keep(crate::runtime::Shelf::KernelBuilds, key, built);
    }
}
