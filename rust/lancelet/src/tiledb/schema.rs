//! The array schema: one generic tile in `__schema/<timestamped name>`.
//!
//! Layout (version 22): `u32 version, u8 allows duplicates, u8 array type
//! (0 dense, 1 sparse), u8 tile order, u8 cell order (0 row-major, 1
//! col-major, 4 Hilbert), u64 capacity`, the coordinate, offset and
//! validity filter pipelines, the domain (`u32 dims`, per dimension `u32
//! name length, name, u8 datatype, u32 cell values (u32::MAX = var), filter
//! pipeline, u64 domain bytes, domain (lo, hi), u8 null tile extent, tile
//! extent if not null`), `u32 attributes` (per attribute `u32 name length,
//! name, u8 datatype, u32 cell values, pipeline, u64 fill size, fill, u8
//! nullable, u8 fill validity, u8 order, u32 enumeration name length,
//! name`), `u32 dimension labels`, `u32 enumerations` (name and file per
//! entry), then the current domain (`u32 version, u8 empty`, and if not
//! empty `u8 type` and one range per dimension).

use super::cursor::Cursor;
use super::datatype::Datatype;
use super::filters::FilterPipeline;
use super::generic_tile::{check_version, read_generic_tile};
use crate::error::{Error, Result};

/// `cell_val_num` of var-sized dimensions and attributes.
pub const VAR_NUM: u32 = u32::MAX;

/// Cell or tile order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    RowMajor,
    ColMajor,
    Global,
    Unordered,
    Hilbert,
}

impl Layout {
    fn from_code(c: u8) -> Result<Self> {
        Ok(match c {
            0 => Layout::RowMajor,
            1 => Layout::ColMajor,
            2 => Layout::Global,
            3 => Layout::Unordered,
            4 => Layout::Hilbert,
            _ => return Err(Error::corrupt(format!("unknown layout code {c}"))),
        })
    }

    /// tiledb-py's name for the order.
    pub fn name(self) -> &'static str {
        match self {
            Layout::RowMajor => "row-major",
            Layout::ColMajor => "col-major",
            Layout::Global => "global",
            Layout::Unordered => "unordered",
            Layout::Hilbert => "hilbert",
        }
    }
}

/// One dimension of the domain.
#[derive(Debug, Clone)]
pub struct Dimension {
    pub name: String,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    /// Filters of the coordinate tiles. A parsed schema holds the coords
    /// filters here when none were stored, as TileDB loads it; a schema
    /// being created may leave it empty (see [`ArraySchema::dim_filters`]).
    pub filters: FilterPipeline,
    /// Domain bounds as stored (empty for var-sized dimensions).
    pub domain: Option<(Vec<u8>, Vec<u8>)>,
    /// Space tile extent as stored.
    pub tile_extent: Option<Vec<u8>>,
}

impl Dimension {
    /// Var-sized (string) dimension.
    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }
    /// Integer domain bounds (dense arithmetic).
    pub fn int_domain(&self) -> Option<(i128, i128)> {
        let (lo, hi) = self.domain.as_ref()?;
        Some((int_value(self.datatype, lo)?, int_value(self.datatype, hi)?))
    }
    /// Integer tile extent.
    pub fn int_extent(&self) -> Option<i128> {
        int_value(self.datatype, self.tile_extent.as_ref()?)
    }

    /// The tile extent TileDB gives a dimension created without one: its
    /// whole domain, `hi - lo + 1` for integers and datetimes, `hi - lo`
    /// (in the dimension's type) for floats; None without a domain (string
    /// dimensions). An integer range that does not fit the type is
    /// `InvalidInputError`: TileDB refuses the type's full range and wraps
    /// the others into an extent (int8 -100..100 gets -55) its own dense
    /// writes then fail on.
    pub fn default_tile_extent(&self) -> Result<Option<Vec<u8>>> {
        let Some((lo, hi)) = &self.domain else { return Ok(None) };
        if let Some((l, h)) = self.int_domain() {
            let w = self.datatype.size();
            let bits = 8 * w as u32 - u32::from(self.datatype.is_signed());
            let e = h - l + 1;
            if e <= 0 || e > (1i128 << bits) - 1 {
                return Err(Error::invalid_input(format!(
                    "dimension {}: its domain [{l}, {h}] holds more values than {} can count, so it has no \
                     default tile extent; give one",
                    self.name,
                    self.datatype.name()
                )));
            }
            return Ok(Some(e.to_le_bytes()[..w].to_vec()));
        }
        Ok(match self.datatype {
            Datatype::Float32 => {
                let (l, h) = (f32::from_le_bytes(lo[..4].try_into().unwrap()), f32::from_le_bytes(hi[..4].try_into().unwrap()));
                Some((h - l).to_le_bytes().to_vec())
            }
            Datatype::Float64 => {
                let (l, h) = (f64::from_le_bytes(lo[..8].try_into().unwrap()), f64::from_le_bytes(hi[..8].try_into().unwrap()));
                Some((h - l).to_le_bytes().to_vec())
            }
            _ => None,
        })
    }
}

