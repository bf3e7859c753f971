//! The one error type of the core crate.
//!
//! Decoders deep in the stack do not know which file they are reading, so
//! they report `Corrupt { path: None, .. }` and the file reader attaches the
//! path (and the column/page) on the way out with [`Error::in_file`] and
//! [`Error::context`].
//!
//! An error made from another library's error (an `std::io::Error`, an
//! `object_store::Error`, an `ArrowError`, a protobuf `DecodeError`, a
//! zstd/lz4/JSON error ...) keeps it as its [`std::error::Error::source`]
//! and is classified where it arises: the code that calls the library knows
//! whether the bytes came from a file (corrupt), from the caller (invalid
//! input) or from lancelet itself (a bug), and says so with
//! [`Error::with_source`] or one of [`Error::corrupt_arrow`],
//! [`Error::invalid_arrow`], [`Error::internal_arrow`],
//! [`Error::bad_protobuf`]. No blanket `From` picks one class for all of
//! them (the two left at the end of this file serve two files only; see
//! there). The message keeps the source's text as well, so what users read
//! does not depend on a reporter walking the chain.

use std::fmt;

/// Result alias used throughout lancelet.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The library error an [`Error`] was made from.
pub type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Every failure lancelet reports; the Python layer maps each variant to one
/// exception class (and the source chain to the exception's `__cause__`).
/// What an [`Error::AlreadyExists`] is about. pylance raises a different
/// built-in class for each (an `OSError` for a dataset or file, a
/// `RuntimeError` for an index name in use, a `ValueError` for a tag), so
/// the bindings pick a Python class that derives from the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Existing {
    /// A dataset, file or other stored object.
    #[default]
    Object,
    /// An index name.
    Index,
    /// A tag or branch name.
    Reference,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file, dataset, version or tag does not exist.
    #[error("not found: {what}")]
    NotFound {
        what: String,
        #[source]
        source: Option<Source>,
    },
    /// Something that must not exist yet already does.
    #[error("already exists: {what}")]
    AlreadyExists {
        what: String,
        /// What kind of thing exists (it picks the Python class).
        existing: Existing,
        #[source]
        source: Option<Source>,
    },
    /// The bytes of a file do not follow the format.
    #[error("corrupt {}: {what}", Where(path))]
    Corrupt {
        path: Option<String>,
        what: String,
        #[source]
        source: Option<Source>,
    },
    /// Valid format, but a feature (encoding, version, flag) we do not handle.
    #[error("unsupported{}: {what}", InFile(path))]
    Unsupported {
        path: Option<String>,
        what: String,
        #[source]
        source: Option<Source>,
    },
    /// The caller's arguments or data are wrong.
    #[error("invalid input: {what}")]
    InvalidInput {
        what: String,
        #[source]
        source: Option<Source>,
    },
    /// A concurrent writer committed something incompatible.
    #[error("commit conflict: {what}")]
    Conflict { what: String },
    /// A bug in lancelet (e.g. a caught panic); never a data problem. It
    /// keeps no source (the message holds the text of the error it came
    /// from) while code (`tiledb/read.rs` among others) builds it as
    /// `Error::Internal { what }` rather than with [`Error::internal`].
    #[error("internal error (a bug in lancelet, please report it): {what}")]
    Internal { what: String },
    /// The storage layer failed.
    #[error("I/O error on {path}: {message}")]
    Io {
        path: String,
        message: String,
        #[source]
        source: Option<Source>,
    },
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
    /// Something that does not exist.
    pub fn not_found(what: impl Into<String>) -> Self {
        Error::NotFound { what: what.into(), source: None }
    }
    /// Something that must not exist yet already does.
    pub fn already_exists(what: impl Into<String>) -> Self {
        Error::AlreadyExists { what: what.into(), existing: Existing::Object, source: None }
    }
    /// An index name already in use (`replace=False`).
    pub fn index_exists(what: impl Into<String>) -> Self {
        Error::AlreadyExists { what: what.into(), existing: Existing::Index, source: None }
    }
    /// The same `AlreadyExists` error (message and source) about a tag or
    /// branch; any other error unchanged.
    pub fn as_reference_exists(self) -> Self {
        match self {
            Error::AlreadyExists { what, source, .. } => Error::AlreadyExists { what, existing: Existing::Reference, source },
            e => e,
        }
    }
    /// Corrupt data, location to be attached by the caller.
    pub fn corrupt(what: impl Into<String>) -> Self {
        Error::Corrupt { path: None, what: what.into(), source: None }
    }
    /// Corrupt data in a known file.
    pub fn corrupt_in(path: impl Into<String>, what: impl Into<String>) -> Self {
        Error::Corrupt { path: Some(path.into()), what: what.into(), source: None }
    }
    /// An unsupported feature, location to be attached by the caller.
    pub fn unsupported(what: impl Into<String>) -> Self {
        Error::Unsupported { path: None, what: what.into(), source: None }
    }
    /// An unsupported feature of a known file.
    pub fn unsupported_in(path: impl Into<String>, what: impl Into<String>) -> Self {
        Error::Unsupported { path: Some(path.into()), what: what.into(), source: None }
    }
    /// Bad arguments or data from the caller.
    pub fn invalid_input(what: impl Into<String>) -> Self {
        Error::InvalidInput { what: what.into(), source: None }
    }
    /// A concurrent writer committed something incompatible.
    pub fn conflict(what: impl Into<String>) -> Self {
        Error::Conflict { what: what.into() }
    }
    /// A bug in lancelet.
    pub fn internal(what: impl Into<String>) -> Self {
        Error::Internal { what: what.into() }
    }
    /// A storage failure on `path` that no library error explains (a short
    /// read, a failure injected by a test); see [`Error::with_source`].
    pub fn io(path: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Io { path: path.into(), message: message.into(), source: None }
    }

    /// The same error, made from `source` (kept for
    /// [`std::error::Error::source`] and Python's `__cause__`). The message
    /// is not changed: it should already say what the source says.
    /// `Conflict` and `Internal` keep no source (their message does).
    pub fn with_source(mut self, source: impl Into<Source>) -> Self {
        match &mut self {
            Error::NotFound { source: s, .. }
            | Error::AlreadyExists { source: s, .. }
            | Error::Corrupt { source: s, .. }
            | Error::Unsupported { source: s, .. }
            | Error::InvalidInput { source: s, .. }
            | Error::Io { source: s, .. } => *s = Some(source.into()),
            Error::Conflict { .. } | Error::Internal { .. } => {}
        }
        self
    }

    /// The same error (class, path and source) saying `what` instead: a
    /// caller that knows better what was missing or already there.
    pub fn reworded(mut self, new: impl Into<String>) -> Self {
        match &mut self {
            Error::NotFound { what, .. }
            | Error::AlreadyExists { what, .. }
            | Error::Corrupt { what, .. }
            | Error::Unsupported { what, .. }
            | Error::InvalidInput { what, .. }
            | Error::Conflict { what }
            | Error::Internal { what }
            | Error::Io { message: what, .. } => *what = new.into(),
        }
        self
    }

    /// A protobuf message of a file that does not decode: corrupt data, the
    /// decoder's error kept as the source.
    pub fn bad_protobuf(e: prost::DecodeError) -> Self {
        Error::corrupt(format!("bad protobuf: {e}")).with_source(e)
    }

    /// An Arrow array that does not build from the buffers decoded out of
    /// a file: corrupt data.
    pub fn corrupt_arrow(e: arrow_schema::ArrowError) -> Self {
        Error::corrupt(format!("arrow: {e}")).with_source(e)
    }

    /// An Arrow kernel that failed on the caller's values (a cast or
    /// arithmetic of a filter or expression, data handed in to be
    /// written): invalid input.
    pub fn invalid_arrow(e: arrow_schema::ArrowError) -> Self {
        Error::invalid_input(e.to_string()).with_source(e)
    }

    /// An Arrow kernel that failed on arrays lancelet built itself (rows
    /// taken by indices it computed, batches of columns it assembled): a
    /// bug, except for arrays too large for Arrow's 32-bit offsets, a limit
    /// of the data's size (unsupported).
    pub fn internal_arrow(e: arrow_schema::ArrowError) -> Self {
        match e {
            arrow_schema::ArrowError::OffsetOverflowError(_) => Error::unsupported(format!("arrow: {e}")).with_source(e),
            e => Error::internal(format!("arrow: {e}")),
        }
    }

    /// Attach the file path to a corrupt/unsupported error that lacks one.
    pub fn in_file(mut self, file: &str) -> Self {
        if let Error::Corrupt { path: p @ None, .. } | Error::Unsupported { path: p @ None, .. } = &mut self {
            *p = Some(file.to_string());
        }
        self
    }
    /// Prefix the message with where in the file the problem is.
    pub fn context(mut self, place: impl fmt::Display) -> Self {
        if let Error::Corrupt { what, .. } | Error::Unsupported { what, .. } | Error::InvalidInput { what, .. } = &mut self {
            *what = format!("{place}: {what}");
        }
        self
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

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    fn io() -> std::io::Error {
        std::io::Error::from(std::io::ErrorKind::PermissionDenied)
    }

    #[test]
    fn sources_are_kept_through_context() {
        let made = [
            Error::not_found("x").with_source(io()),
            Error::already_exists("x").with_source(io()),
            Error::corrupt("x").with_source(io()),
            Error::unsupported("x").with_source(io()),
            Error::invalid_input("x").with_source(io()),
            Error::io("p", "x").with_source(io()),
        ];
        for e in made {
            let before = std::mem::discriminant(&e);
            let e = e.in_file("f").context("column 1").reworded("y");
            assert_eq!(std::mem::discriminant(&e), before);
            assert!(e.source().is_some_and(|s| s.is::<std::io::Error>()), "{e:?}");
        }
        // Conflict and Internal keep no source; their messages say it.
        assert!(Error::conflict("x").with_source(io()).source().is_none());
        assert!(Error::internal("x").with_source(io()).source().is_none());
        let e = Error::corrupt("bad").with_source(io()).in_file("f").context("page 2");
        assert_eq!(e.to_string(), "corrupt file f: page 2: bad");
    }

    #[test]
    fn arrow_and_protobuf_errors_are_classified_by_the_caller() {
        use arrow_schema::ArrowError;
        let e = Error::corrupt_arrow(ArrowError::InvalidArgumentError("lengths".into()));
        assert!(matches!(e, Error::Corrupt { .. }) && e.to_string() == "corrupt data: arrow: Invalid argument error: lengths");
        assert!(e.source().is_some_and(|s| s.is::<ArrowError>()));
        let e = Error::invalid_arrow(ArrowError::DivideByZero);
        assert!(matches!(e, Error::InvalidInput { .. }) && e.to_string() == "invalid input: Divide by zero error");
        assert!(e.source().is_some_and(|s| s.is::<ArrowError>()));
        let e = Error::internal_arrow(ArrowError::InvalidArgumentError("lengths".into()));
        assert!(matches!(e, Error::Internal { .. }) && e.to_string().ends_with("arrow: Invalid argument error: lengths"));
        let e = Error::internal_arrow(ArrowError::OffsetOverflowError(1 << 31));
        assert!(matches!(e, Error::Unsupported { .. }) && e.source().is_some_and(|s| s.is::<ArrowError>()), "{e:?}");
        let decode = <prost_types::Any as prost::Message>::decode(&[0xff_u8][..]).unwrap_err();
        let e = Error::bad_protobuf(decode);
        assert!(matches!(e, Error::Corrupt { .. }) && e.source().is_some_and(|s| s.is::<prost::DecodeError>()));
        assert!(e.to_string().starts_with("corrupt data: bad protobuf: "), "{e}");
    }
}
