//! Decoding real pylance 14.0.2 bytes with the codecs.
//!
//! Reads `tests/fixtures/pylance-14/v2_2_encodings/data/*.lance` (the
//! repository's copy of the pylance fixtures) at test time, walks just enough of the 2.x container (footer
//! → column metadata → page buffers → mini-block chunks) to hand each codec
//! the exact slice the reference writer produced, and compares against the
//! values `make_fixtures.py` generated.

use prost::Message;

use super::{bitpack, fsst, rle};
use crate::proto::encodings21::{compressive_encoding::Compression, page_layout::Layout, CompressiveEncoding, PageLayout};
use crate::proto::file::v2::{encoding::Location, ColumnMetadata};

fn load_fixture() -> Option<Vec<u8>> {
    Some(std::fs::read(crate::testdata::pylance14_data_file("v2_2_encodings")).unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// Page layout and buffers of the first page of column `col`.
fn page(file: &[u8], col: usize) -> (PageLayout, Vec<&[u8]>) {
    let footer = &file[file.len() - 40..];
    assert_eq!(&footer[36..], b"LANC");
    let cmo = u64_at(footer, 8) as usize;
    let pos = u64_at(file, cmo + 16 * col) as usize;
    let size = u64_at(file, cmo + 16 * col + 8) as usize;
    let meta = ColumnMetadata::decode(&file[pos..pos + size]).unwrap();
    let page = &meta.pages[0];
    let Some(Location::Direct(direct)) = page.encoding.as_ref().and_then(|e| e.location.clone()) else {
        panic!("expected a direct page encoding");
    };
    let any = prost_types::Any::decode(direct.encoding.as_slice()).unwrap();
    let layout = PageLayout::decode(any.value.as_slice()).unwrap();
    let buffers = page.buffer_offsets.iter().zip(&page.buffer_sizes).map(|(&o, &s)| &file[o as usize..(o + s) as usize]).collect();
    (layout, buffers)
}

struct Chunk<'a> {
    num_values: usize,
    num_levels: usize,
    def: &'a [u8],
    buffers: Vec<&'a [u8]>,
}

fn pad8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// Splits a 2.2 mini-block page (u32 chunk words and buffer sizes) into
/// chunks. Only what these tests need: no repetition.
fn chunks<'a>(meta: &[u8], data: &'a [u8], has_def: bool, num_buffers: usize, num_items: usize) -> Vec<Chunk<'a>> {
    let words: Vec<u32> = meta.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect();
    let mut out = Vec::new();
    let (mut at, mut seen) = (0usize, 0usize);
    for (i, &w) in words.iter().enumerate() {
        let bytes = ((w >> 4) as usize + 1) * 8;
        let num_values = if i + 1 == words.len() { num_items - seen } else { 1 << (w & 0xf) };
        let c = &data[at..at + bytes];
        let num_levels = u16::from_le_bytes([c[0], c[1]]) as usize;
        let mut h = 2;
        let def_len = if has_def {
            h += 2;
            u16::from_le_bytes([c[2], c[3]]) as usize
        } else {
            0
        };
        let sizes: Vec<usize> = (0..num_buffers).map(|k| u32::from_le_bytes(c[h + 4 * k..h + 4 * k + 4].try_into().unwrap()) as usize).collect();
        let mut p = pad8(h + 4 * num_buffers);
        let def = &c[p..p + def_len];
        if has_def {
            p = pad8(p + def_len);
        }
        let mut buffers = Vec::new();
        for s in sizes {
            buffers.push(&c[p..p + s]);
            p = pad8(p + s);
        }
        out.push(Chunk { num_values, num_levels, def, buffers });
        at += bytes;
        seen += num_values;
    }
    assert_eq!(seen, num_items);
    out
}

fn mini_block(layout: &PageLayout) -> &crate::proto::encodings21::MiniBlockLayout {
    match layout.layout.as_ref() {
        Some(Layout::MiniBlockLayout(m)) => m,
        _ => panic!("expected a mini-block page"),
    }
}

fn compression(e: &Option<CompressiveEncoding>) -> &Compression {
    e.as_ref().and_then(|e| e.compression.as_ref()).expect("compression")
}

/// Packed width of an out-of-line bit-packed description.
fn ool_width(c: &Compression) -> (u32, u32) {
    let Compression::OutOfLineBitpacking(o) = c else { panic!("expected out-of-line bitpacking") };
    let Some(Compression::Flat(f)) = o.values.as_ref().and_then(|v| v.compression.as_ref()) else { panic!("expected flat width") };
    (o.uncompressed_bits_per_value as u32, f.bits_per_value as u32)
}

#[test]
fn fixture_inline_bitpacked_seq_i32() {
    let Some(file) = load_fixture() else { return };
    let (layout, bufs) = page(&file, 0);
    let mb = mini_block(&layout);
    assert!(matches!(compression(&mb.value_compression), Compression::InlineBitpacking(b) if b.uncompressed_bits_per_value == 32));
    let mut out = Vec::new();
    let cs = chunks(bufs[0], bufs[1], false, 1, mb.num_items as usize);
    assert_eq!(cs.len(), 2);
    // First chunk: 0..1023 need 10 bits.
    assert_eq!(&cs[0].buffers[0][..4], &10u32.to_le_bytes());
    for c in &cs {
        bitpack::unpack_inline_chunk(32, c.buffers[0], c.num_values, &mut out).unwrap();
    }
    let want: Vec<u8> = (0..1500i32).flat_map(|i| i.to_le_bytes()).collect();
    assert_eq!(out, want);
    // Our packer reproduces the reference bytes exactly.
    let mut ours = Vec::new();
    bitpack::pack_inline_chunk(32, &want[..4096], &mut ours);
    assert_eq!(ours, cs[0].buffers[0]);
    let mut ours = Vec::new();
    bitpack::pack_inline_chunk(32, &want[4096..], &mut ours);
    assert_eq!(ours, cs[1].buffers[0]);
}

