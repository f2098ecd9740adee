//! HPACK (RFC 7541): the header compression of HTTP/2, decoding only.
//!
//! [`Decoder`] decodes one complete header block (a HEADERS or PUSH_PROMISE frame with its CONTINUATION frames) at
//! a time, keeping the dynamic table between blocks as RFC 7541 section 2.3.2 says. Every input is hostile: an
//! index past the tables, an integer over 32 bits, a string longer than the block, bad Huffman padding or the EOS
//! symbol are errors ([`HpackError`]), never panics; the dynamic table is bounded by the size the decoding side
//! advertised (`SETTINGS_HEADER_TABLE_SIZE`, at most [`MAX_TABLE_SIZE`]), and a size update above it is an error.
//!
//! ## Why not a crate
//! `loona-hpack` (the maintained fork of `hpack`) was read before writing this: it rebuilds a 257-entry hash map for
//! every Huffman-coded string and walks the code bit by bit through it (a header block of 8,000 two-byte strings
//! costs 8,000 map builds: a cheap CPU flood), panics through an `assert!` when a table size above its allowed
//! maximum is set, and does not report dynamic table size updates, which the rules' `http2.size_update` needs.
//! The Huffman code of RFC 7541 Appendix B is canonical, so this file keeps only its 257 code lengths and derives
//! the codes; decoding walks a per-length table (no allocation per string: output goes to reused buffers).

use std::collections::VecDeque;
use std::sync::OnceLock;

/// Largest dynamic table kept, whatever a peer advertises (RFC 7541's default is 4,096 bytes).
pub const MAX_TABLE_SIZE: usize = 64 * 1024;
/// The dynamic table size before any setting (RFC 9113 section 6.5.2).
pub const DEFAULT_TABLE_SIZE: usize = 4096;

/// Why a header block could not be decoded. The dynamic table may be out of step with the encoder's afterwards
/// (RFC 9113 makes this a connection error); the parser counts it and keeps decoding what it can.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HpackError {
    /// The block ended inside a representation.
    Truncated,
    /// An integer longer than 32 bits.
    IntegerOverflow,
    /// An index of zero, or past the static and dynamic tables.
    BadIndex(u64),
    /// A Huffman string with the EOS symbol, or padding longer than 7 bits or not of ones.
    Huffman,
    /// A dynamic table size update above the advertised maximum.
    SizeUpdateTooLarge(u64),
    /// A dynamic table size update after a header field (RFC 7541 section 4.2).
    SizeUpdateNotAtStart,
}

/// One decoded representation of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field<'a> {
    /// A header field: name and value.
    Header(&'a [u8], &'a [u8]),
    /// A dynamic table size update (the new size).
    SizeUpdate(u64),
}

/// The static table (RFC 7541 Appendix A), 1-based in the protocol.
static STATIC_TABLE: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Code lengths of the Huffman code of RFC 7541 Appendix B, symbols 0 to 256 (EOS). The code is canonical: codes
/// are assigned in order of (length, symbol), each the previous plus one, shifted left to its length.
static HUFFMAN_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// The canonical code by length: for each length, the first code, how many codes, and where its symbols start in
/// `symbols` (sorted by length, then symbol).
struct Huffman {
    first: [u32; 31],
    count: [u32; 31],
    offset: [u16; 31],
    symbols: [u16; 257],
}

fn huffman() -> &'static Huffman {
    static H: OnceLock<Huffman> = OnceLock::new();
    H.get_or_init(|| {
        let mut h = Huffman {
            first: [0; 31],
            count: [0; 31],
            offset: [0; 31],
            symbols: [0; 257],
        };
        let mut order: Vec<u16> = (0..257).collect();
        order.sort_by_key(|&s| (HUFFMAN_LENGTHS[usize::from(s)], s));
        let mut code: u32 = 0;
        let mut prev_len = HUFFMAN_LENGTHS[usize::from(order[0])];
        for (i, &s) in order.iter().enumerate() {
            let len = HUFFMAN_LENGTHS[usize::from(s)];
            if i > 0 {
                code = (code + 1) << (len - prev_len);
            }
            prev_len = len;
            let l = usize::from(len);
            if h.count[l] == 0 {
                h.first[l] = code;
                h.offset[l] = i as u16;
            }
            h.count[l] += 1;
            h.symbols[i] = s;
        }
        h
    })
}

