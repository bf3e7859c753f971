//! INVERTED (full-text search) indices in pylance 14's format v2.

pub mod build;
pub mod posting_encode;
pub mod tokenizer;
pub mod write;
