//! Suricata's transforms: a sticky buffer rewritten before its keywords inspect it (`dns.query; dotprefix;
//! content:".example.com"; endswith;`). A group of a rule inspects one buffer through one chain of transforms; the
//! rule set keeps one prefilter table per (buffer, chain) and the scanner builds each transformed buffer once per
//! buffer handed over, into scratch space it reuses.

use md5::{Digest, Md5};

// `gunzip` and `zlib_deflate` decode with flate2 (pure Rust, the workspace's inflater).

/// One transform (Suricata 8 names).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transform {
    /// `dotprefix`: a `.` before the buffer (so `.example.com` matches the domain and its subdomains only).
    DotPrefix,
    /// `domain`: the registrable domain of the name in the buffer (its public suffix and one label before it:
    /// `www.bbc.co.uk` gives `bbc.co.uk`), from the public suffix list as the `psl` crate embeds it (the crate and
    /// the lookup Suricata uses); an empty buffer when the name has none (a suffix alone, an unknown name).
    Domain,
    /// `tld`: the public suffix of that registrable domain (`co.uk`); empty when the name has no registrable domain.
    Tld,
    /// `to_lowercase`: ASCII letters to lower case.
    ToLowercase,
    /// `to_uppercase`: ASCII letters to upper case.
    ToUppercase,
    /// `strip_whitespace`: every ASCII white space byte removed.
    StripWhitespace,
    /// `compress_whitespace`: each run of ASCII white space becomes one space.
    CompressWhitespace,
    /// `url_decode`: `%XX` to its byte and `+` to a space; a `%` without two hex digits stays as it is.
    UrlDecode,
    /// `to_md5`: the 16-byte MD5 digest of the buffer.
    ToMd5,
    /// `to_sha1`: the 20-byte SHA-1 digest of the buffer.
    ToSha1,
    /// `to_sha256`: the 32-byte SHA-256 digest of the buffer.
    ToSha256,
    /// `xor`: the buffer XORed with a key, repeated (see [`Xor`]).
    Xor(Xor),
    /// `from_base64`: the buffer base64-decoded (see [`FromBase64`]).
    FromBase64(FromBase64),
    /// `pcrexform:"expr"`: the buffer becomes what the expression's last participating capture group (or, without
    /// groups, the whole match) matched at the first match; without a match the buffer is left as it is.
    PcreXform(PcreXform),
    /// `header_lowercase`: header lines `name: value` with each name (up to its first `:`) in lower case, the
    /// values as they are (for `http.request_header`-style buffers written differently by HTTP/1 and HTTP/2).
    HeaderLowercase,
    /// `strip_pseudo_headers`: every line (up to and with its `\n`) that begins with `:` removed (HTTP/2's
    /// `:method`, `:path`, ... in a header buffer).
    StripPseudoHeaders,
    /// `gunzip[:max-size=N]`: the buffer gzip-decompressed (see [`Inflate`]).
    Gunzip(Inflate),
    /// `zlib_deflate[:max-size=N]`: the buffer zlib-decompressed (RFC 1950; see [`Inflate`]).
    ZlibDeflate(Inflate),
}

/// The options of `gunzip` and `zlib_deflate` (`max-size N` or `max-size=N`): at most `max_size` bytes of output
/// (Suricata's default 1024; a number, or one with a unit `kb`/`kib`, `mb`/`mib`, `gb`/`gib`, powers of 1024), at
/// most [`MAX_INFLATE`] here. A buffer that is not a stream of the format gives an empty buffer; one cut short
/// gives what it decompressed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Inflate {
    pub max_size: u32,
}

/// Most bytes `gunzip` and `zlib_deflate` write (the rule's `max-size` above it is refused): what one buffer's
/// transform may cost in memory and time, whatever the compressed input claims.
pub const MAX_INFLATE: u32 = 16 << 20;

