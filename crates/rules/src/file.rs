//! The file keywords that are conditions rather than content: `filesize`, `filemd5`, `filesha1`, `filesha256`, read
//! from a file's *meta* buffer ([`crate::Buffer::FileMeta`]), which the engine builds with [`meta`] for each file a
//! parser hands over (any carrier: HTTP, SMTP, FTP data, SMB, ...). `file.name`, `file.magic` and their legacy
//! forms (`filename`, `fileext`, `filemagic`) are contents on the [`crate::Buffer::FileName`] and
//! [`crate::Buffer::FileMagic`] buffers.
//!
//! Semantics as Suricata 8's: `filesize` compares the size of a file that ended normally (`CLOSED`); of a file
//! that was cut (a gap, the flow ended first) only `>` and `>=` are answered, on the bytes seen. A hash list
//! matches a `CLOSED` file whose hash is in the list (`!`: not in it); a file without that hash (cut, or hashing
//! was impossible) matches neither way.

use std::collections::HashSet;
use std::sync::Arc;

/// Length of the meta buffer: flags, size, MD5, SHA-1, SHA-256.
pub const META_LEN: usize = 1 + 8 + 16 + 20 + 32;

const COMPLETE: u8 = 1;
const HAS_MD5: u8 = 2;
const HAS_SHA1: u8 = 4;
const HAS_SHA256: u8 = 8;

/// The meta buffer of a file: whether it ended normally, its size, and the digests computed over all of it.
pub fn meta(
    complete: bool,
    size: u64,
    md5: Option<&[u8; 16]>,
    sha1: Option<&[u8; 20]>,
    sha256: Option<&[u8; 32]>,
) -> [u8; META_LEN] {
    let mut m = [0u8; META_LEN];
    let mut flags = 0;
    if complete {
        flags |= COMPLETE;
    }
    m[1..9].copy_from_slice(&size.to_le_bytes());
    if let Some(d) = md5 {
        flags |= HAS_MD5;
        m[9..25].copy_from_slice(d);
    }
    if let Some(d) = sha1 {
        flags |= HAS_SHA1;
        m[25..45].copy_from_slice(d);
    }
    if let Some(d) = sha256 {
        flags |= HAS_SHA256;
        m[45..77].copy_from_slice(d);
    }
    m[0] = flags;
    m
}

/// A hash algorithm of the hash-list keywords.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashAlgo {
    Md5,
    Sha1,
    Sha256,
}

impl HashAlgo {
    /// The keyword that tests it.
    pub fn keyword(self) -> &'static str {
        match self {
            HashAlgo::Md5 => "filemd5",
            HashAlgo::Sha1 => "filesha1",
            HashAlgo::Sha256 => "filesha256",
        }
    }

    /// Digest length in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            HashAlgo::Md5 => 16,
            HashAlgo::Sha1 => 20,
            HashAlgo::Sha256 => 32,
        }
    }

    fn flag_and_range(self) -> (u8, std::ops::Range<usize>) {
        match self {
            HashAlgo::Md5 => (HAS_MD5, 9..25),
            HashAlgo::Sha1 => (HAS_SHA1, 25..45),
            HashAlgo::Sha256 => (HAS_SHA256, 45..77),
        }
    }
}

/// A comparison of `filesize` (Suricata's unsigned integer syntax, with `KB`/`MB`/`GB` units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeTest {
    Eq(u64),
    Ne(u64),
    Lt(u64),
    Le(u64),
    Gt(u64),
    Ge(u64),
    /// Strictly between the two.
    Range(u64, u64),
}

