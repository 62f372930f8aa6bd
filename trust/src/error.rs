//! Why a signature or a key was not accepted.

/// Why a plugin's signature was not accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// A key file that cannot be used.
    #[error("key {key}: {reason}")]
    Key {
        /// The key's file (or its name in the config).
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No signature where one is required.
    #[error("it is not signed ({looked_for}), and its config requires a signature by {keys}")]
    Unsigned {
        /// Where the signature was looked for.
        looked_for: String,
        /// The keys it may be signed by, by name and fingerprint.
        keys: String,
    },
    /// A signature that no trusted key verifies.
    #[error("its signature ({signature}) does not verify with {keys}")]
    NotVerified {
        /// Where the signature came from.
        signature: String,
        /// The keys tried, by name and fingerprint.
        keys: String,
    },
    /// A signature that is not base64, or too long to be one.
    #[error("its signature ({signature}) cannot be read: {reason}")]
    Malformed {
        /// Where the signature came from.
        signature: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A cosign payload that does not sign this artifact.
    #[error("its signature payload does not match: {reason}")]
    Payload {
        /// What does not match.
        reason: String,
    },
}
