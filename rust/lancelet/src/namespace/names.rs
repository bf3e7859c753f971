//! Names and paths: which identifiers and locations a namespace accepts,
//! and the one place where a name becomes a path below the root.
//!
//! Everything here is checked before any I/O. A name (one level of an id)
//! is refused when it is empty, `.` or `..`, holds `/`, `\`, `$` (the
//! `__manifest` id delimiter) or a control character, or would make a
//! table directory name over 255 bytes; a root table's name may not start
//! like a URI scheme (`a:`), as its location `<name>.lance` would. A
//! location (a table directory relative to the root, as stored in
//! `__manifest`) is refused when it is empty, absolute, has a URI scheme,
//! or has an empty, `.` or `..` segment, a `\` or a control character.
//! [`below_root`] is the only way the namespace reaches a table directory:
//! it takes such a location and nothing else, so no operation can read,
//! write or delete outside the root.

use crate::error::{Error, Result};
use crate::io::Storage;

/// Separator of the levels of an id in `__manifest.object_id`.
pub const DELIMITER: char = '$';
/// Suffix of table directories named after the table (V1, compatibility mode).
pub const TABLE_SUFFIX: &str = ".lance";
/// The longest directory name (bytes) most file systems and object stores take.
pub const MAX_DIR_NAME: usize = 255;
/// Length of the random prefix of V2 table directories (`<8 hex>_`).
const HASH_PREFIX_LEN: usize = 9;

fn invalid(what: String) -> Error {
    Error::invalid_input(what)
}

/// Check one level of an id.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(invalid("a namespace or table name may not be empty".into()));
    }
    if name == "." || name == ".." {
        return Err(invalid(format!("{name:?} is not a valid namespace or table name")));
    }
    if let Some(c) = name.chars().find(|&c| matches!(c, '/' | '\\') || c == DELIMITER || c.is_control()) {
        return Err(invalid(format!("name {name:?} may not contain {c:?} (/, \\, $ and control characters are refused)")));
    }
    Ok(())
}

/// Check every level of an id; `what` names it in messages ("table id").
pub fn check_id(id: &[String], what: &str) -> Result<()> {
    for name in id {
        check_name(name).map_err(|e| e.context(format!("{what} {id:?}")))?;
    }
    // Any table below this id gets a directory named `<hash>_<object id>`.
    let len = HASH_PREFIX_LEN + object_id(id).len();
    if len > MAX_DIR_NAME {
        return Err(invalid(format!("{what} {id:?} is too long: its table directory name would take {len} bytes (at most {MAX_DIR_NAME})")));
    }
    Ok(())
}

/// A table id: at least one level, each a valid name.
pub fn check_table_id(id: &[String]) -> Result<()> {
    if id.is_empty() {
        return Err(invalid("a table id needs at least one level (the table name)".into()));
    }
    check_id(id, "table id")?;
    let name = &id[id.len() - 1];
    if id.len() == 1 && name.len() + TABLE_SUFFIX.len() > MAX_DIR_NAME {
        return Err(invalid(format!("table name {name:?} is too long for a directory name (at most {} bytes)", MAX_DIR_NAME - TABLE_SUFFIX.len())));
    }
    // A root table lives at `<name>.lance`, which must not read as a URI.
    if id.len() == 1 && has_scheme(name) {
        return Err(invalid(format!("root table name {name:?} would make a location that reads as a URI scheme ({:?})", v1_table_dir(name))));
    }
    Ok(())
}

/// The `__manifest.object_id` of an id: its levels joined by `$`.
pub fn object_id(id: &[String]) -> String {
    id.join(&DELIMITER.to_string())
}

/// The levels of an `object_id`.
pub fn split_object_id(object_id: &str) -> Vec<String> {
    object_id.split(DELIMITER).map(str::to_string).collect()
}

/// The directory of a root table named after it (V1 and compatibility mode).
pub fn v1_table_dir(name: &str) -> String {
    format!("{name}{TABLE_SUFFIX}")
}

/// The table name of a V1 table directory (`None` when `dir` is not one).
pub fn v1_table_name(dir: &str) -> Option<&str> {
    let name = dir.strip_suffix(TABLE_SUFFIX)?;
    (check_name(name).is_ok() && !has_scheme(dir)).then_some(name)
}

/// A fresh V2 table directory, `<8 random hex digits>_<object id>`, the
/// object id as it is (UTF-8, spaces and all: never percent-encoded), as
/// pylance 14 names them. The random prefix spreads tables over
/// object-store partitions and keeps a re-created table from meeting the
/// remains of an earlier one. pylance's prefix is random too (the low 32
/// bits of a hash of a random number and the object id: two creates of one
/// id get different prefixes), so no reader may derive a table's directory
/// from its id: `__manifest.location` is the only answer.
pub fn v2_table_dir(id: &[String]) -> String {
    let hash = crate::ids::random_u64() as u32;
    format!("{hash:08x}_{}", object_id(id))
}

