//! The FSST symbol table: parsed from and serialized to Lance's 2312-byte
//! layout (see the module above), or built from symbols.

use super::{MAGIC, MAX_SYMBOLS, MAX_SYMBOL_LEN, SYMBOL_TABLE_SIZE};
use crate::corrupt;
use crate::error::{Error, Result};

/// A parsed or trained FSST symbol table.
#[derive(Clone, PartialEq, Eq)]
pub struct SymbolTable {
    /// Symbol bytes, zero padded to 8; only the first `n_symbols` are used.
    pub(super) symbols: [[u8; 8]; 256],
    /// Symbol lengths; 0 marks an unused code (which makes decoding fail).
    pub(super) lens: [u8; 256],
    pub(super) n_symbols: usize,
    pub(super) terminator: u8,
    pub(super) suffix_lim: u8,
    pub(super) enabled: bool,
}

impl std::fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SymbolTable").field("n_symbols", &self.n_symbols).field("enabled", &self.enabled).finish_non_exhaustive()
    }
}

impl SymbolTable {
    /// The table Lance writes when the switch is off: no symbols, strings
    /// stored verbatim.
    pub fn uncompressed() -> Self {
        SymbolTable { symbols: [[0; 8]; 256], lens: [0; 256], n_symbols: 0, terminator: 0, suffix_lim: 0, enabled: false }
    }

    /// Whether strings are compressed (the switch bit).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.n_symbols
    }

    /// True when there are no symbols.
    pub fn is_empty(&self) -> bool {
        self.n_symbols == 0
    }

    /// Whether every symbol is ASCII (decoded strings then are, but for
    /// their escaped bytes).
    pub fn symbols_ascii(&self) -> bool {
        self.symbols[..self.n_symbols].iter().zip(&self.lens).all(|(s, &l)| s[..l as usize].is_ascii())
    }

    /// Symbol `code` as bytes, if defined.
    pub fn symbol(&self, code: u8) -> Option<&[u8]> {
        let i = code as usize;
        (i < self.n_symbols).then(|| &self.symbols[i][..self.lens[i] as usize])
    }

    /// Parses the 2312-byte serialized table.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != SYMBOL_TABLE_SIZE {
            return Err(corrupt!("fsst: symbol table is {} bytes, expected {SYMBOL_TABLE_SIZE}", bytes.len()));
        }
        let header = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        if header >> 32 != MAGIC {
            return Err(corrupt!("fsst: bad symbol table magic {:#x}", header >> 32));
        }
        let n = (header & 0xff) as usize;
        if n > MAX_SYMBOLS {
            return Err(corrupt!("fsst: {n} symbols (max {MAX_SYMBOLS})"));
        }
        let mut table = SymbolTable {
            n_symbols: n,
            terminator: (header >> 8) as u8,
            suffix_lim: (header >> 16) as u8,
            enabled: header & (1 << 24) != 0,
            ..Self::uncompressed()
        };
        let lens_at = 8 + 8 * n;
        for i in 0..n {
            table.symbols[i].copy_from_slice(&bytes[8 + 8 * i..16 + 8 * i]);
            let len = bytes[lens_at + i];
            if !(1..=MAX_SYMBOL_LEN as u8).contains(&len) {
                return Err(corrupt!("fsst: symbol {i} has length {len}"));
            }
            table.lens[i] = len;
        }
        Ok(table)
    }

    /// Serializes the table exactly as Lance does (2312 bytes).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![0u8; SYMBOL_TABLE_SIZE];
        let header = (MAGIC << 32)
            | ((self.enabled as u64) << 24)
            | ((self.suffix_lim as u64) << 16)
            | ((self.terminator as u64) << 8)
            | self.n_symbols as u64;
        out[..8].copy_from_slice(&header.to_le_bytes());
        let n = self.n_symbols;
        for i in 0..n {
            out[8 + 8 * i..16 + 8 * i].copy_from_slice(&self.symbols[i]);
            out[8 + 8 * n + i] = self.lens[i];
        }
        out
    }

    /// Builds a table from symbols (each 1..=8 bytes, at most 255), with the
    /// switch on.
    pub fn from_symbols<S: AsRef<[u8]>>(symbols: &[S]) -> Result<Self> {
        if symbols.len() > MAX_SYMBOLS {
            return Err(Error::invalid_input(format!("fsst: {} symbols (max {MAX_SYMBOLS})", symbols.len())));
        }
        let mut t = SymbolTable { enabled: true, n_symbols: symbols.len(), ..Self::uncompressed() };
        for (i, s) in symbols.iter().enumerate() {
            let s = s.as_ref();
            if s.is_empty() || s.len() > MAX_SYMBOL_LEN {
                return Err(Error::invalid_input(format!("fsst: symbol of {} bytes", s.len())));
            }
            t.symbols[i][..s.len()].copy_from_slice(s);
            t.lens[i] = s.len() as u8;
        }
        Ok(t)
    }
}
