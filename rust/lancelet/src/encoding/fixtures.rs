//! Decoding real pylance 14 bytes.