impl SizeTest {
    /// Parses `N`, `<N`, `<=N`, `>N`, `>=N`, `!N`, `=N`, `N<>M`, `N-M`.
    pub fn parse(v: &str) -> Result<SizeTest, String> {
        let v = v.trim();
        let num = |s: &str| -> Result<u64, String> {
            let s = s.trim();
            let lower = s.to_ascii_lowercase();
            let (digits, mul) = [("kb", 1u64 << 10), ("mb", 1 << 20), ("gb", 1 << 30)]
                .iter()
                .find_map(|(u, m)| lower.strip_suffix(u).map(|d| (d.trim().to_string(), *m)))
                .unwrap_or((lower.clone(), 1));
            digits
                .parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(mul))
                .ok_or_else(|| format!("invalid number `{s}`"))
        };
        if let Some((a, b)) = v.split_once("<>").or_else(|| {
            // `N-M`: a range, unless the text is a single (negative, hence invalid) number.
            v.split_once('-').filter(|(a, _)| !a.trim().is_empty())
        }) {
            let (a, b) = (num(a)?, num(b)?);
            if a >= b {
                return Err(format!(
                    "range `{v}`: the first value must be below the second"
                ));
            }
            return Ok(SizeTest::Range(a, b));
        }
        for (op, f) in [
            ("<=", SizeTest::Le as fn(u64) -> SizeTest),
            (">=", SizeTest::Ge),
            ("<", SizeTest::Lt),
            (">", SizeTest::Gt),
            ("!", SizeTest::Ne),
            ("=", SizeTest::Eq),
        ] {
            if let Some(rest) = v.strip_prefix(op) {
                return Ok(f(num(rest)?));
            }
        }
        Ok(SizeTest::Eq(num(v)?))
    }

    fn test(self, n: u64) -> bool {
        match self {
            SizeTest::Eq(x) => n == x,
            SizeTest::Ne(x) => n != x,
            SizeTest::Lt(x) => n < x,
            SizeTest::Le(x) => n <= x,
            SizeTest::Gt(x) => n > x,
            SizeTest::Ge(x) => n >= x,
            SizeTest::Range(a, b) => a < n && n < b,
        }
    }
}

/// A hash list loaded from a file (`filemd5:list.txt`).
#[derive(Debug)]
pub struct HashList {
    pub algo: HashAlgo,
    /// Where it was read from, for messages.
    pub path: String,
    set: HashSet<Box<[u8]>>,
}

/// Largest hash list file read (a list of 10 million SHA-256 hashes is 650 MB; Suricata's own tables are bounded
/// by memory too).
pub const MAX_LIST_BYTES: u64 = 1 << 30;

impl HashList {
    /// Reads a list as Suricata does: on each line, the run of hex digits it starts with (a line starting with
    /// anything else is ignored, as is anything after the run); a run of the wrong length is an error naming the
    /// file and line.
    pub fn parse(algo: HashAlgo, path: &str, text: &str) -> Result<HashList, String> {
        let want = algo.digest_len() * 2;
        let mut set = HashSet::new();
        for (i, line) in text.lines().enumerate() {
            let run = line.bytes().take_while(u8::is_ascii_hexdigit).count();
            if run == 0 {
                continue;
            }
            if run != want {
                return Err(format!(
                    "{path}:{}: {} hash has {run} hex digits, expected {want}",
                    i + 1,
                    algo.keyword()
                ));
            }
            let hex = &line.as_bytes()[..run];
            let bytes: Box<[u8]> = hex
                .chunks(2)
                .map(|p| (nibble(p[0]) << 4) | nibble(p[1]))
                .collect();
            set.insert(bytes);
        }
        Ok(HashList {
            algo,
            path: path.to_string(),
            set,
        })
    }

    /// Loads the list at `path`.
    pub fn load(algo: HashAlgo, path: &std::path::Path) -> Result<HashList, String> {
        let shown = path.display().to_string();
        let text = crate::text::read_text_file(path, MAX_LIST_BYTES, crate::text::MAX_LINE_BYTES)
            .map_err(|e| format!("{}: cannot read hash list: {e}", algo.keyword()))?;
        HashList::parse(algo, &shown, &String::from_utf8_lossy(&text))
    }

    /// Hashes in the list.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    fn contains(&self, digest: &[u8]) -> bool {
        self.set.contains(digest)
    }
}

fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

/// A condition on a file's meta buffer.
#[derive(Clone, Debug)]
pub enum FileCond {
    /// `filesize`.
    Size(SizeTest),
    /// `filemd5` / `filesha1` / `filesha256`, `!` negates.
    Hash { list: Arc<HashList>, negated: bool },
}