impl Inflate {
    /// Parses the value of `gunzip` or `zlib_deflate` (`name`; none: the default size).
    pub fn parse(name: &str, value: Option<&str>) -> Result<Inflate, String> {
        let mut max = None;
        for part in value.into_iter().flat_map(|v| v.split(',')) {
            // `max-size 8` (as Suricata 8's rules write it) or `max-size=8`.
            let (k, v) = part
                .trim()
                .split_once(|c: char| c == '=' || c.is_ascii_whitespace())
                .ok_or_else(|| format!("{name}: `{}` needs a value", part.trim()))?;
            if k.trim() != "max-size" {
                return Err(format!("{name}: unknown option `{}`", k.trim()));
            }
            if max.is_some() {
                return Err(format!("{name}: max-size given twice"));
            }
            let v = v.trim();
            let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
            let unit: u64 = match v[digits..].to_ascii_lowercase().as_str() {
                "" => 1,
                "kb" | "kib" => 1 << 10,
                "mb" | "mib" => 1 << 20,
                "gb" | "gib" => 1 << 30,
                _ => return Err(format!("{name}: invalid max-size `{v}`")),
            };
            let n = v[..digits]
                .parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(unit))
                .ok_or_else(|| format!("{name}: invalid max-size `{v}`"))?;
            if n == 0 {
                return Err(format!(
                    "{name}: max-size 0 would always give an empty buffer"
                ));
            }
            if n > u64::from(MAX_INFLATE) {
                return Err(format!("{name}: max-size above {MAX_INFLATE} bytes"));
            }
            max = Some(n as u32);
        }
        Ok(Inflate {
            max_size: max.unwrap_or(1024),
        })
    }

    /// Decompresses `input` with `decoder` into `out`, at most `max_size` bytes. A stream that is not of the
    /// format gives nothing; one cut short or corrupted later keeps what it decompressed to.
    fn apply(self, mut decoder: impl std::io::Read, out: &mut Vec<u8>) {
        let max = self.max_size as usize;
        let mut chunk = [0u8; 4096];
        while out.len() < max {
            let want = (max - out.len()).min(chunk.len());
            match decoder.read(&mut chunk[..want]) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(_) => break,
            }
        }
    }
}

/// `from_base64: [bytes N][, offset N][, mode rfc4648|rfc2045|strict]`: decodes up to `bytes` characters (all when
/// 0) from `offset` on. RFC 4648 (the default) stops at the first byte outside the alphabet, RFC 2045 skips such
/// bytes, strict gives nothing when there is one; `=` ends the input in every mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FromBase64 {
    pub bytes: u32,
    pub offset: u32,
    pub mode: Base64Mode,
}

/// How `from_base64` treats bytes outside the base64 alphabet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Base64Mode {
    Rfc4648,
    Rfc2045,
    Strict,
}

impl FromBase64 {
    /// Parses the value of `from_base64` (none: the defaults).
    pub fn parse(value: Option<&str>) -> Result<FromBase64, String> {
        let mut f = FromBase64 {
            bytes: 0,
            offset: 0,
            mode: Base64Mode::Rfc4648,
        };
        let Some(v) = value else { return Ok(f) };
        let (mut seen_bytes, mut seen_offset, mut seen_mode) = (false, false, false);
        for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, val) = part
                .split_once(char::is_whitespace)
                .map(|(k, v)| (k, v.trim()))
                .ok_or_else(|| format!("from_base64: `{part}` needs a value"))?;
            let num = |what: &str| -> Result<u32, String> {
                val.parse::<u32>()
                    .ok()
                    .filter(|n| *n <= crate::rule::MAX_BASE64_INPUT)
                    .ok_or_else(|| format!("from_base64: invalid {what} `{val}`"))
            };
            let dup = match k {
                "bytes" => std::mem::replace(&mut seen_bytes, true),
                "offset" => std::mem::replace(&mut seen_offset, true),
                "mode" => std::mem::replace(&mut seen_mode, true),
                other => return Err(format!("from_base64: unknown option `{other}`")),
            };
            if dup {
                return Err(format!("from_base64: `{k}` given twice"));
            }
            match k {
                "bytes" => f.bytes = num("byte count")?,
                "offset" => f.offset = num("offset")?,
                _ => {
                    f.mode = match val {
                        "rfc4648" => Base64Mode::Rfc4648,
                        "rfc2045" => Base64Mode::Rfc2045,
                        "strict" => Base64Mode::Strict,
                        other => return Err(format!("from_base64: unknown mode `{other}`")),
                    }
                }
            }
        }
        Ok(f)
    }

    fn apply(&self, input: &[u8], out: &mut Vec<u8>) {
        let start = (self.offset as usize).min(input.len());
        let rest = &input[start..];
        let rest = match self.bytes {
            0 => rest,
            n => &rest[..rest.len().min(n as usize)],
        };
        let end = rest.iter().position(|b| *b == b'=').unwrap_or(rest.len());
        let rest = &rest[..end];
        match self.mode {
            Base64Mode::Rfc4648 => crate::base64::decode_rfc4648(rest, out),
            Base64Mode::Strict => {
                if rest.iter().all(|b| crate::base64::is_alphabet(*b)) {
                    crate::base64::decode_rfc4648(rest, out);
                }
            }
            Base64Mode::Rfc2045 => {
                let kept: Vec<u8> = rest
                    .iter()
                    .copied()
                    .filter(|b| crate::base64::is_alphabet(*b))
                    .collect();
                crate::base64::decode_rfc4648(&kept, out);
            }
        }
    }
}

