//! Why a module could not become a plugin, apart from the runtime that loads modules: the
//! refusals remembered by digest are these.

use crate::error::CompileFailure;

/// Why a module could not become a plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LoadError {
    /// Not a plugin at all; the text says why and what to do.
    Unusable(String),
    /// Built against an incompatible `accel:plugin` version.
    Incompatible { found: String },
    /// Its compile failed or ran past a limit.
    Compile(CompileFailure),
    /// The host could not make the engine to compile it for.
    Runtime(String),
    /// A refusal remembered from an earlier attempt at the same digest.
    Remembered(Box<LoadError>),
}

impl LoadError {
    /// Whether the refusal is remembered by the component's digest: it is the component's
    /// own doing, the same at every attempt (or it was remembered already).
    pub fn is_remembered(&self) -> bool {
        match self {
            LoadError::Unusable(_) | LoadError::Incompatible { .. } | LoadError::Remembered(_) => {
                true
            }
            LoadError::Compile(failure) => failure.is_the_components(),
            LoadError::Runtime(_) => false,
        }
    }

    /// Whether this refusal by the optimizing compiler leaves a large plugin its baseline
    /// code: a compile that failed, ran out of time or memory (a link refusal or a version
    /// refuses the component whoever compiles it).
    pub fn spares_baseline_code(&self) -> bool {
        match self {
            LoadError::Remembered(refusal) => refusal.spares_baseline_code(),
            LoadError::Compile(failure) => failure.is_the_components(),
            _ => false,
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Unusable(reason) | LoadError::Runtime(reason) => f.write_str(reason),
            LoadError::Incompatible { found } => {
                write!(
                    f,
                    "it is built for accel:plugin@{found}, which this host does not serve"
                )
            }
            LoadError::Compile(failure) => failure.fmt(f),
            LoadError::Remembered(refusal) => refusal.fmt(f),
        }
    }
}