impl FileCond {
    /// Whether the file whose meta buffer is `m` ([`meta`]) satisfies the condition.
    pub fn matches(&self, m: &[u8]) -> bool {
        let Some(&flags) = m.first() else {
            return false;
        };
        let complete = flags & COMPLETE != 0;
        match self {
            FileCond::Size(t) => {
                let Some(size) = m.get(1..9).and_then(|b| <[u8; 8]>::try_from(b).ok()) else {
                    return false;
                };
                let size = u64::from_le_bytes(size);
                if complete {
                    t.test(size)
                } else {
                    // A cut file: only "bigger than" is known from the bytes seen.
                    matches!(t, SizeTest::Gt(_) | SizeTest::Ge(_)) && t.test(size)
                }
            }
            FileCond::Hash { list, negated } => {
                let (flag, range) = list.algo.flag_and_range();
                if !complete || flags & flag == 0 {
                    return false;
                }
                m.get(range).is_some_and(|d| list.contains(d) != *negated)
            }
        }
    }

    /// The hash the condition needs computed, if any.
    pub fn hash(&self) -> Option<HashAlgo> {
        match self {
            FileCond::Hash { list, .. } => Some(list.algo),
            FileCond::Size(_) => None,
        }
    }
}

/// What the engine must compute for each file so that the rules' file keywords can be answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileNeeds {
    pub md5: bool,
    pub sha1: bool,
    pub sha256: bool,
    /// Some rule inspects `file.magic`.
    pub magic: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_tests_parse_as_suricata_writes_them() {
        assert_eq!(SizeTest::parse("100"), Ok(SizeTest::Eq(100)));
        assert_eq!(SizeTest::parse(" < 70 "), Ok(SizeTest::Lt(70)));
        assert_eq!(SizeTest::parse(">=1KB"), Ok(SizeTest::Ge(1024)));
        assert_eq!(SizeTest::parse("5<>10"), Ok(SizeTest::Range(5, 10)));
        assert_eq!(SizeTest::parse("5-10"), Ok(SizeTest::Range(5, 10)));
        assert_eq!(SizeTest::parse("!3"), Ok(SizeTest::Ne(3)));
        assert_eq!(SizeTest::parse(">2mb"), Ok(SizeTest::Gt(2 << 20)));
        for bad in [
            "",
            "x",
            "10<>5",
            ">",
            "-5",
            "99999999999999999999",
            "20000000000gb",
        ] {
            assert!(SizeTest::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn size_of_a_cut_file_answers_only_greater_than() {
        let closed = meta(true, 68, None, None, None);
        let cut = meta(false, 68, None, None, None);
        let t = |v: &str, m: &[u8]| FileCond::Size(SizeTest::parse(v).unwrap()).matches(m);
        assert!(t("<70", &closed) && t(">50", &closed) && t("68", &closed));
        assert!(!t("<70", &cut) && t(">50", &cut) && !t("68", &cut) && t(">=68", &cut));
        assert!(!t(">68", &closed) && !t("60<>68", &closed));
    }

    #[test]
    fn hash_lists_read_runs_of_hex_and_name_bad_lines() {
        let text = "# comment\n090FE607A5BE1228362614CCAA088577  eicar.com\n\n68b329da9893e34099c7d8ad5cb9c940\n";
        let l = HashList::parse(HashAlgo::Md5, "list.txt", text).unwrap();
        assert_eq!(l.len(), 2);
        let md5: [u8; 16] = [
            0x09, 0x0f, 0xe6, 0x07, 0xa5, 0xbe, 0x12, 0x28, 0x36, 0x26, 0x14, 0xcc, 0xaa, 0x08,
            0x85, 0x77,
        ];
        let list = Arc::new(l);
        let yes = FileCond::Hash {
            list: list.clone(),
            negated: false,
        };
        let no = FileCond::Hash {
            list,
            negated: true,
        };
        let closed = meta(true, 68, Some(&md5), None, None);
        assert!(yes.matches(&closed) && !no.matches(&closed));
        let other = meta(true, 68, Some(&[1; 16]), None, None);
        assert!(!yes.matches(&other) && no.matches(&other));
        // No hash (a cut file, or none computed): neither way.
        let cut = meta(false, 68, Some(&md5), None, None);
        let unhashed = meta(true, 68, None, None, None);
        for m in [cut, unhashed] {
            assert!(!yes.matches(&m) && !no.matches(&m));
        }
        let e = HashList::parse(HashAlgo::Sha256, "l.txt", "abc\n").unwrap_err();
        assert_eq!(e, "l.txt:1: filesha256 hash has 3 hex digits, expected 64");
    }
}