/// A compiled `pcrexform` expression; equal, hashed and ordered by its text.
#[derive(Clone, Debug)]
pub struct PcreXform {
    pub source: String,
    regex: regex_automata::meta::Regex,
}

impl PartialEq for PcreXform {
    fn eq(&self, o: &Self) -> bool {
        self.source == o.source
    }
}
impl Eq for PcreXform {}
impl std::hash::Hash for PcreXform {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.source.hash(h)
    }
}
impl PartialOrd for PcreXform {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for PcreXform {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.source.cmp(&o.source)
    }
}

impl PcreXform {
    /// Parses the value of `pcrexform` (a quoted expression, as Suricata requires). `Ok(Err(reason))`: valid PCRE
    /// the linear-time engine does not express (the rule is skipped).
    pub fn parse(value: Option<&str>) -> Result<Result<PcreXform, String>, String> {
        let v = value.ok_or("pcrexform needs an expression")?.trim();
        let inner = v
            .strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .filter(|q| !q.is_empty())
            .ok_or("pcrexform: the expression must be quoted")?;
        let source = crate::pcre::unescape_rule_level(inner);
        Ok(match crate::pcre::Pcre::compile_plain(&source) {
            Ok(regex) => Ok(PcreXform { source, regex }),
            Err(crate::pcre::PcreError::Unsupported(r)) => Err(format!("pcrexform: {r}")),
            Err(crate::pcre::PcreError::Invalid(r)) => return Err(format!("pcrexform: {r}")),
        })
    }

    fn apply(&self, input: &[u8], out: &mut Vec<u8>) {
        let mut caps = self.regex.create_captures();
        self.regex.captures(input, &mut caps);
        let span = (1..caps.group_len())
            .rev()
            .find_map(|g| caps.get_group(g))
            .or_else(|| caps.get_group(0));
        match span {
            Some(s) if caps.is_match() => out.extend_from_slice(&input[s.start..s.end]),
            _ => out.extend_from_slice(input),
        }
    }
}

/// `xor:"0d0ac8ff"` (a hex key), `xor:extract 4 0` (the key is 4 bytes of the buffer at offset 0) and either with
/// `offset N,` in front (the bytes before N are left as they are). The key repeats over the buffer from `offset`
/// on; a key that does not fit in the buffer (`extract` beyond its end) leaves the buffer unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Xor {
    /// Where XORing starts.
    pub offset: u32,
    pub key: XorKey,
}

/// Where an `xor` key comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum XorKey {
    /// Written in the rule (1 to 255 bytes).
    Static(Vec<u8>),
    /// `extract NBYTES OFFSET`: taken from the buffer being transformed.
    Extract { len: u8, at: u32 },
}

impl Xor {
    /// Parses the value of `xor`; the error says what is wrong.
    pub fn parse(value: &str) -> Result<Xor, String> {
        let mut v = value.trim();
        let mut offset = 0;
        if let Some(rest) = v.strip_prefix("offset") {
            let (n, rest) = rest
                .split_once(',')
                .ok_or("xor: `offset` needs a number and then the key")?;
            offset = n
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("xor: invalid offset `{}`", n.trim()))?;
            v = rest.trim();
        }
        if let Some(rest) = v.strip_prefix("extract") {
            let mut it = rest.split_whitespace();
            let (Some(len), Some(at), None) = (it.next(), it.next(), it.next()) else {
                return Err("xor: `extract` needs a byte count and an offset".into());
            };
            let len = len
                .parse::<u8>()
                .ok()
                .filter(|l| *l > 0)
                .ok_or("xor: `extract` byte count must be 1 to 255")?;
            let at = at
                .parse::<u32>()
                .map_err(|_| format!("xor: invalid key offset `{at}`"))?;
            return Ok(Xor {
                offset,
                key: XorKey::Extract { len, at },
            });
        }
        let hex = v
            .strip_prefix('"')
            .and_then(|h| h.strip_suffix('"'))
            .ok_or("xor: the key must be a quoted hex string")?;
        if hex.is_empty() || hex.len() % 2 != 0 || hex.len() / 2 > usize::from(u8::MAX) {
            return Err(
                "xor: the key must be 1 to 255 bytes of hex (an even number of digits)".into(),
            );
        }
        let key = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or(""), 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| "xor: the key is not hex".to_string())?;
        Ok(Xor {
            offset,
            key: XorKey::Static(key),
        })
    }

    fn apply(&self, input: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(input);
        let key: &[u8] = match &self.key {
            XorKey::Static(k) => k,
            XorKey::Extract { len, at } => {
                let start = *at as usize;
                match input.get(start..start + usize::from(*len)) {
                    Some(k) => k,
                    None => return,
                }
            }
        };
        let from = (self.offset as usize).min(out.len());
        for (b, k) in out[from..].iter_mut().zip(key.iter().cycle()) {
            *b ^= k;
        }
    }
}

