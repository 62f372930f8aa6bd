//! A failed import: an error the plugin sees as a WIT `error`, or a trap that ends the
//! instance. The WIT bindings convert it (`trappable_error_type`), so it names the host's own
//! error codes and nothing generated.

use wasmtime::component::ResourceTableError;

use crate::devices::OverBudget;
use crate::error::ErrorCode;

/// What an import answers instead of a value.
#[derive(Debug)]
pub enum ImportError {
    /// The plugin gets a WIT `error` with this code and message.
    Guest {
        /// One of the twelve codes the WIT `error-code` has.
        code: ErrorCode,
        /// For people.
        message: String,
    },
    /// The instance ends (forged handles, limits an import has no error for).
    Trap(wasmtime::Error),
}

/// An error the plugin sees, with `code` and `message`.
pub(crate) fn guest_error(code: ErrorCode, message: impl Into<String>) -> ImportError {
    ImportError::Guest {
        code,
        message: message.into(),
    }
}

impl From<OverBudget> for ImportError {
    fn from(err: OverBudget) -> Self {
        guest_error(ErrorCode::OutOfMemory, err.to_string())
    }
}

impl From<ResourceTableError> for ImportError {
    fn from(err: ResourceTableError) -> Self {
        ImportError::Trap(err.into())
    }
}
