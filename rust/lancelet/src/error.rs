//! The one error type of the core crate.
//!
//! Decoders deep in the stack do not know which file they are reading, so
//! they report `Corrupt { path: None, .. }` and the file reader attaches the
//! path (and the column/page) on the way out with [`Error::in_file`] and
//! [`Error::context`].

use std::fmt;

/// Result alias used throughout lancelet.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure lancelet reports; the Python layer maps each variant to one
/// exception class.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file, dataset, version or tag does not exist.
    #[error("not found: {what}")]
    NotFound { what: String },
    /// Something that must not exist yet already does.
    #[error("already exists: {what}")]
    AlreadyExists { what: String },
    /// The bytes of a file do not follow the format.
    #[error("corrupt {}: {what}", Where(path))]
    Corrupt { path: Option<String>, what: String },
    /// Valid format, but a feature (encoding, version, flag) we do not handle.
    #[error("unsupported{}: {what}", InFile(path))]
    Unsupported { path: Option<String>, what: String },
    /// The caller's arguments or data are wrong.
    #[error("invalid input: {what}")]
    InvalidInput { what: String },
    /// A concurrent writer committed something incompatible.
    #[error("commit conflict: {what}")]
    Conflict { what: String },
    /// A bug in lancelet (e.g. a caught panic); never a data problem.
    #[error("internal error (a bug in lancelet, please report it): {what}")]
    Internal { what: String },
    /// The storage layer failed.
    #[error("I/O error on {path}: {message}")]
    Io { path: String, message: String },
}

struct Where<'a>(&'a Option<String>);
impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(p) => write!(f, "file {p}"),
            None => write!(f, "data"),
        }
    }
}
struct InFile<'a>(&'a Option<String>);
impl fmt::Display for InFile<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(p) => write!(f, " in {p}"),
            None => Ok(()),
        }
    }
}

impl Error {
    /// Corrupt data, location to be attached by the caller.
    pub fn corrupt(what: impl Into<String>) -> Self {
        Error::Corrupt { path: None, what: what.into() }
    }
    /// An unsupported feature, location to be attached by the caller.
    pub fn unsupported(what: impl Into<String>) -> Self {
        Error::Unsupported { path: None, what: what.into() }
    }
    /// Bad arguments or data from the caller.
    pub fn invalid_input(what: impl Into<String>) -> Self {
        Error::InvalidInput { what: what.into() }
    }
    /// Attach the file path to a corrupt/unsupported error that lacks one.
    pub fn in_file(self, file: &str) -> Self {
        match self {
            Error::Corrupt { path: None, what } => Error::Corrupt { path: Some(file.to_string()), what },
            Error::Unsupported { path: None, what } => {
                Error::Unsupported { path: Some(file.to_string()), what }
            }
            other => other,
        }
    }
    /// Prefix the message with where in the file the problem is.
    pub fn context(self, place: impl fmt::Display) -> Self {
        match self {
            Error::Corrupt { path, what } => Error::Corrupt { path, what: format!("{place}: {what}") },
            Error::Unsupported { path, what } => {
                Error::Unsupported { path, what: format!("{place}: {what}") }
            }
            Error::InvalidInput { what } => Error::InvalidInput { what: format!("{place}: {what}") },
            other => other,
        }
    }
}

impl From<prost::DecodeError> for Error {
    fn from(e: prost::DecodeError) -> Self {
        Error::corrupt(format!("bad protobuf: {e}"))
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Error::corrupt(format!("arrow: {e}"))
    }
}

/// Shorthand for returning a corrupt-data error from a decoder.
#[macro_export]
macro_rules! corrupt {
    ($($arg:tt)*) => { $crate::error::Error::corrupt(format!($($arg)*)) };
}

/// Shorthand for returning an unsupported-feature error.
#[macro_export]
macro_rules! unsupported {
    ($($arg:tt)*) => { $crate::error::Error::unsupported(format!($($arg)*)) };
}