/// Decodes a Huffman-coded string into `out` (appended).
fn huffman_decode(data: &[u8], out: &mut Vec<u8>) -> Result<(), HpackError> {
    let h = huffman();
    let mut code: u32 = 0;
    let mut len: usize = 0;
    for &byte in data {
        for bit in (0..8).rev() {
            code = (code << 1) | u32::from((byte >> bit) & 1);
            len += 1;
            if len > 30 {
                return Err(HpackError::Huffman);
            }
            let rel = code.wrapping_sub(h.first[len]);
            if rel < h.count[len] {
                let sym = h.symbols[usize::from(h.offset[len]) + rel as usize];
                if sym == 256 {
                    return Err(HpackError::Huffman);
                }
                out.push(sym as u8);
                code = 0;
                len = 0;
            }
        }
    }
    // Padding: at most 7 bits, all ones (the most significant bits of EOS).
    if len > 7 || code != (1u32 << len) - 1 {
        return Err(HpackError::Huffman);
    }
    Ok(())
}

/// Reads an integer with an `n`-bit prefix (RFC 7541 section 5.1) at `*pos`, advancing it.
fn integer(block: &[u8], pos: &mut usize, n: u32) -> Result<u64, HpackError> {
    let first = *block.get(*pos).ok_or(HpackError::Truncated)?;
    *pos += 1;
    let max = (1u64 << n) - 1;
    let mut v = u64::from(first) & max;
    if v < max {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let b = *block.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        v += u64::from(b & 0x7f) << shift;
        if v > u64::from(u32::MAX) {
            return Err(HpackError::IntegerOverflow);
        }
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 28 {
            return Err(HpackError::IntegerOverflow);
        }
    }
}

/// Reads a string literal (RFC 7541 section 5.2) at `*pos` into `out` (cleared first).
fn string(block: &[u8], pos: &mut usize, out: &mut Vec<u8>) -> Result<(), HpackError> {
    let huff = block.get(*pos).ok_or(HpackError::Truncated)? & 0x80 != 0;
    let len = integer(block, pos, 7)? as usize;
    let end = pos.checked_add(len).filter(|&e| e <= block.len());
    let data = &block[*pos..end.ok_or(HpackError::Truncated)?];
    *pos += len;
    out.clear();
    if huff {
        huffman_decode(data, out)
    } else {
        out.extend_from_slice(data);
        Ok(())
    }
}

/// Entry overhead counted in the table size (RFC 7541 section 4.1).
const ENTRY_OVERHEAD: usize = 32;

/// A dynamic table entry: name and value.
type Entry = (Box<[u8]>, Box<[u8]>);

