//! INVERTED (full-text search) indices in pylance 14's format v2.

pub mod tokenizer;