impl Transform {
    /// The transform called `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Transform> {
        Some(match name {
            "dotprefix" => Transform::DotPrefix,
            "domain" => Transform::Domain,
            "tld" => Transform::Tld,
            "to_lowercase" => Transform::ToLowercase,
            "to_uppercase" => Transform::ToUppercase,
            "strip_whitespace" => Transform::StripWhitespace,
            "compress_whitespace" => Transform::CompressWhitespace,
            "url_decode" => Transform::UrlDecode,
            "to_md5" => Transform::ToMd5,
            "to_sha1" => Transform::ToSha1,
            "to_sha256" => Transform::ToSha256,
            "header_lowercase" => Transform::HeaderLowercase,
            "strip_pseudo_headers" => Transform::StripPseudoHeaders,
            _ => return None,
        })
    }

    /// Writes the transform of `input` to `out` (cleared first).
    pub fn apply(&self, input: &[u8], out: &mut Vec<u8>) {
        out.clear();
        match self {
            Transform::DotPrefix => {
                out.push(b'.');
                out.extend_from_slice(input);
            }
            Transform::Domain => {
                if let Some(d) = psl::domain(input) {
                    out.extend_from_slice(d.as_bytes());
                }
            }
            Transform::Tld => {
                if let Some(d) = psl::domain(input) {
                    out.extend_from_slice(d.suffix().as_bytes());
                }
            }
            Transform::ToLowercase => out.extend(input.iter().map(u8::to_ascii_lowercase)),
            Transform::ToUppercase => out.extend(input.iter().map(u8::to_ascii_uppercase)),
            Transform::StripWhitespace => {
                out.extend(input.iter().copied().filter(|b| !is_space(*b)));
            }
            Transform::CompressWhitespace => {
                let mut prev_space = false;
                for &b in input {
                    let space = is_space(b);
                    if !(space && prev_space) {
                        out.push(if space { b' ' } else { b });
                    }
                    prev_space = space;
                }
            }
            Transform::UrlDecode => {
                let mut i = 0;
                while let Some(&b) = input.get(i) {
                    let hex = |k: usize| input.get(k).and_then(|c| (*c as char).to_digit(16));
                    match (b, hex(i + 1), hex(i + 2)) {
                        (b'%', Some(h), Some(l)) => {
                            out.push((h * 16 + l) as u8);
                            i += 3;
                        }
                        (b'+', _, _) => {
                            out.push(b' ');
                            i += 1;
                        }
                        _ => {
                            out.push(b);
                            i += 1;
                        }
                    }
                }
            }
            Transform::ToMd5 => out.extend_from_slice(&Md5::digest(input)),
            Transform::ToSha1 => out.extend_from_slice(&sha1::Sha1::digest(input)),
            Transform::ToSha256 => out.extend_from_slice(&sha2::Sha256::digest(input)),
            Transform::Xor(x) => x.apply(input, out),
            Transform::FromBase64(f) => f.apply(input, out),
            Transform::PcreXform(p) => p.apply(input, out),
            Transform::HeaderLowercase => {
                let mut in_value = false;
                for &b in input {
                    out.push(if in_value { b } else { b.to_ascii_lowercase() });
                    match b {
                        b':' => in_value = true,
                        b'\n' => in_value = false,
                        _ => {}
                    }
                }
            }
            Transform::StripPseudoHeaders => {
                for line in input.split_inclusive(|&b| b == b'\n') {
                    if line.first() != Some(&b':') {
                        out.extend_from_slice(line);
                    }
                }
            }
            Transform::Gunzip(f) => f.apply(flate2::bufread::GzDecoder::new(input), out),
            Transform::ZlibDeflate(f) => f.apply(flate2::bufread::ZlibDecoder::new(input), out),
        }
    }
}

