//! The measurements `accelhost bench` and the criterion benches (`cargo bench -p
//! accelhost-cli`) share, so that both report the same figures. The `accelhost` command
//! itself is the binary of this package.

pub mod measure;