/// One attribute.
#[derive(Debug, Clone)]
pub struct Attribute {
    pub name: String,
    pub datatype: Datatype,
    pub cell_val_num: u32,
    pub filters: FilterPipeline,
    /// Fill value bytes (one cell; for var-sized attributes one value).
    pub fill: Vec<u8>,
    pub nullable: bool,
    /// Validity of fill cells.
    pub fill_valid: bool,
}

impl Attribute {
    /// Var-sized attribute.
    pub fn is_var(&self) -> bool {
        self.cell_val_num == VAR_NUM
    }
    /// Bytes per cell of a fixed-size attribute.
    pub fn cell_size(&self) -> usize {
        if self.is_var() {
            8
        } else {
            self.datatype.size() * self.cell_val_num as usize
        }
    }

    /// The fill value TileDB gives an attribute created without one: the
    /// type's fill value once per value of a cell, once for var-sized
    /// cells (so `0x80` for a var-sized CHAR attribute).
    pub fn default_fill(datatype: Datatype, cell_val_num: u32) -> Vec<u8> {
        let n = if cell_val_num == VAR_NUM { 1 } else { cell_val_num as usize };
        datatype.fill_value().repeat(n)
    }
}

/// A parsed array schema.
#[derive(Debug, Clone)]
pub struct ArraySchema {
    /// File name under `__schema/`.
    pub name: String,
    pub version: u32,
    pub allows_duplicates: bool,
    pub sparse: bool,
    pub tile_order: Layout,
    pub cell_order: Layout,
    pub capacity: u64,
    pub coords_filters: FilterPipeline,
    pub offsets_filters: FilterPipeline,
    pub validity_filters: FilterPipeline,
    pub dims: Vec<Dimension>,
    pub attrs: Vec<Attribute>,
}

/// A stored value read as an integer (integer, datetime and bool types).
pub fn int_value(t: Datatype, b: &[u8]) -> Option<i128> {
    let w = t.size();
    if !t.is_integer() || b.len() < w {
        return None;
    }
    let mut a = [0u8; 8];
    a[..w].copy_from_slice(&b[..w]);
    let u = u64::from_le_bytes(a);
    Some(if t.is_signed() {
        let s = 64 - 8 * w as u32;
        (((u << s) as i64) >> s) as i128
    } else {
        u as i128
    })
}

/// A stored float value.
pub fn float_value(t: Datatype, b: &[u8]) -> Option<f64> {
    match t {
        Datatype::Float32 => Some(f32::from_le_bytes(b.get(..4)?.try_into().ok()?) as f64),
        Datatype::Float64 => Some(f64::from_le_bytes(b.get(..8)?.try_into().ok()?)),
        _ => None,
    }
}

fn parse_name(c: &mut Cursor, what: &str) -> Result<String> {
    let b = c.take_len_u32(what)?;
    String::from_utf8(b.to_vec()).map_err(|_| Error::corrupt(format!("{what} is not UTF-8")))
}

impl ArraySchema {
    /// Parse a schema file's bytes (a generic tile); `name` is its file name.
    pub fn parse(file: &[u8], name: &str) -> Result<Self> {
        let (bytes, _) = read_generic_tile(file, 0)?;
        Self::parse_body(&bytes, name)
    }