/// Suricata's white space (C `isspace`): space, `\t \n \v \f \r`.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Applies `chain` to `input` using two scratch vectors; returns the result (in one of them, or `input` itself for
/// an empty chain).
pub(crate) fn apply_chain<'a>(
    chain: &[Transform],
    input: &'a [u8],
    a: &'a mut Vec<u8>,
    b: &'a mut Vec<u8>,
) -> &'a [u8] {
    let Some((first, rest)) = chain.split_first() else {
        return input;
    };
    first.apply(input, a);
    let (mut cur, mut next) = (a, b);
    for t in rest {
        t.apply(cur, next);
        std::mem::swap(&mut cur, &mut next);
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chain: &[Transform], input: &[u8]) -> Vec<u8> {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        apply_chain(chain, input, &mut a, &mut b).to_vec()
    }

    #[test]
    fn transforms_as_suricata_documents_them() {
        use Transform::*;
        assert_eq!(run(&[DotPrefix], b"google.com"), b".google.com");
        assert_eq!(run(&[ToLowercase], b"GeT /A"), b"get /a");
        assert_eq!(run(&[ToUppercase], b"GeT /a"), b"GET /A");
        assert_eq!(run(&[StripWhitespace], b" a b\t\r\nc "), b"abc");
        assert_eq!(run(&[CompressWhitespace], b"a  \t b\r\n\r\nc"), b"a b c");
        assert_eq!(run(&[UrlDecode], b"a%20b+c%2"), b"a b c%2");
        let hex = |v: Vec<u8>| v.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(
            hex(run(&[ToSha1], b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex(run(&[ToSha256], b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            run(&[ToMd5], b""),
            [
                0xd4, 0x1d, 0x8c, 0xd9, 0x8f, 0x00, 0xb2, 0x04, 0xe9, 0x80, 0x09, 0x98, 0xec, 0xf8,
                0x42, 0x7e
            ]
        );
        assert_eq!(run(&[ToLowercase, DotPrefix, ToUppercase], b"Ab"), b".AB");
        assert_eq!(run(&[], b"x"), b"x");
        assert_eq!(Transform::from_name("dotprefix"), Some(DotPrefix));
        // `domain` and `tld`: the registrable domain and its public suffix, from the public suffix list.
        assert_eq!(run(&[Domain], b"www.bbc.co.uk"), b"bbc.co.uk");
        assert_eq!(run(&[Tld], b"www.bbc.co.uk"), b"co.uk");
        assert_eq!(run(&[Domain], b"suricata.io"), b"suricata.io");
        assert_eq!(run(&[Tld], b"a.b.suricata.io"), b"io");
        // A suffix alone has no registrable domain: both are empty.
        assert_eq!(run(&[Domain], b"co.uk"), b"");
        assert_eq!(run(&[Tld], b"co.uk"), b"");
        assert_eq!(run(&[Domain], b""), b"");
        assert_eq!(Transform::from_name("domain"), Some(Domain));
        assert_eq!(Transform::from_name("tld"), Some(Tld));
        assert_eq!(Transform::from_name("nope"), None);
    }

    /// `header_lowercase` lowers the names only, up to each line's first `:`; `strip_pseudo_headers` drops the
    /// lines that begin with `:` (the last one without its line end too), as Suricata's own tests of them show.
    #[test]
    fn header_transforms() {
        use Transform::*;
        assert_eq!(
            run(&[HeaderLowercase], b"Header1: Value1\nHEADER2:Va:LUE2\nX"),
            b"header1: Value1\nheader2:Va:LUE2\nx"
        );
        assert_eq!(
            run(
                &[StripPseudoHeaders],
                b"Header1: V1\n:method:get\nheader2:V2\n:scheme:https"
            ),
            b"Header1: V1\nheader2:V2\n"
        );
        assert_eq!(run(&[StripPseudoHeaders], b":method:get\nh:v"), b"h:v");
        assert_eq!(run(&[StripPseudoHeaders], b":method:get"), b"");
        assert_eq!(
            Transform::from_name("header_lowercase"),
            Some(HeaderLowercase)
        );
        assert_eq!(
            Transform::from_name("strip_pseudo_headers"),
            Some(StripPseudoHeaders)
        );
    }

    /// `gunzip` and `zlib_deflate` on streams flate2 wrote: the whole text within `max-size`, its first `max-size`
    /// bytes beyond it, an empty buffer for input of another format, and what a stream cut short decompressed to.
    /// A small bomb (1 MiB of zeros) stops at the cap. The options parse as Suricata's do.
    #[test]
    fn decompressing_transforms() {
        use flate2::Compression;
        use std::io::Write;
        let text = b"The quick brown fox jumps over the lazy dog. ".repeat(40);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        let mut zl = flate2::write::ZlibEncoder::new(Vec::new(), Compression::default());
        zl.write_all(&text).unwrap();
        let zl = zl.finish().unwrap();
        let big = Inflate { max_size: 1 << 20 };
        let small = Inflate { max_size: 100 };
        assert_eq!(run(&[Transform::Gunzip(big)], &gz), text);
        assert_eq!(run(&[Transform::ZlibDeflate(big)], &zl), text);
        assert_eq!(run(&[Transform::Gunzip(small)], &gz), &text[..100]);
        assert_eq!(run(&[Transform::ZlibDeflate(small)], &zl), &text[..100]);
        assert_eq!(run(&[Transform::Gunzip(big)], &zl), b"");
        assert_eq!(run(&[Transform::ZlibDeflate(big)], &gz), b"");
        assert_eq!(run(&[Transform::Gunzip(big)], b"plain text"), b"");
        let cut = run(&[Transform::Gunzip(big)], &gz[..gz.len() / 2]);
        assert!(!cut.is_empty() && text.starts_with(&cut), "{}", cut.len());
        let mut bomb = flate2::write::GzEncoder::new(Vec::new(), Compression::best());
        bomb.write_all(&vec![0u8; 1 << 20]).unwrap();
        let bomb = bomb.finish().unwrap();
        assert_eq!(
            run(
                &[Transform::Gunzip(Inflate::parse("gunzip", None).unwrap())],
                &bomb
            )
            .len(),
            1024
        );
        assert_eq!(
            Inflate::parse("gunzip", Some("max-size=1MiB")),
            Ok(Inflate { max_size: 1 << 20 })
        );
        assert_eq!(
            Inflate::parse("gunzip", Some(" max-size=2kb ")),
            Ok(Inflate { max_size: 2048 })
        );
        assert_eq!(
            Inflate::parse("zlib_deflate", Some(" max-size 8")),
            Ok(Inflate { max_size: 8 })
        );
        for bad in [
            "keywithoutvalue",
            "unknown=1",
            "max-size=0",
            "max-size=1,max-size=1",
            "max-size=toto",
            "max-size=1gb",
        ] {
            assert!(Inflate::parse("gunzip", Some(bad)).is_err(), "{bad}");
        }
    }

    /// `from_base64` with the options of suricata-verify's `from_base64-01` on its URI, and the three modes on
    /// input with a byte outside the alphabet.
    #[test]
    fn from_base64_options_and_modes() {
        let f = |v: &str| Transform::FromBase64(FromBase64::parse(Some(v)).unwrap());
        let uri = b"/?arg=dGhpc2lzYXRlc3QK";
        assert_eq!(run(&[f("offset 6")], uri), b"thisisatest\n");
        assert_eq!(run(&[f("offset 10")], uri), b"sisatest\n");
        assert_eq!(run(&[f("bytes 6, offset 6")], uri), b"this");
        assert_eq!(run(&[f("offset 6, mode rfc2045")], uri), b"thisisatest\n");
        assert_eq!(run(&[f("offset 6, mode strict")], uri), b"thisisatest\n");
        let none = Transform::FromBase64(FromBase64::parse(None).unwrap());
        assert_eq!(run(std::slice::from_ref(&none), b"dGVzdA=="), b"test");
        assert_eq!(run(&[none], b"Zm9v YmFy"), b"foo");
        assert_eq!(run(&[f("mode rfc2045")], b"Zm9v\r\nYmFy"), b"foobar");
        assert_eq!(run(&[f("mode strict")], b"Zm9v YmFy"), b"");
        assert_eq!(run(&[f("offset 100")], b"Zm9v"), b"");
        for bad in [
            "offset",
            "offset x",
            "mode base32",
            "bytes 1, bytes 2",
            "size 3",
        ] {
            assert!(FromBase64::parse(Some(bad)).is_err(), "{bad}");
        }
    }

    /// `pcrexform` keeps the last capture group that took part in the first match; no match leaves the buffer.
    #[test]
    fn pcrexform_takes_the_capture() {
        let p = |v: &str| Transform::PcreXform(PcreXform::parse(Some(v)).unwrap().unwrap());
        let line = b"GET /z4d4kWk.jpg HTTP/1.1";
        assert_eq!(
            run(&[p(r#""[a-zA-Z]+\s+(.*)\s+HTTP""#)], line),
            b"/z4d4kWk.jpg"
        );
        assert_eq!(run(&[p(r#""(GET)|(POST)""#)], line), b"GET");
        assert_eq!(run(&[p(r#""z4d4""#)], line), b"z4d4");
        assert_eq!(run(&[p(r#""(nothing)""#)], line), line);
        assert!(PcreXform::parse(None).is_err());
        assert!(PcreXform::parse(Some("[a-z]+")).is_err());
        assert!(
            PcreXform::parse(Some(r#""(a""#)).unwrap().is_err()
                || PcreXform::parse(Some(r#""(a""#)).is_err()
        );
    }

    /// The three forms of `xor`, on bytes laid out as suricata-verify's `detect-xor-key` captures lay them out: a
    /// key at the start of the body, the plaintext XORed with it after.
    #[test]
    fn xor_with_written_and_extracted_keys() {
        let x = |v: &str| Transform::Xor(Xor::parse(v).unwrap());
        let body: Vec<u8> = std::iter::once(0x42)
            .chain(b"password".iter().map(|b| b ^ 0x42))
            .collect();
        assert_eq!(&run(&[x("offset 1,extract 1 0")], &body)[1..], b"password");
        assert_eq!(
            &run(&[x("offset   1,  extract 1 0")], &body)[1..],
            b"password"
        );
        assert_eq!(&run(&[x("\"42\"")], &body)[1..], b"password");
        assert_eq!(run(&[x("\"42\"")], &body)[0], 0);
        assert_eq!(
            &run(&[x("offset 1,\"42\"")], &body)[..],
            &[&[0x42][..], b"password"].concat()[..]
        );
        // A key of several bytes repeats; one past the buffer leaves it as it is.
        let key = [0x0d, 0x0a, 0xc8, 0xff];
        let enc: Vec<u8> = b"password=supersecret"
            .iter()
            .zip(key.iter().cycle())
            .map(|(b, k)| b ^ k)
            .collect();
        let body4 = [&key[..], &enc].concat();
        assert_eq!(
            &run(&[x("offset 4,extract 4 0")], &body4)[4..],
            b"password=supersecret"
        );
        assert_eq!(
            &run(&[x("\"0d0ac8ff\"")], &enc)[..],
            b"password=supersecret"
        );
        assert_eq!(run(&[x("extract 1 200")], &body), body);
        // The key is read before the bytes it sits in are changed.
        let inplace: Vec<u8> = std::iter::once(0x42)
            .chain(b"infected".iter().map(|b| b ^ 0x42))
            .collect();
        let out = run(&[x("\"00\""), x("extract 1 0")], &inplace);
        assert_eq!(&out[1..], b"infected");
        for bad in [
            "extract 0 0",
            "extract 1",
            "offset abc,\"42\"",
            "offset 1",
            "offset ,\"42\"",
            "\"\"",
            "\"4\"",
            "\"zz\"",
            "42",
        ] {
            assert!(Xor::parse(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        /// `domain` and `tld` on any bytes: no panic, the domain is a tail of the name, the suffix a tail of the
        /// domain (as the public suffix list cuts names at label boundaries).
        #[test]
        fn domain_and_tld_are_tails_of_any_name(name in proptest::collection::vec(
            proptest::prop_oneof![proptest::strategy::Just(b'.'), proptest::num::u8::ANY, b'a'..=b'z'], 0..40)
        ) {
            let d = run(&[Transform::Domain], &name);
            let t = run(&[Transform::Tld], &name);
            proptest::prop_assert!(name.ends_with(&d));
            proptest::prop_assert!(d.ends_with(&t));
            proptest::prop_assert_eq!(d.is_empty(), t.is_empty());
        }
    }
}
