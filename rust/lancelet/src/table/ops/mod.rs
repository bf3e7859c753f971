//! Table operations, one file each: each reads a version, builds a
//! transaction and goes through the one commit loop.

pub mod index;
