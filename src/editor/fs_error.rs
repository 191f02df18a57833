//! The error of an agent request to the editor (`fs/*`, `terminal/*`):
//! what the agent gets as a JSON-RPC error, a code and a message naming
//! the path or id and the reason.

/// A failure the agent gets as a JSON-RPC error: code and message.
#[derive(Debug, Clone, PartialEq)]
pub struct FsError {
    pub code: i32,
    pub message: String,
}

/// ACP's "resource not found".
pub const RESOURCE_NOT_FOUND: i32 = -32002;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL: i32 = -32603;

impl FsError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}