#[test]
fn fixture_rle_runs_i32() {
    let Some(file) = load_fixture() else { return };
    let (layout, bufs) = page(&file, 5);
    let mb = mini_block(&layout);
    assert!(matches!(compression(&mb.value_compression), Compression::Rle(_)));
    let mut out = Vec::new();
    for c in chunks(bufs[0], bufs[1], false, 2, mb.num_items as usize) {
        rle::decode(32, c.buffers[0], c.buffers[1], c.num_values, &mut out).unwrap();
        // Re-encoding gives the same two buffers.
        let start = out.len() - 4 * c.num_values;
        assert_eq!(rle::encode(32, &out[start..]), (c.buffers[0].to_vec(), c.buffers[1].to_vec()));
    }
    let want: Vec<u8> = (0..1500i32).flat_map(|i| (i / 300).to_le_bytes()).collect();
    assert_eq!(out, want);
}

#[test]
fn fixture_out_of_line_def_levels() {
    let Some(file) = load_fixture() else { return };
    let (layout, bufs) = page(&file, 8);
    let mb = mini_block(&layout);
    let (t, w) = ool_width(compression(&mb.def_compression));
    assert_eq!((t, w), (16, 1));
    let (mut defs, mut values) = (Vec::new(), Vec::new());
    for c in chunks(bufs[0], bufs[1], true, 1, mb.num_items as usize) {
        assert_eq!(c.num_levels, c.num_values);
        bitpack::unpack_out_of_line_typed::<u16>(w, c.def, c.num_levels, &mut defs).unwrap();
        assert_eq!(bitpack::pack_out_of_line_with_width(w, &defs[defs.len() - c.num_levels..]), c.def);
        bitpack::unpack_inline_chunk_typed::<u32>(c.buffers[0], c.num_values, &mut values).unwrap();
    }
    let want_defs: Vec<u16> = (0..1500).map(|i| (i % 4 == 0) as u16).collect();
    assert_eq!(defs, want_defs);
    let want_values: Vec<u32> = (0..1500).map(|i| if i % 4 == 0 { 0 } else { i }).collect();
    assert_eq!(values, want_values);
}

#[test]
fn fixture_constant_page_levels() {
    let Some(file) = load_fixture() else { return };
    let (layout, bufs) = page(&file, 15);
    let Some(Layout::ConstantLayout(cl)) = layout.layout.as_ref() else { panic!("expected constant layout") };
    let (rep_t, rep_w) = ool_width(compression(&cl.rep_compression));
    let (def_t, def_w) = ool_width(compression(&cl.def_compression));
    let (mut rep, mut def) = (Vec::new(), Vec::new());
    bitpack::unpack_out_of_line(rep_t, rep_w, bufs[0], cl.num_rep_values as usize, &mut rep).unwrap();
    bitpack::unpack_out_of_line(def_t, def_w, bufs[1], cl.num_def_values as usize, &mut def).unwrap();
    // [null, null] lists: rep 1,0 / def 1,1; empty list: rep 1 / def 3;
    // null list: rep 1 / def 2.
    let (mut want_rep, mut want_def) = (Vec::<u16>::new(), Vec::<u16>::new());
    for i in 0..1500 {
        if i % 3 != 0 {
            want_rep.extend([1, 0]);
            want_def.extend([1, 1]);
        } else {
            want_rep.push(1);
            want_def.push(if i % 2 == 1 { 3 } else { 2 });
        }
    }
    let le = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    assert_eq!(rep, le(&want_rep));
    assert_eq!(def, le(&want_def));
    assert_eq!(bitpack::pack_out_of_line(16, &def), (def_w, bufs[1].to_vec()));
}

#[test]
fn fixture_fsst_str_text() {
    let Some(file) = load_fixture() else { return };
    let (layout, bufs) = page(&file, 10);
    let mb = mini_block(&layout);
    let Compression::Fsst(f) = compression(&mb.value_compression) else { panic!("expected fsst") };
    let table = fsst::SymbolTable::parse(&f.symbol_table).unwrap();
    assert!(table.is_enabled());
    assert_eq!(table.to_bytes(), f.symbol_table, "symbol table re-serializes byte for byte");
    let mut seen = 0usize;
    for c in chunks(bufs[0], bufs[1], false, 1, mb.num_items as usize) {
        // Inner `variable{flat 32}` chunk: n+1 u32 offsets into the chunk
        // buffer itself, then the compressed bytes.
        let buf = c.buffers[0];
        let offsets: Vec<u32> = buf[..4 * (c.num_values + 1)].chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).collect();
        assert_eq!(offsets[0] as usize, 4 * (c.num_values + 1));
        let (o, d) = fsst::decompress(&table, &offsets, buf).unwrap();
        for k in 0..c.num_values {
            let s = &d[o[k] as usize..o[k + 1] as usize];
            assert_eq!(s, format!("hello world number {} with some text", seen + k).as_bytes());
        }
        seen += c.num_values;
        // Our compressor with the reference table also round-trips.
        let (co, cd) = fsst::compress(&table, &o, &d).unwrap();
        assert_eq!(fsst::decompress(&table, &co, &cd).unwrap(), (o, d));
    }
    assert_eq!(seen, 1500);
}