/// An HPACK decoder: the dynamic table of one direction of a connection.
#[derive(Debug)]
pub struct Decoder {
    /// Newest first.
    table: VecDeque<Entry>,
    /// Bytes the table holds (RFC 7541 section 4.1).
    size: usize,
    /// The size the encoder last chose (a size update), at most `limit`.
    max_size: usize,
    /// The size the decoding side advertised (`SETTINGS_HEADER_TABLE_SIZE`), capped at [`MAX_TABLE_SIZE`].
    limit: usize,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    /// A decoder with the default table size (4,096 bytes).
    pub fn new() -> Self {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: DEFAULT_TABLE_SIZE,
            limit: DEFAULT_TABLE_SIZE,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// The decoding side advertised `SETTINGS_HEADER_TABLE_SIZE` = `size` (capped at [`MAX_TABLE_SIZE`]): the
    /// largest size an update may choose. A smaller limit shrinks the table at once.
    pub fn set_limit(&mut self, size: u64) {
        self.limit = usize::try_from(size)
            .unwrap_or(usize::MAX)
            .min(MAX_TABLE_SIZE);
        if self.max_size > self.limit {
            self.max_size = self.limit;
            self.evict();
        }
    }

    #[cfg(test)]
    pub(crate) fn limit_for_tests(&self) -> usize {
        self.limit
    }

    /// Bytes the dynamic table holds.
    pub fn table_size(&self) -> usize {
        self.size
    }

    fn evict(&mut self) {
        while self.size > self.max_size {
            match self.table.pop_back() {
                Some((n, v)) => self.size -= n.len() + v.len() + ENTRY_OVERHEAD,
                None => {
                    self.size = 0;
                    break;
                }
            }
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let need = name.len() + value.len() + ENTRY_OVERHEAD;
        if need > self.max_size {
            // Section 4.4: an entry larger than the table empties it and is not added.
            self.table.clear();
            self.size = 0;
            return;
        }
        self.size += need;
        self.table.push_front((name.into(), value.into()));
        self.evict();
    }

    fn entry(&self, index: u64) -> Result<(&[u8], &[u8]), HpackError> {
        let i = usize::try_from(index).map_err(|_| HpackError::BadIndex(index))?;
        match i {
            0 => Err(HpackError::BadIndex(index)),
            1..=61 => Ok(STATIC_TABLE[i - 1]),
            _ => self
                .table
                .get(i - 62)
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or(HpackError::BadIndex(index)),
        }
    }

    /// Decodes one complete header block, calling `f` for each header field and size update in order. On an error
    /// the fields before it have been delivered.
    pub fn decode(&mut self, block: &[u8], f: &mut dyn FnMut(Field<'_>)) -> Result<(), HpackError> {
        let mut pos = 0;
        let mut fields = false;
        while let Some(&b) = block.get(pos) {
            if b & 0x80 != 0 {
                // Indexed header field.
                let index = integer(block, &mut pos, 7)?;
                let (n, v) = self.entry(index)?;
                f(Field::Header(n, v));
                fields = true;
            } else if b & 0xe0 == 0x20 {
                // Dynamic table size update.
                let size = integer(block, &mut pos, 5)?;
                if fields {
                    return Err(HpackError::SizeUpdateNotAtStart);
                }
                if size > self.limit as u64 {
                    return Err(HpackError::SizeUpdateTooLarge(size));
                }
                self.max_size = size as usize;
                self.evict();
                f(Field::SizeUpdate(size));
            } else {
                // Literal: with incremental indexing (01), without (0000) or never indexed (0001).
                let (prefix, index_it) = if b & 0x40 != 0 { (6, true) } else { (4, false) };
                let index = integer(block, &mut pos, prefix)?;
                let mut name = std::mem::take(&mut self.name);
                let mut value = std::mem::take(&mut self.value);
                let r = (|| {
                    if index == 0 {
                        string(block, &mut pos, &mut name)?;
                    } else {
                        name.clear();
                        name.extend_from_slice(self.entry(index)?.0);
                    }
                    string(block, &mut pos, &mut value)
                })();
                if r.is_ok() {
                    f(Field::Header(&name, &value));
                    if index_it {
                        self.insert(&name, &value);
                    }
                }
                self.name = name;
                self.value = value;
                r?;
                fields = true;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    fn decode(d: &mut Decoder, hex: &str) -> Result<Vec<(String, String)>, HpackError> {
        let mut out = Vec::new();
        d.decode(&unhex(hex), &mut |f| {
            if let Field::Header(n, v) = f {
                out.push((
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                ));
            }
        })?;
        Ok(out)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// RFC 7541 C.1: integers with a 5-bit prefix (10, 1337) and an 8-bit one (42).
    #[test]
    fn integer_examples() {
        let mut pos = 0;
        assert_eq!(integer(&[0x0a], &mut pos, 5), Ok(10));
        pos = 0;
        assert_eq!(integer(&[0x1f, 0x9a, 0x0a], &mut pos, 5), Ok(1337));
        assert_eq!(pos, 3);
        pos = 0;
        assert_eq!(integer(&[0x2a], &mut pos, 8), Ok(42));
        pos = 0;
        assert_eq!(
            integer(&[0x1f, 0x9a], &mut pos, 5),
            Err(HpackError::Truncated)
        );
        pos = 0;
        assert_eq!(
            integer(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &mut pos, 5),
            Err(HpackError::IntegerOverflow)
        );
    }

    const C3: [&str; 3] = [
        "828684410f7777772e6578616d706c652e636f6d",
        "828684be58086e6f2d6361636865",
        "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
    ];
    const C4: [&str; 3] = [
        "828684418cf1e3c2e5f23a6ba0ab90f4ff",
        "828684be5886a8eb10649cbf",
        "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
    ];

    /// RFC 7541 C.3 and C.4: three requests on one connection, without and with Huffman coding; the dynamic table
    /// carries `:authority` and `cache-control` between them.
    #[test]
    fn request_examples() {
        for blocks in [C3, C4] {
            let mut d = Decoder::new();
            assert_eq!(
                decode(&mut d, blocks[0]).unwrap(),
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":path", "/"),
                    (":authority", "www.example.com"),
                ])
            );
            assert_eq!(d.table_size(), 57);
            assert_eq!(
                decode(&mut d, blocks[1]).unwrap(),
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":path", "/"),
                    (":authority", "www.example.com"),
                    ("cache-control", "no-cache"),
                ])
            );
            assert_eq!(d.table_size(), 110);
            assert_eq!(
                decode(&mut d, blocks[2]).unwrap(),
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", "/index.html"),
                    (":authority", "www.example.com"),
                    ("custom-key", "custom-value"),
                ])
            );
            assert_eq!(d.table_size(), 164);
        }
    }

    const C5: [&str; 3] = [
        "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d",
        "4803333037c1c0bf",
        "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31",
    ];
    const C6: [&str; 3] = [
        "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
        "4883640effc1c0bf",
        "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
    ];

    /// RFC 7541 C.5 and C.6: three responses with a 256-byte table, so entries are evicted.
    #[test]
    fn response_examples_with_eviction() {
        for blocks in [C5, C6] {
            let mut d = Decoder::new();
            d.set_limit(256);
            let date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
            assert_eq!(
                decode(&mut d, blocks[0]).unwrap(),
                pairs(&[
                    (":status", "302"),
                    ("cache-control", "private"),
                    ("date", date1),
                    ("location", "https://www.example.com"),
                ])
            );
            assert_eq!(d.table_size(), 222);
            assert_eq!(
                decode(&mut d, blocks[1]).unwrap(),
                pairs(&[
                    (":status", "307"),
                    ("cache-control", "private"),
                    ("date", date1),
                    ("location", "https://www.example.com"),
                ])
            );
            assert_eq!(d.table_size(), 222);
            assert_eq!(
                decode(&mut d, blocks[2]).unwrap(),
                pairs(&[
                    (":status", "200"),
                    ("cache-control", "private"),
                    ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                    ("location", "https://www.example.com"),
                    ("content-encoding", "gzip"),
                    (
                        "set-cookie",
                        "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
                    ),
                ])
            );
            assert_eq!(d.table_size(), 215);
        }
    }

    /// Hostile blocks are errors: bad indices, strings past the end, EOS and bad padding in Huffman strings, size
    /// updates above the limit or after a field.
    #[test]
    fn hostile_blocks_are_errors() {
        let mut d = Decoder::new();
        assert_eq!(decode(&mut d, "80"), Err(HpackError::BadIndex(0)));
        assert_eq!(decode(&mut d, "be"), Err(HpackError::BadIndex(62)));
        assert_eq!(decode(&mut d, "400a6162"), Err(HpackError::Truncated));
        assert_eq!(decode(&mut d, "0085ffffffffff00"), Err(HpackError::Huffman));
        assert_eq!(decode(&mut d, "008100"), Err(HpackError::Huffman));
        assert_eq!(
            decode(&mut d, "3fe21f"),
            Err(HpackError::SizeUpdateTooLarge(4097))
        );
        assert_eq!(
            decode(&mut d, "823f00"),
            Err(HpackError::SizeUpdateNotAtStart)
        );
        let mut sizes = Vec::new();
        d.decode(&unhex("3f0182"), &mut |f| sizes.push(format!("{f:?}")))
            .unwrap();
        assert_eq!(
            sizes,
            [
                "SizeUpdate(32)",
                "Header([58, 109, 101, 116, 104, 111, 100], [71, 69, 84])"
            ]
        );
        // An entry larger than the table empties it.
        let mut d = Decoder::new();
        d.set_limit(64);
        decode(&mut d, "400161026263").unwrap();
        assert_eq!(d.table_size(), 35);
        decode(&mut d, &format!("40016140{}", "61".repeat(64))).unwrap();
        assert_eq!(d.table_size(), 0);
        // A limit above the cap is capped.
        d.set_limit(u64::MAX);
        assert_eq!(d.limit, MAX_TABLE_SIZE);
    }

    /// Arbitrary bytes never panic and never grow the table past its limit.
    #[test]
    fn arbitrary_blocks_stay_bounded() {
        use proptest::prelude::*;
        proptest!(|(blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..8))| {
            let mut d = Decoder::new();
            d.set_limit(512);
            for b in &blocks {
                let _ = d.decode(b, &mut |_| {});
                prop_assert!(d.table_size() <= 512);
            }
        });
    }
}