    fn parse_body(b: &[u8], name: &str) -> Result<Self> {
        let mut c = Cursor::new(b);
        let version = c.u32("schema version")?;
        check_version(version, "array schema")?;
        let allows_duplicates = c.u8("allows duplicates")? != 0;
        let sparse = match c.u8("array type")? {
            0 => false,
            1 => true,
            t => return Err(Error::corrupt(format!("array type {t}"))),
        };
        let tile_order = Layout::from_code(c.u8("tile order")?)?;
        let cell_order = Layout::from_code(c.u8("cell order")?)?;
        let capacity = c.u64("capacity")?;
        let coords_filters = FilterPipeline::parse(&mut c).map_err(|e| e.context("coords filters"))?;
        let offsets_filters = FilterPipeline::parse(&mut c).map_err(|e| e.context("offsets filters"))?;
        let validity_filters = FilterPipeline::parse(&mut c).map_err(|e| e.context("validity filters"))?;
        let ndims = c.u32("dimension count")?;
        if ndims == 0 || ndims > 64 {
            return Err(Error::corrupt(format!("dimension count {ndims}")));
        }
        let mut dims = Vec::new();
        for i in 0..ndims {
            let mut d = Self::parse_dim(&mut c).map_err(|e| e.context(format!("dimension {i}")))?;
            // TileDB loads a dimension stored without filters with the
            // coordinate filters (Dimension::deserialize), and reports,
            // writes and re-creates it so: the schema is what it loads.
            if d.filters.filters.is_empty() {
                d.filters = coords_filters.clone();
            }
            dims.push(d);
        }
        let nattrs = c.u32("attribute count")?;
        if nattrs as usize > c.remaining() {
            return Err(Error::corrupt(format!("attribute count {nattrs}")));
        }
        let mut attrs = Vec::new();
        for i in 0..nattrs {
            attrs.push(Self::parse_attr(&mut c).map_err(|e| e.context(format!("attribute {i}")))?);
        }
        let labels = c.u32("dimension label count")?;
        if labels != 0 {
            return Err(Error::unsupported(format!("dimension labels ({labels} in the schema)")));
        }
        let enums = c.u32("enumeration count")?;
        if enums != 0 {
            return Err(Error::unsupported(format!("enumerations ({enums} in the schema)")));
        }
        // The current domain only narrows where writes may go; reads use
        // the domain, so it is checked for shape and otherwise skipped.
        c.u32("current domain version")?;
        Ok(ArraySchema {
            name: name.to_string(),
            version,
            allows_duplicates,
            sparse,
            tile_order,
            cell_order,
            capacity,
            coords_filters,
            offsets_filters,
            validity_filters,
            dims,
            attrs,
        })
    }

    fn parse_dim(c: &mut Cursor) -> Result<Dimension> {
        let name = parse_name(c, "dimension name")?;
        let datatype = Datatype::from_code(c.u8("dimension datatype")?)?;
        let cell_val_num = c.u32("dimension cell value count")?;
        let filters = FilterPipeline::parse(c)?;
        let dom = c.take_len_u64("dimension domain")?;
        let domain = if dom.is_empty() {
            None
        } else {
            if dom.len() != 2 * datatype.size() {
                return Err(Error::corrupt(format!("domain of {} bytes for {}", dom.len(), datatype.name())));
            }
            let (lo, hi) = dom.split_at(datatype.size());
            Some((lo.to_vec(), hi.to_vec()))
        };
        let null_extent = c.u8("null tile extent")? != 0;
        let tile_extent = if null_extent { None } else { Some(c.take(datatype.size(), "tile extent")?.to_vec()) };
        Ok(Dimension { name, datatype, cell_val_num, filters, domain, tile_extent })
    }

