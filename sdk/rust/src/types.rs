//! The WIT types a plugin handles, re-exported from the generated bindings so that the SDK's
//! own modules and plugin authors name each by one short path.

pub use crate::bindings::accel::plugin::types::{
    AcceleratorState, BusAddress, Error, ErrorCode, Guid, ObjectType, OpenMode,
};
pub use crate::bindings::exports::accel::plugin::attributes::AttributeInfo;
pub use crate::bindings::exports::accel::plugin::batch::{Enqueued, Launch};
pub use crate::bindings::exports::accel::plugin::discovery::{Discovered, Filter, Properties};
pub use crate::bindings::exports::accel::plugin::fpga::{BufferFlags, EventKind, PreparedBuffer};
pub use crate::bindings::exports::accel::plugin::inventory::{
    DeviceRow, DeviceTable, Fact, NumberedText,
};
pub use crate::bindings::exports::accel::plugin::offload::{
    Allocation, KernelArgument, LaunchSize, MemoryKind, MemoryRange,
};