fn has_scheme(s: &str) -> bool {
    // RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
    let Some((scheme, _)) = s.split_once(':') else { return false };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic()) && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Check a table location (relative to the namespace root) and return it
/// without a trailing `/`.
pub fn check_location(location: &str) -> Result<String> {
    let refuse = |why: &str| invalid(format!("table location {location:?} {why}; locations are relative paths below the namespace root"));
    let loc = location.strip_suffix('/').unwrap_or(location);
    if loc.is_empty() {
        return Err(refuse("is empty"));
    }
    if loc.starts_with('/') || loc.starts_with('\\') {
        return Err(refuse("is absolute"));
    }
    if has_scheme(loc) {
        return Err(refuse("has a URI scheme"));
    }
    for seg in loc.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return Err(refuse("has an empty, '.' or '..' segment"));
        }
        if seg.contains('\\') || seg.chars().any(char::is_control) {
            return Err(refuse("holds a backslash or a control character"));
        }
        if seg.len() > MAX_DIR_NAME {
            return Err(refuse("has a segment over 255 bytes"));
        }
    }
    Ok(loc.to_string())
}

/// The storage handle of a table location below `root`. The only function
/// that turns a location into a path: anything but a checked relative path
/// is refused.
pub fn below_root(root: &Storage, location: &str) -> Result<Storage> {
    let loc = check_location(location)?;
    root.child(&loc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn names() {
        for good in ["t", "a b", "x.y", "ü", "%41", "a#b", "a'b", "..."] {
            check_name(good).unwrap();
        }
        for bad in ["", ".", "..", "a/b", "a\\b", "a$b", "a\nb", "a\u{7f}", "\u{85}x"] {
            assert!(matches!(check_name(bad), Err(Error::InvalidInput { .. })), "{bad:?}");
        }
        check_table_id(&id(&["a", "b", "c"])).unwrap();
        assert!(check_table_id(&[]).is_err());
        assert!(check_table_id(&[&"x".repeat(250)].map(|s| s.to_string())).is_err());
        check_table_id(&[&"x".repeat(246)].map(|s| s.to_string())).unwrap();
        assert!(check_id(&id(&["a", &"x".repeat(250)]), "id").is_err());
        assert_eq!(object_id(&id(&["a", "b"])), "a$b");
        assert_eq!(split_object_id("a$b"), id(&["a", "b"]));
        assert_eq!(v1_table_name("t.lance"), Some("t"));
        assert_eq!(v1_table_name("a$b.lance"), None);
        assert_eq!(v1_table_name("t"), None);
        // `A:.lance` would read as a URI: refused at the root, fine nested
        assert!(matches!(check_table_id(&id(&["A:"])), Err(Error::InvalidInput { .. })));
        assert!(check_table_id(&id(&["http:x"])).is_err());
        check_table_id(&id(&["ns", "A:"])).unwrap();
        check_table_id(&id(&[":a"])).unwrap();
        assert_eq!(v1_table_name("A:.lance"), None);
        let d = v2_table_dir(&id(&["ns", "t"]));
        assert_eq!(d.len(), 9 + 4);
        assert!(d.ends_with("_ns$t") && d[..8].bytes().all(|b| b.is_ascii_hexdigit()));
        // the name's own bytes follow the prefix (pylance's form), whatever they are
        for name in ["sales 2024-ü", "😀", "a.b", "a-b", "%41", "a#1", "e\u{301}"] {
            let d = v2_table_dir(&id(&["prod", name]));
            assert_eq!(&d.as_bytes()[8..], format!("_prod${name}").as_bytes());
            assert!(d[..8].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "{d}");
        }
    }

    #[test]
    fn locations() {
        for good in ["t.lance", "t.lance/", "ab12cd34_ns$t", "sub/dir/t", "a b/%41#x"] {
            check_location(good).unwrap();
        }
        assert_eq!(check_location("t.lance/").unwrap(), "t.lance");
        for bad in ["", "/", "/abs", "\\x", "s3://b/x", "file:x", "C:x", "a:b/c", "../x", "a/../b", "a/./b", "a//b", "a\\b", "..", "a\u{0}"] {
            assert!(matches!(check_location(bad), Err(Error::InvalidInput { .. })), "{bad:?}");
        }
        let root = Storage::open("memory://names-test/root").unwrap();
        assert_eq!(below_root(&root, "t.lance").unwrap().display(), "memory://names-test/root/t.lance");
        assert!(below_root(&root, "../x").is_err());
    }
}