    fn parse_attr(c: &mut Cursor) -> Result<Attribute> {
        let name = parse_name(c, "attribute name")?;
        let datatype = Datatype::from_code(c.u8("attribute datatype")?)?;
        let cell_val_num = c.u32("attribute cell value count")?;
        if cell_val_num == 0 {
            return Err(Error::corrupt("attribute with 0 values per cell"));
        }
        let filters = FilterPipeline::parse(c)?;
        let fill = c.take_len_u64("fill value")?.to_vec();
        let nullable = c.u8("nullable")? != 0;
        let fill_valid = c.u8("fill validity")? != 0;
        c.u8("attribute order")?;
        let enumeration = c.take_len_u32("enumeration name")?;
        if !enumeration.is_empty() {
            return Err(Error::unsupported(format!("attribute {name} uses enumeration {}", String::from_utf8_lossy(enumeration))));
        }
        Ok(Attribute { name, datatype, cell_val_num, filters, fill, nullable, fill_valid })
    }

    /// The filters of dimension `i`'s coordinate tiles: its own, or the
    /// coords filters when it has none (only a schema not yet stored).
    pub fn dim_filters(&self, i: usize) -> &FilterPipeline {
        let f = &self.dims[i].filters;
        if f.filters.is_empty() {
            &self.coords_filters
        } else {
            f
        }
    }

    /// Complete a schema being created as TileDB completes it: dimensions
    /// without a tile extent get [`Dimension::default_tile_extent`] (not
    /// under Hilbert cell order, where TileDB leaves them null) and
    /// attributes without a fill value [`Attribute::default_fill`].
    pub fn set_defaults(&mut self) -> Result<()> {
        if self.cell_order != Layout::Hilbert {
            for d in &mut self.dims {
                if d.tile_extent.is_none() {
                    d.tile_extent = d.default_tile_extent()?;
                }
            }
        }
        for a in &mut self.attrs {
            if a.fill.is_empty() {
                a.fill = Attribute::default_fill(a.datatype, a.cell_val_num);
            }
        }
        Ok(())
    }

    /// Index of an attribute by name.
    pub fn attr_index(&self, name: &str) -> Option<usize> {
        self.attrs.iter().position(|a| a.name == name)
    }

    /// Index of a dimension by name.
    pub fn dim_index(&self, name: &str) -> Option<usize> {
        self.dims.iter().position(|d| d.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiledb::filters::Filter;
    use arrow_schema::TimeUnit;

    fn dim(t: Datatype, lo: &[u8], hi: &[u8]) -> Dimension {
        Dimension {
            name: "x".into(),
            datatype: t,
            cell_val_num: 1,
            filters: FilterPipeline::default(),
            domain: Some((lo.to_vec(), hi.to_vec())),
            tile_extent: None,
        }
    }

    fn attr(t: Datatype, cell_val_num: u32) -> Attribute {
        Attribute {
            name: "a".into(),
            datatype: t,
            cell_val_num,
            filters: FilterPipeline::default(),
            fill: Vec::new(),
            nullable: false,
            fill_valid: false,
        }
    }

    fn schema(dims: Vec<Dimension>, attrs: Vec<Attribute>) -> ArraySchema {
        ArraySchema {
            name: String::new(),
            version: 22,
            allows_duplicates: false,
            sparse: true,
            tile_order: Layout::RowMajor,
            cell_order: Layout::RowMajor,
            capacity: 10000,
            coords_filters: FilterPipeline { max_chunk_size: 65536, filters: vec![Filter::Lz4 { level: 4 }] },
            offsets_filters: FilterPipeline::default(),
            validity_filters: FilterPipeline::default(),
            dims,
            attrs,
        }
    }

    #[test]
    fn parsed_dimension_without_filters_has_the_coords_filters() {
        let mut own = dim(Datatype::Int64, &0i64.to_le_bytes(), &9i64.to_le_bytes());
        own.name = "y".into();
        own.filters = FilterPipeline { max_chunk_size: 65536, filters: vec![Filter::Gzip { level: 2 }] };
        let mut s = schema(vec![dim(Datatype::Int64, &0i64.to_le_bytes(), &9i64.to_le_bytes()), own.clone()], vec![]);
        s.set_defaults().unwrap();
        // Stored empty, loaded as the coords filters (as TileDB loads it).
        let bytes = crate::tiledb::write::encode::serialize_schema(&s);
        let parsed = ArraySchema::parse_body(&bytes, "n").unwrap();
        assert_eq!(parsed.dims[0].filters, s.coords_filters);
        assert_eq!(parsed.dims[1].filters, own.filters);
        assert_eq!(parsed.coords_filters, s.coords_filters);
        assert_eq!(parsed.dim_filters(0), s.dim_filters(0));
    }

    #[test]
    fn default_tile_extent_is_the_whole_domain() {
        let ext = |d: Dimension| d.default_tile_extent();
        assert_eq!(ext(dim(Datatype::Int8, &[(-10i8) as u8], &[20])).unwrap(), Some(vec![31]));
        assert_eq!(ext(dim(Datatype::Int8, &[(-100i8) as u8], &[26])).unwrap(), Some(vec![127]));
        assert_eq!(ext(dim(Datatype::UInt8, &[0], &[254])).unwrap(), Some(vec![255]));
        assert_eq!(ext(dim(Datatype::UInt64, &0u64.to_le_bytes(), &(u64::MAX - 1).to_le_bytes())).unwrap(), Some(u64::MAX.to_le_bytes().to_vec()));
        let dt = dim(Datatype::Datetime(TimeUnit::Millisecond), &(-5i64).to_le_bytes(), &1000i64.to_le_bytes());
        assert_eq!(ext(dt).unwrap(), Some(1006i64.to_le_bytes().to_vec()));
        // Floats: hi - lo in the dimension's type, 0 for a single point.
        let f = dim(Datatype::Float32, &0.1f32.to_le_bytes(), &0.3f32.to_le_bytes());
        assert_eq!(ext(f).unwrap(), Some((0.3f32 - 0.1f32).to_le_bytes().to_vec()));
        let f = dim(Datatype::Float64, &1.0f64.to_le_bytes(), &1.0f64.to_le_bytes());
        assert_eq!(ext(f).unwrap(), Some(0.0f64.to_le_bytes().to_vec()));
        let mut s = dim(Datatype::StringAscii, &[], &[]);
        s.domain = None;
        assert_eq!(ext(s).unwrap(), None);
        // Ranges the type cannot count (TileDB refuses or wraps them).
        assert!(ext(dim(Datatype::Int8, &[(-100i8) as u8], &[100])).is_err());
        assert!(ext(dim(Datatype::Int8, &[(-100i8) as u8], &[27])).is_err());
        assert!(ext(dim(Datatype::UInt8, &[0], &[255])).is_err());
        assert!(ext(dim(Datatype::Int64, &i64::MIN.to_le_bytes(), &i64::MAX.to_le_bytes())).is_err());
    }

    #[test]
    fn set_defaults_fills_what_is_missing_only() {
        let mut given = dim(Datatype::Int32, &0i32.to_le_bytes(), &99i32.to_le_bytes());
        given.tile_extent = Some(7i32.to_le_bytes().to_vec());
        let mut fill = attr(Datatype::Int32, 1);
        fill.fill = 5i32.to_le_bytes().to_vec();
        let mut s = schema(
            vec![dim(Datatype::Int32, &0i32.to_le_bytes(), &99i32.to_le_bytes()), given],
            vec![attr(Datatype::Char, VAR_NUM), attr(Datatype::Int32, 2), attr(Datatype::Blob, VAR_NUM), fill],
        );
        s.set_defaults().unwrap();
        assert_eq!(s.dims[0].tile_extent, Some(100i32.to_le_bytes().to_vec()));
        assert_eq!(s.dims[1].tile_extent, Some(7i32.to_le_bytes().to_vec()));
        assert_eq!(s.attrs[0].fill, [0x80]); // var CHAR: one CHAR fill value
        assert_eq!(s.attrs[1].fill, [i32::MIN.to_le_bytes(), i32::MIN.to_le_bytes()].concat());
        assert_eq!(s.attrs[2].fill, [0]);
        assert_eq!(s.attrs[3].fill, 5i32.to_le_bytes());
        // Hilbert cell order keeps null extents, as TileDB.
        let mut h = schema(vec![dim(Datatype::Int32, &0i32.to_le_bytes(), &99i32.to_le_bytes())], vec![]);
        h.cell_order = Layout::Hilbert;
        h.set_defaults().unwrap();
        assert_eq!(h.dims[0].tile_extent, None);
    }
}
