//! `dataset` and `datarep`: large sets of values (with an optional reputation each) matched against a sticky
//! buffer, as Suricata 8 defines them.
//!
//! ```text
//! dataset:<set|unset|isset|isnotset>,<name>[,type <string|md5|sha256|ipv4|ipv6|ip>][,load <file>][,save <file>]
//!         [,state <file>][,memcap <size>][,hashsize <size>]
//! datarep:<name>,<\>|<|==>,<0-65535>[,type ...][,load <file>][,memcap <size>][,hashsize <size>]
//! ```
//!
//! The keyword compares the whole buffer it follows (after its transforms: `to_md5` for an `md5` set, `to_sha256` for
//! a `sha256` one) with the set, as Suricata's `DetectDatasetBufferMatch` does:
//! * `isset` matches when the value is in the set, `isnotset` when it is not (a value of the wrong length for the
//!   set's type, e.g. a 3-byte value for `md5`, is "not in the set");
//! * `set` adds the value and matches only when it was *not* there before (so a rule with `dataset:set` alerts on
//!   the first sighting of each value); `unset` removes it and matches only when it was there;
//! * an empty buffer never matches;
//! * `datarep` matches when the value is in the set and its reputation compares as asked.
//!
//! Sets are named and global: the first rule (or the configuration's `datasets:` section, [`SetDef`]) that names a
//! set defines its type, files and limits; later rules may name it alone (`dataset:isset,ua-seen`) or repeat the
//! same definition. Types: `string` (any bytes), `md5` (16 bytes), `sha256` (32), `ipv4` (4), `ip`/`ipv6` (16; an
//! IPv4 value is kept as its 4 bytes followed by 12 zero bytes, as Suricata stores it, so `::ffff:1.2.3.4` in a
//! file and `1.2.3.4` from `ip.src` meet).
//!
//! ## Files
//! One value a line: `string` values base64-encoded (RFC 4648, strict: a byte outside the alphabet or misplaced
//! padding is an error, as Suricata's "bad base64 encoding"), `md5`/`sha256` as hex, addresses as text. A
//! reputation follows a comma (`Z29vZ2xlLmNvbQ==,255`); one file either gives every line a reputation or none
//! ("cannot mix dataset and datarep values", which refuses the file). Empty lines are skipped. A line that cannot be
//! read (malformed, a bad reputation, longer than [`MAX_LINE`] bytes, past the memcap) is skipped and reported
//! naming the file and the line ([`LoadError`], [`Datasets::skipped_lines`]), the set holding the other lines, as
//! Suricata logs such a line and starts; with [`Policy::init_errors_fatal`] (Suricata's `--init-errors-fatal`) it
//! fails the set's load instead. A hostile file cannot exhaust memory or be read forever: lines are capped at
//! [`MAX_LINE`] bytes, the set at its memcap, and the bytes skipped at [`MAX_SKIPPED_BYTES`]. `load` files are read relative to the rule file's directory; `save` and `state` files (a `state`
//! file is loaded when it exists and saved at the end) are written under the data directory, and, as Suricata
//! refuses them from rules unless `datasets.rules.allow-absolute-filenames` is on, an absolute path or one with a
//! `..` component is an error; `datasets.rules.allow-write: false` refuses rules with `save` or `state`
//! ([`Policy`]). Saved files list the values sorted by their bytes (Suricata writes them in its hash table's
//! order, which is not part of the format).
//!
//! ## Memory and order
//! Each set is bounded by its memcap ([`DEFAULT_MEMCAP`] unless configured): a value costs its length plus
//! [`ENTRY_OVERHEAD`] bytes. Loading past the memcap stops that file's load there, reported naming the line; a `set` past it at run time does
//! not store the value, does not match, and is counted ([`SetStats::memcap_full`]). The table is a SipHash map with
//! random keys, so crafted values cannot pile into one bucket (Suricata's DJB2 table can be driven quadratic by
//! colliding strings, see suricata-verify's `dataset-hash-collisions`).
//!
//! A set no rule writes (`set`/`unset`) never changes, so its lookups run inside the workers against the shared,
//! loaded table ([`Table`]). A set some rule writes is state that crosses flows: as `xbits` and thresholds, its
//! operations are applied where alerts meet in input order (the engine's alert filter, with [`Datasets`]), so a
//! parallel run equals the serial one. The worker then matches such a rule as if its dataset operations held and
//! records the buffer value each one saw ([`capture`], [`take_captured`]); the filter runs the operations in rule
//! order on those values and drops the alert when one fails, keeping the changes made before it (as Suricata's
//! keyword, evaluated inline, would have).

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Longest set name (Suricata keeps 63 bytes).
pub const MAX_NAME: usize = 63;
/// Longest line read from a data file.
pub const MAX_LINE: usize = 64 << 10;
/// Memcap of a set that does not configure one.
pub const DEFAULT_MEMCAP: u64 = 64 << 20;
/// Bytes counted per stored value beside the value itself (the map's slot and the boxed value's header).
pub const ENTRY_OVERHEAD: u64 = 48;
/// Largest `hashsize` one set may ask for (Suricata's `datasets.limits.single-hashsize` default).
pub const MAX_HASHSIZE: u32 = 65536;
/// Most sets in one load.
pub const MAX_SETS: usize = 1024;
/// Most bytes of one data file's lines that may be skipped (malformed, too long) before the file is refused as a
/// whole: a file or a device of nothing but bad lines is not read forever.
pub const MAX_SKIPPED_BYTES: u64 = 64 << 20;
/// Skipped lines of one data file kept with their reasons ([`FileLoad::skipped`]); the rest are counted.
pub const MAX_SKIPPED_REPORTED: usize = 20;

/// What one data file gave its set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileLoad {
    /// Lines read as values (a value already in the set counts again).
    pub loaded: usize,
    /// The first [`MAX_SKIPPED_REPORTED`] lines not loaded, each with its file, line and reason.
    pub skipped: Vec<LoadError>,
    /// Every line not loaded.
    pub skipped_total: usize,
}

/// Reads `reader` on past the end of the current line (its `\n` included), at most `limit` bytes; the bytes read.
fn skip_line(reader: &mut impl BufRead, limit: u64) -> std::io::Result<u64> {
    let mut n = 0u64;
    loop {
        let avail = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(n);
        }
        let (used, done) = match memchr::memchr(b'\n', avail) {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        reader.consume(used);
        n = n.saturating_add(used as u64);
        if done || n > limit {
            return Ok(n);
        }
    }
}

/// The type of a set's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetType {
    String,
    Md5,
    Sha256,
    Ipv4,
    /// `ip` or `ipv6`: 16 bytes; IPv4 values as 4 bytes and 12 zero bytes.
    Ip,
}

impl SetType {
    pub fn parse(s: &str) -> Option<SetType> {
        Some(match s {
            "string" => SetType::String,
            "md5" => SetType::Md5,
            "sha256" => SetType::Sha256,
            "ipv4" => SetType::Ipv4,
            "ip" | "ipv6" => SetType::Ip,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SetType::String => "string",
            SetType::Md5 => "md5",
            SetType::Sha256 => "sha256",
            SetType::Ipv4 => "ipv4",
            SetType::Ip => "ip",
        }
    }

    /// The stored form of a value the buffer holds, or `None` when it cannot be in a set of this type.
    fn key<'a>(self, data: &'a [u8], scratch: &'a mut [u8; 16]) -> Option<&'a [u8]> {
        match self {
            SetType::String => (!data.is_empty()).then_some(data),
            SetType::Md5 => (data.len() == 16).then_some(data),
            SetType::Sha256 => (data.len() == 32).then_some(data),
            SetType::Ipv4 => (data.len() == 4).then_some(data),
            SetType::Ip => match data.len() {
                16 => Some(data),
                4 => {
                    *scratch = [0; 16];
                    scratch[..4].copy_from_slice(data);
                    Some(&scratch[..])
                }
                _ => None,
            },
        }
    }
}

/// A `datarep` comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RepOp {
    Gt,
    Lt,
    Eq,
}

/// What one `dataset` or `datarep` keyword does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetOp {
    Set,
    Unset,
    IsSet,
    IsNotSet,
    Rep(RepOp, u16),
}

impl SetOp {
    /// Whether the operation changes the set.
    pub fn writes(self) -> bool {
        matches!(self, SetOp::Set | SetOp::Unset)
    }
}

/// How a set is defined: by a rule's options or the configuration's `datasets:` section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetDef {
    pub kind: Option<SetType>,
    /// File read at load (resolved).
    pub load: Option<PathBuf>,
    /// File written at the end (resolved).
    pub save: Option<PathBuf>,
    pub memcap: Option<u64>,
    pub hashsize: Option<u32>,
}

/// What the configuration allows rules to do with files, and where they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// `datasets.rules.allow-write` (default on): rules may name `save` and `state` files.
    pub allow_write: bool,
    /// `datasets.rules.allow-absolute-filenames` (default off): rules may name absolute paths and `..` for `save`
    /// and `state`.
    pub allow_absolute: bool,
    /// Where `save` and `state` files go (Suricata's data directory, `--data-dir`).
    pub data_dir: PathBuf,
    /// `datasets.defaults.memcap` and `.hashsize`.
    pub default_memcap: u64,
    pub default_hashsize: Option<u32>,
    /// Suricata's `--init-errors-fatal` (`engine.init-failure-fatal`; suricata-verify runs with it, and a strict
    /// rule load, [`crate::LoadOptions::strict`], sets it): a data file line that is not loaded fails the set's
    /// load, and with it the rule naming the set. Off (the default), the line is skipped and reported
    /// ([`Datasets::skipped_lines`]) and the set holds the other lines.
    pub init_errors_fatal: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allow_write: true,
            allow_absolute: false,
            data_dir: PathBuf::from("."),
            default_memcap: DEFAULT_MEMCAP,
            default_hashsize: None,
            init_errors_fatal: false,
        }
    }
}

/// A data file that could not be read: the file, the line (0: the file as a whole) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
        }
    }
}

/// Counters of one set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetStats {
    /// Values added by `set` at run time.
    pub added: u64,
    /// Values removed by `unset`.
    pub removed: u64,
    /// Values a `set` could not store because the memcap was reached.
    pub memcap_full: u64,
}

/// The values of one set, bounded by its memcap.
#[derive(Clone, Debug)]
pub struct Table {
    pub name: String,
    pub kind: SetType,
    values: HashMap<Box<[u8]>, u16>,
    /// Whether the values carry reputations (a `datarep` file).
    pub has_rep: bool,
    memcap: u64,
    used: u64,
    pub stats: SetStats,
}

fn cost(v: &[u8]) -> u64 {
    v.len() as u64 + ENTRY_OVERHEAD
}

impl Table {
    pub fn new(name: &str, kind: SetType, memcap: u64, hashsize: Option<u32>) -> Table {
        let cap = hashsize.unwrap_or(0).min(MAX_HASHSIZE) as usize;
        Table {
            name: name.to_string(),
            kind,
            values: HashMap::with_capacity(cap),
            has_rep: false,
            memcap,
            used: 0,
            stats: SetStats::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Bytes counted against the memcap.
    pub fn memory(&self) -> u64 {
        self.used
    }

    /// Whether `data` (as the buffer holds it) is in the set, and its reputation.
    pub fn lookup(&self, data: &[u8]) -> Option<u16> {
        let mut scratch = [0u8; 16];
        let k = self.kind.key(data, &mut scratch)?;
        self.values.get(k).copied()
    }

    /// Adds a stored-form value: `Ok(true)` when new, `Ok(false)` when it was there, `Err(())` when the memcap is
    /// reached.
    fn insert(&mut self, k: &[u8], rep: u16) -> Result<bool, ()> {
        if let Some(r) = self.values.get_mut(k) {
            *r = rep;
            return Ok(false);
        }
        let c = cost(k);
        if self.used.saturating_add(c) > self.memcap {
            return Err(());
        }
        self.used += c;
        self.values.insert(k.into(), rep);
        Ok(true)
    }

    /// Runs `op` on `data` as the keyword does: whether the keyword matches. `set` and `unset` change the set.
    pub fn apply(&mut self, op: SetOp, data: &[u8]) -> bool {
        let mut scratch = [0u8; 16];
        let Some(k) = self.kind.key(data, &mut scratch) else {
            return matches!(op, SetOp::IsNotSet) && !data.is_empty();
        };
        match op {
            SetOp::Set => match self.insert(k, 0) {
                Ok(new) => {
                    if new {
                        self.stats.added += 1;
                    }
                    new
                }
                Err(()) => {
                    self.stats.memcap_full += 1;
                    false
                }
            },
            SetOp::Unset => match self.values.remove(k) {
                Some(_) => {
                    self.used = self.used.saturating_sub(cost(k));
                    self.stats.removed += 1;
                    true
                }
                None => false,
            },
            _ => self.check(op, data),
        }
    }

    /// Whether a read-only operation (`isset`, `isnotset`, `datarep`) matches `data`.
    pub fn check(&self, op: SetOp, data: &[u8]) -> bool {
        if data.is_empty() {
            return false;
        }
        let found = self.lookup(data);
        match op {
            SetOp::IsSet => found.is_some(),
            SetOp::IsNotSet => found.is_none(),
            SetOp::Rep(cmp, v) => found.is_some_and(|r| match cmp {
                RepOp::Gt => r > v,
                RepOp::Lt => r < v,
                RepOp::Eq => r == v,
            }),
            // Writes need `apply`; read-only callers never see them.
            SetOp::Set | SetOp::Unset => false,
        }
    }

    /// Reads a data file into the set (see the module documentation for the format).
    pub fn load(&mut self, path: &Path) -> Result<FileLoad, LoadError> {
        let file = std::fs::File::open(path).map_err(|e| LoadError {
            path: path.to_path_buf(),
            line: 0,
            message: format!("cannot open: {e}"),
        })?;
        self.load_from(std::io::BufReader::new(file), path)
    }

    /// Reads data lines from `reader`, naming `path` in errors. A line that cannot be read as a value of the set
    /// (malformed, a bad reputation, longer than [`MAX_LINE`]) is skipped and reported in [`FileLoad::skipped`],
    /// the rest of the file read on, as Suricata logs a bad line of a data file and reads on (unless started with
    /// `--init-errors-fatal`: [`Policy::init_errors_fatal`]). Reaching the memcap stops the reading there with one
    /// such report. An `Err` is the file as a whole: it cannot be read, it mixes lines with and without a
    /// reputation (Suricata 8 refuses such a file), or more than [`MAX_SKIPPED_BYTES`] of it were skipped (a file,
    /// or a device, of nothing but bad lines).
    pub fn load_from(
        &mut self,
        mut reader: impl BufRead,
        path: &Path,
    ) -> Result<FileLoad, LoadError> {
        let at = |line: usize, message: String| LoadError {
            path: path.to_path_buf(),
            line,
            message,
        };
        let mut out = FileLoad::default();
        // The reason is written out only for the lines kept with one.
        let skip = |out: &mut FileLoad, line: usize, message: &dyn Fn() -> String| {
            out.skipped_total += 1;
            if out.skipped.len() < MAX_SKIPPED_REPORTED {
                out.skipped.push(at(line, message()));
            }
        };
        let mut buf = Vec::new();
        let mut skipped_bytes = 0u64;
        let mut with_rep: Option<bool> = if self.values.is_empty() {
            None
        } else {
            Some(self.has_rep)
        };
        let mut line_no = 0usize;
        loop {
            buf.clear();
            let read = std::io::Read::take(reader.by_ref(), MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| at(line_no + 1, format!("read error: {e}")))?;
            if read == 0 {
                break;
            }
            line_no += 1;
            // A line longer than the cap: read on to its end without keeping it.
            let long = if buf.len() > MAX_LINE {
                let rest = skip_line(&mut reader, MAX_SKIPPED_BYTES.saturating_sub(skipped_bytes))
                    .map_err(|e| at(line_no, format!("read error: {e}")))?;
                Some((buf.len() as u64).saturating_add(rest))
            } else {
                None
            };
            let mut bad = |out: &mut FileLoad, len: u64, message: &dyn Fn() -> String| {
                skipped_bytes = skipped_bytes.saturating_add(len);
                if skipped_bytes > MAX_SKIPPED_BYTES {
                    return Err(at(
                        line_no,
                        format!(
                            "more than {MAX_SKIPPED_BYTES} bytes of lines not loaded, read no further"
                        ),
                    ));
                }
                skip(out, line_no, message);
                Ok(())
            };
            if let Some(len) = long {
                bad(&mut out, len, &|| {
                    format!("line longer than {MAX_LINE} bytes, not read")
                })?;
                continue;
            }
            while buf.last().is_some_and(|&c| c == b'\n' || c == b'\r') {
                buf.pop();
            }
            if buf.is_empty() {
                continue;
            }
            // The line's bytes as read, its end of line included.
            let len = read as u64;
            let (value, rep) = match buf.iter().position(|&c| c == b',') {
                Some(i) => {
                    let r = std::str::from_utf8(&buf[i + 1..])
                        .ok()
                        .and_then(|s| s.trim().parse::<u16>().ok());
                    let Some(r) = r else {
                        bad(&mut out, len, &|| {
                            format!("invalid datarep value {} (expected 0-65535)", self.name)
                        })?;
                        continue;
                    };
                    (&buf[..i], Some(r))
                }
                None => (&buf[..], None),
            };
            // As Suricata 8, a file that mixes the two forms is refused whole, not read on.
            match with_rep {
                None => {}
                Some(w) if w != rep.is_some() => {
                    return Err(at(
                        line_no,
                        format!(
                            "cannot mix dataset and datarep values for set {}",
                            self.name
                        ),
                    ));
                }
                Some(_) => {}
            }
            let stored = match parse_value(self.kind, value) {
                Ok(v) => v,
                Err(m) => {
                    bad(&mut out, len, &|| format!("{m} {}", self.name))?;
                    continue;
                }
            };
            match self.insert(&stored, rep.unwrap_or(0)) {
                Ok(_) => {
                    out.loaded += 1;
                    with_rep = Some(rep.is_some());
                }
                Err(()) => {
                    skip(&mut out, line_no, &|| {
                        format!(
                            "memcap of set {} ({} bytes) reached, the rest of the file not loaded",
                            self.name, self.memcap
                        )
                    });
                    break;
                }
            }
        }
        self.has_rep = with_rep.unwrap_or(self.has_rep);
        Ok(out)
    }

    /// Writes the set in the file format, one value a line, sorted by the stored bytes.
    pub fn write_to(&self, mut w: impl Write) -> std::io::Result<()> {
        let mut keys: Vec<(&Box<[u8]>, &u16)> = self.values.iter().collect();
        keys.sort();
        for (k, rep) in keys {
            let text = format_value(self.kind, k);
            if self.has_rep {
                writeln!(w, "{text},{rep}")?;
            } else {
                writeln!(w, "{text}")?;
            }
        }
        Ok(())
    }

    /// Writes the set to `path` (through a temporary file beside it, renamed over it).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        {
            let f = std::fs::File::create(&tmp)?;
            let mut w = std::io::BufWriter::new(f);
            self.write_to(&mut w)?;
            w.flush()?;
        }
        std::fs::rename(&tmp, path)
    }
}

/// The stored form of one value of a data file.
fn parse_value(kind: SetType, text: &[u8]) -> Result<Vec<u8>, &'static str> {
    match kind {
        SetType::String => decode_base64_strict(text).ok_or("bad base64 encoding"),
        SetType::Md5 => hex(text, 16).ok_or("bad md5 hash for set"),
        SetType::Sha256 => hex(text, 32).ok_or("bad sha256 hash for set"),
        SetType::Ipv4 => std::str::from_utf8(text)
            .ok()
            .and_then(|s| s.trim().parse::<Ipv4Addr>().ok())
            .map(|a| a.octets().to_vec())
            .ok_or("bad ipv4 address for set"),
        SetType::Ip => {
            let a: IpAddr = std::str::from_utf8(text)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .ok_or("bad ip address for set")?;
            Ok(ip_key(a).to_vec())
        }
    }
}

/// The 16-byte stored form of an address in an `ip` set.
pub fn ip_key(a: IpAddr) -> [u8; 16] {
    let v4 = match a {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    };
    match v4 {
        Some(v4) => {
            let mut k = [0u8; 16];
            k[..4].copy_from_slice(&v4.octets());
            k
        }
        None => match a {
            IpAddr::V6(v6) => v6.octets(),
            IpAddr::V4(_) => [0; 16],
        },
    }
}

fn format_value(kind: SetType, v: &[u8]) -> String {
    match kind {
        SetType::String => encode_base64(v),
        SetType::Md5 | SetType::Sha256 => v.iter().map(|b| format!("{b:02x}")).collect(),
        SetType::Ipv4 => match <[u8; 4]>::try_from(v) {
            Ok(o) => Ipv4Addr::from(o).to_string(),
            Err(_) => String::new(),
        },
        SetType::Ip => match <[u8; 16]>::try_from(v) {
            // Suricata writes every group as four hex digits.
            Ok(o) => Ipv6Addr::from(o)
                .segments()
                .iter()
                .map(|s| format!("{s:04x}"))
                .collect::<Vec<_>>()
                .join(":"),
            Err(_) => String::new(),
        },
    }
}

fn hex(text: &[u8], n: usize) -> Option<Vec<u8>> {
    if text.len() != 2 * n {
        return None;
    }
    text.chunks(2)
        .map(|p| {
            let d = |c: u8| (c as char).to_digit(16);
            Some((d(p[0])? * 16 + d(p[1])?) as u8)
        })
        .collect()
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn encode_base64(v: &[u8]) -> String {
    let mut s = String::with_capacity(v.len().div_ceil(3) * 4);
    for c in v.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= c.len() {
                s.push(B64[((n >> shift) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// Strict RFC 4648 base64: every byte in the alphabet, padding only at the end and only to complete a group; a
/// missing final padding is accepted.
pub fn decode_base64_strict(text: &[u8]) -> Option<Vec<u8>> {
    let body_len = text.len() - text.iter().rev().take_while(|&&c| c == b'=').count();
    let (body, pad) = text.split_at(body_len);
    if pad.len() > 2
        || body.len() % 4 == 1
        || (!pad.is_empty() && (body.len() + pad.len()) % 4 != 0)
    {
        return None;
    }
    if !body.iter().all(|&c| crate::base64::is_alphabet(c)) {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    crate::base64::decode_rfc4648(body, &mut out);
    Some(out)
}

/// One `dataset` or `datarep` keyword as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeywordSpec {
    pub op: SetOp,
    pub name: String,
    pub kind: Option<SetType>,
    pub load: Option<String>,
    pub save: Option<String>,
    /// `state`: load and save the same file.
    pub state: bool,
    pub memcap: Option<u64>,
    pub hashsize: Option<u32>,
}

/// Why a keyword value was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecError {
    /// Malformed (the rule is an error).
    Invalid(String),
    /// Valid in Suricata 8 but outside what is supported (the rule is skipped under this reason).
    Unsupported(String),
}

fn short(s: &str) -> String {
    s.chars().take(40).collect()
}

/// A size as Suricata writes them: a number with an optional `kb`, `mb` or `gb` (powers of 1024).
pub fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim();
    let lower = v.to_ascii_lowercase();
    let (num, mul) = [("kb", 1u64 << 10), ("mb", 1 << 20), ("gb", 1 << 30)]
        .iter()
        .find_map(|(s, m)| lower.strip_suffix(s).map(|n| (n.trim().to_string(), *m)))
        .unwrap_or((lower.clone(), 1));
    num.parse::<u64>().ok()?.checked_mul(mul)
}

/// Splits a keyword value into `(key, value)` options as Suricata does: comma-separated, each split at its first
/// space.
fn options(value: &str) -> Vec<(&str, &str)> {
    value
        .split(',')
        .map(|t| t.trim_start_matches([' ', '\t']))
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once(' ') {
            Some((k, v)) => (k, v.trim()),
            None => (t, ""),
        })
        .collect()
}

fn check_name(name: &str) -> Result<String, SpecError> {
    let name = name.trim_end_matches([' ', '\t']);
    if name.is_empty() || name.len() > MAX_NAME || name.contains(char::is_whitespace) {
        return Err(SpecError::Invalid(format!(
            "invalid set name `{}`",
            short(name)
        )));
    }
    Ok(name.to_string())
}

impl KeywordSpec {
    /// Parses the value of `dataset`.
    pub fn parse_dataset(value: &str) -> Result<KeywordSpec, SpecError> {
        let bad = |m: String| SpecError::Invalid(format!("dataset: {m}"));
        let opts = options(value);
        let mut it = opts.into_iter();
        let (cmd, v) = it.next().ok_or_else(|| bad("needs a command".into()))?;
        if !v.is_empty() {
            return Err(bad(format!("unexpected `{}`", short(v))));
        }
        let op = match cmd {
            "set" => SetOp::Set,
            "unset" => SetOp::Unset,
            "isset" => SetOp::IsSet,
            "isnotset" => SetOp::IsNotSet,
            other => return Err(bad(format!("action `{}` is not supported", short(other)))),
        };
        let (name, v) = it.next().ok_or_else(|| bad("needs a set name".into()))?;
        if !v.is_empty() {
            return Err(bad(format!(
                "spaces not allowed in set names: `{}`",
                short(name)
            )));
        }
        let mut spec = KeywordSpec {
            op,
            name: check_name(name).map_err(|e| match e {
                SpecError::Invalid(m) => bad(m),
                other => other,
            })?,
            kind: None,
            load: None,
            save: None,
            state: false,
            memcap: None,
            hashsize: None,
        };
        spec.options(it, "dataset", true)?;
        Ok(spec)
    }

    /// Parses the value of `datarep`.
    pub fn parse_datarep(value: &str) -> Result<KeywordSpec, SpecError> {
        let bad = |m: String| SpecError::Invalid(format!("datarep: {m}"));
        let opts = options(value);
        let mut it = opts.into_iter();
        let (name, v) = it.next().ok_or_else(|| bad("needs a set name".into()))?;
        if !v.is_empty() {
            return Err(bad(format!(
                "spaces not allowed in set names: `{}`",
                short(name)
            )));
        }
        let name = check_name(name).map_err(|e| match e {
            SpecError::Invalid(m) => bad(m),
            other => other,
        })?;
        let (cmd, v) = it.next().ok_or_else(|| bad("needs an operator".into()))?;
        if !v.is_empty() {
            return Err(bad(format!("unexpected `{}`", short(v))));
        }
        let cmp = match cmd {
            ">" => RepOp::Gt,
            "<" => RepOp::Lt,
            "==" => RepOp::Eq,
            other => {
                return Err(bad(format!(
                    "operation `{}` is not supported",
                    short(other)
                )));
            }
        };
        let (val, v) = it.next().ok_or_else(|| bad("needs a value".into()))?;
        if !v.is_empty() {
            return Err(bad(format!("unexpected `{}`", short(v))));
        }
        let rep: u16 = val
            .parse()
            .map_err(|_| bad(format!("invalid reputation `{}` (0-65535)", short(val))))?;
        let mut spec = KeywordSpec {
            op: SetOp::Rep(cmp, rep),
            name,
            kind: None,
            load: None,
            save: None,
            state: false,
            memcap: None,
            hashsize: None,
        };
        spec.options(it, "datarep", false)?;
        if spec.load.is_some() && spec.kind.is_none() {
            return Err(bad("`load` needs `type`".into()));
        }
        Ok(spec)
    }

    fn options<'a>(
        &mut self,
        it: impl Iterator<Item = (&'a str, &'a str)>,
        kw: &str,
        writable: bool,
    ) -> Result<(), SpecError> {
        let bad = |m: String| SpecError::Invalid(format!("{kw}: {m}"));
        let (mut load, mut save) = (false, false);
        for (k, v) in it {
            if v.is_empty() {
                return Err(bad(format!("`{}` needs a value", short(k))));
            }
            match k {
                "type" => {
                    self.kind = Some(
                        SetType::parse(v).ok_or_else(|| bad(format!("bad type `{}`", short(v))))?,
                    );
                }
                "load" if !load && !self.state => {
                    self.load = Some(v.to_string());
                    load = true;
                }
                "save" if writable && !save && !self.state => {
                    self.save = Some(v.to_string());
                    save = true;
                }
                "state" if writable && !load && !save && !self.state => {
                    self.load = Some(v.to_string());
                    self.save = Some(v.to_string());
                    self.state = true;
                }
                "load" | "save" | "state" if writable || k == "load" => {
                    return Err(bad(format!(
                        "`{k}` given twice, or `state` mixed with `load`/`save`"
                    )));
                }
                "memcap" => {
                    self.memcap = Some(
                        parse_size(v)
                            .ok_or_else(|| bad(format!("invalid memcap `{}`", short(v))))?,
                    );
                }
                "hashsize" => {
                    let h = parse_size(v)
                        .and_then(|h| u32::try_from(h).ok())
                        .ok_or_else(|| bad(format!("invalid hashsize `{}`", short(v))))?;
                    if h > MAX_HASHSIZE {
                        return Err(bad(format!(
                            "hashsize {h} above the limit of {MAX_HASHSIZE} for one set"
                        )));
                    }
                    self.hashsize = Some(h);
                }
                "format" | "context_key" | "value_key" | "array_key" | "enrichment_key"
                | "remove_key" | "match" => {
                    return Err(SpecError::Unsupported(format!("{kw} option {k}")));
                }
                other => return Err(bad(format!("unknown option `{}`", short(other)))),
            }
        }
        Ok(())
    }
}

/// Whether `p` has a `..` component.
fn has_traversal(p: &Path) -> bool {
    p.components().any(|c| matches!(c, Component::ParentDir))
}

/// The registry of one load: every set, its definition and its loaded values.
#[derive(Clone, Debug, Default)]
pub struct Datasets {
    pub policy: Policy,
    sets: Vec<(SetDef, Table)>,
    by_name: HashMap<String, u32>,
    /// Per set: whether some rule writes it (`set`, `unset`).
    written: Vec<bool>,
    /// The data files' lines not loaded: the first [`MAX_SKIPPED_REPORTED`] of all files, and their count.
    skipped: Vec<LoadError>,
    lines_skipped: usize,
}

impl Datasets {
    pub fn new(policy: Policy) -> Datasets {
        Datasets {
            policy,
            ..Datasets::default()
        }
    }

    /// The data files' lines that were not loaded (the first [`MAX_SKIPPED_REPORTED`], each naming its file and
    /// line), and how many there were in all: the load reports them as warnings and goes on.
    pub fn skipped_lines(&self) -> (&[LoadError], usize) {
        (&self.skipped, self.lines_skipped)
    }

    /// Number of sets.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Set `id`'s values.
    pub fn table(&self, id: u32) -> Option<&Table> {
        self.sets.get(id as usize).map(|s| &s.1)
    }

    /// Set `id`'s definition.
    pub fn def(&self, id: u32) -> Option<&SetDef> {
        self.sets.get(id as usize).map(|s| &s.0)
    }

    /// The id of the set named `name`.
    pub fn id(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// Whether some rule writes set `id`.
    pub fn written(&self, id: u32) -> bool {
        self.written.get(id as usize).copied().unwrap_or(false)
    }

    /// Marks set `id` as written by a rule.
    pub fn mark_written(&mut self, id: u32) {
        if let Some(w) = self.written.get_mut(id as usize) {
            *w = true;
        }
    }

    /// Defines a set from the configuration (paths are taken as given, relative ones under the data directory)
    /// and loads its file.
    pub fn define(&mut self, name: &str, def: SetDef) -> Result<u32, String> {
        let name = check_name(name).map_err(|e| match e {
            SpecError::Invalid(m) | SpecError::Unsupported(m) => m,
        })?;
        if self.by_name.contains_key(&name) {
            return Err(format!("set {name} defined twice"));
        }
        let kind = def
            .kind
            .ok_or_else(|| format!("set {name}: `type` needed"))?;
        let under = |p: &PathBuf| {
            if p.is_absolute() {
                p.clone()
            } else {
                self.policy.data_dir.join(p)
            }
        };
        let def = SetDef {
            load: def.load.as_ref().map(under),
            save: def.save.as_ref().map(under),
            ..def
        };
        self.insert(&name, kind, def)
    }

    fn insert(&mut self, name: &str, kind: SetType, def: SetDef) -> Result<u32, String> {
        if self.sets.len() >= MAX_SETS {
            return Err(format!("more than {MAX_SETS} sets"));
        }
        let memcap = def.memcap.unwrap_or(self.policy.default_memcap);
        let mut table = Table::new(
            name,
            kind,
            memcap,
            def.hashsize.or(self.policy.default_hashsize),
        );
        if let Some(load) = &def.load {
            // A state file (load and save the same file) need not exist yet.
            let optional = def.save.as_ref() == Some(load);
            if !optional || load.exists() {
                let read = table.load(load).map_err(|e| e.to_string())?;
                if self.policy.init_errors_fatal
                    && let Some(e) = read.skipped.first()
                {
                    return Err(e.to_string());
                }
                self.lines_skipped += read.skipped_total;
                for e in read.skipped {
                    if self.skipped.len() < MAX_SKIPPED_REPORTED {
                        self.skipped.push(e);
                    }
                }
            }
        }
        let id = self.sets.len() as u32;
        self.sets.push((def, table));
        self.written.push(false);
        self.by_name.insert(name.to_string(), id);
        Ok(id)
    }

    /// The set a rule's keyword names, defined by it when new: its id. `rule_dir` is the directory of the rule's
    /// file (`load` paths are relative to it). Errors are one line.
    pub fn resolve(&mut self, spec: &KeywordSpec, rule_dir: Option<&Path>) -> Result<u32, String> {
        let save = match &spec.save {
            None => None,
            Some(s) => Some(self.save_path(s)?),
        };
        let load = match (&spec.load, spec.state) {
            (Some(_), true) => save.clone(),
            (Some(l), false) => {
                let p = PathBuf::from(l);
                Some(if p.is_absolute() {
                    p
                } else {
                    match rule_dir {
                        Some(d) if d.join(&p).exists() || !p.exists() => d.join(&p),
                        _ => p,
                    }
                })
            }
            (None, _) => None,
        };
        if let Some(&id) = self.by_name.get(&spec.name) {
            let (def, table) = &self.sets[id as usize];
            if let Some(k) = spec.kind
                && k != table.kind
            {
                return Err(format!(
                    "set {} already defined with type {}, not {}",
                    spec.name,
                    table.kind.as_str(),
                    k.as_str()
                ));
            }
            if (load.is_some() && load != def.load) || (save.is_some() && save != def.save) {
                return Err(format!(
                    "set {} already defined with other load/save files",
                    spec.name
                ));
            }
            return Ok(id);
        }
        let kind = spec.kind.ok_or_else(|| {
            format!(
                "set {} is not defined and the rule gives no type",
                spec.name
            )
        })?;
        let def = SetDef {
            kind: Some(kind),
            load,
            save,
            memcap: spec.memcap,
            hashsize: spec.hashsize,
        };
        self.insert(&spec.name, kind, def)
    }

    /// Where a rule's `save` or `state` file goes, under the policy.
    fn save_path(&self, s: &str) -> Result<PathBuf, String> {
        if !self.policy.allow_write {
            return Err("rules containing save/state datasets have been disabled".into());
        }
        let p = PathBuf::from(s);
        if !self.policy.allow_absolute {
            if p.is_absolute() {
                return Err(format!("absolute paths not allowed: {s}"));
            }
            if has_traversal(&p) {
                return Err(format!("directory traversals not allowed: {s}"));
            }
        }
        Ok(if p.is_absolute() {
            p
        } else {
            self.policy.data_dir.join(p)
        })
    }

    /// A copy of every set's values for run time (what the alert filter changes).
    pub fn tables(&self) -> Vec<Table> {
        self.sets.iter().map(|s| s.1.clone()).collect()
    }

    /// Each set with a `save` (or `state`) file: `(set id, path)`.
    pub fn saves(&self) -> Vec<(u32, PathBuf)> {
        self.sets
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.0.save.clone().map(|p| (i as u32, p)))
            .collect()
    }
}

/// One dataset operation of a rule, as its group holds it.
#[derive(Clone, Debug)]
pub struct DatasetItem {
    pub set: u32,
    pub op: SetOp,
    /// Numbers the operation within the rule set (the key of its captured value).
    pub op_id: u32,
    /// The set's values when no rule writes it: the operation runs in the worker. `None`: it runs where alerts
    /// meet in input order, on the captured value.
    pub inline: Option<Arc<Table>>,
    /// The set's type (filled with `inline`).
    pub kind: SetType,
}

impl DatasetItem {
    /// Whether a deferred operation can still match `data`: what the set holds decides later, but a value that can
    /// never be a member (empty, or of the wrong length for the type) already decides `set`, `unset`, `isset` and
    /// `datarep` (no match) and `isnotset` (a match unless empty), as [`Table::apply`] would.
    pub(crate) fn may_match(&self, data: &[u8]) -> bool {
        let mut scratch = [0u8; 16];
        match self.kind.key(data, &mut scratch) {
            Some(_) => true,
            None => self.op == SetOp::IsNotSet && !data.is_empty(),
        }
    }
}

/// After a load: marks the sets some loaded rule writes, and gives the operations on the other sets their table,
/// so that they run in the workers.
pub(crate) fn settle(rules: &mut [crate::Rule], sets: &mut Datasets) {
    for r in rules.iter() {
        for d in r.datasets() {
            if d.op.writes() {
                sets.mark_written(d.set);
            }
        }
    }
    let kinds: Vec<SetType> = (0..sets.len() as u32)
        .map(|id| sets.table(id).map_or(SetType::String, |t| t.kind))
        .collect();
    let shared: Vec<Option<Arc<Table>>> = (0..sets.len() as u32)
        .map(|id| {
            (!sets.written(id))
                .then(|| sets.table(id).map(|t| Arc::new(t.clone())))
                .flatten()
        })
        .collect();
    for r in rules.iter_mut() {
        let addr = r.packet_groups.iter_mut().map(|(g, _)| g);
        for g in r.groups.iter_mut().chain(addr) {
            for it in g.items.iter_mut() {
                if let crate::rule::Item::Dataset(d) = it {
                    d.inline = shared.get(d.set as usize).cloned().flatten();
                    d.kind = kinds
                        .get(d.set as usize)
                        .copied()
                        .unwrap_or(SetType::String);
                }
            }
        }
    }
}

/// The buffer values of one alert's deferred dataset operations: `(op id, value)`.
pub type Captured = Box<[(u32, Box<[u8]>)]>;

thread_local! {
    /// The value each deferred operation last saw on this thread, by op id.
    static CAPTURED: RefCell<HashMap<u32, Vec<u8>>> = RefCell::new(HashMap::new());
}

/// Records `data` as the value deferred operation `op_id` saw (called by the verifier).
pub(crate) fn capture(op_id: u32, data: &[u8]) {
    CAPTURED.with(|c| {
        let mut c = c.borrow_mut();
        let v = c.entry(op_id).or_default();
        v.clear();
        v.extend_from_slice(data);
    });
}

/// The values the deferred dataset operations of `rule` saw when it matched on this thread, taken (call from the
/// alert callback, before anything else is verified); `None` for a rule without deferred operations.
pub fn take_captured(rule: &crate::Rule) -> Option<Captured> {
    let ids: Vec<u32> = rule.deferred_datasets().map(|d| d.op_id).collect();
    if ids.is_empty() {
        return None;
    }
    CAPTURED.with(|c| {
        let mut c = c.borrow_mut();
        Some(
            ids.into_iter()
                .filter_map(|id| c.remove(&id).map(|v| (id, v.into_boxed_slice())))
                .collect(),
        )
    })
}

/// The run-time state of the sets that rules write, applied in input order (see the module documentation).
#[derive(Debug, Default)]
pub struct DatasetState {
    tables: Vec<Table>,
    saves: Vec<(u32, PathBuf)>,
    /// Alerts whose operation found no captured value (counted, and the operation fails).
    pub uncaptured: u64,
}

impl DatasetState {
    pub fn new(sets: &Datasets) -> DatasetState {
        DatasetState {
            tables: sets.tables(),
            saves: sets.saves(),
            uncaptured: 0,
        }
    }

    /// Whether nothing is kept (no set).
    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// Runs the deferred operations `ops` in order on the values in `captured`: whether all match. The changes
    /// made before a failing one stay.
    pub fn apply(&mut self, ops: &[(u32, u32, SetOp)], captured: Option<&Captured>) -> bool {
        for &(op_id, set, op) in ops {
            let value = captured.and_then(|c| c.iter().find(|(id, _)| *id == op_id));
            let Some((_, value)) = value else {
                self.uncaptured += 1;
                return false;
            };
            let Some(t) = self.tables.get_mut(set as usize) else {
                return false;
            };
            if !t.apply(op, value) {
                return false;
            }
        }
        true
    }

    /// Counters of every set, by name.
    pub fn stats(&self) -> Vec<(&str, SetStats)> {
        self.tables
            .iter()
            .map(|t| (t.name.as_str(), t.stats))
            .collect()
    }

    /// Writes every set with a `save` or `state` file; the first error, if any, after trying all.
    pub fn save(&self) -> Result<(), String> {
        let mut first = None;
        for (id, path) in &self.saves {
            if let Some(t) = self.tables.get(*id as usize)
                && let Err(e) = t.save(path)
                && first.is_none()
            {
                first = Some(format!(
                    "dataset {}: cannot write {}: {e}",
                    t.name,
                    path.display()
                ));
            }
        }
        first.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: &str) -> KeywordSpec {
        KeywordSpec::parse_dataset(v).unwrap()
    }

    #[test]
    fn parses_dataset_as_suricata() {
        let s = spec("set,ua-seen,type string,save datasets.csv");
        assert_eq!(s.op, SetOp::Set);
        assert_eq!(s.name, "ua-seen");
        assert_eq!(s.kind, Some(SetType::String));
        assert_eq!(s.save.as_deref(), Some("datasets.csv"));
        // Blanks around the command and the name, as suricata-verify's datasets-bug-5109 writes them.
        let s = spec("set  ,ua-seen,type string,save datasets.csv");
        assert_eq!((s.op, s.name.as_str()), (SetOp::Set, "ua-seen"));
        let s = spec(" isnotset, dns-seen.md5, type md5, state dns-seen.md5");
        assert_eq!(s.op, SetOp::IsNotSet);
        assert!(s.state);
        assert_eq!(s.load, s.save);
        let s = spec("isset,ua-seen,type string,load d.csv,memcap 10mb,hashsize 1024");
        assert_eq!(s.memcap, Some(10 << 20));
        assert_eq!(s.hashsize, Some(1024));
        assert_eq!(spec("isset,ip-list,type ip").kind, Some(SetType::Ip));
        assert_eq!(spec("unset,a").op, SetOp::Unset);
        for bad in [
            "",
            "add,a",
            "set",
            "set,a b",
            "set,a,type blob",
            "set,a,load",
            "set,a,load x,load y",
            "set,a,state x,save y",
            "set,a,save x,state x",
            "set,a,memcap lots",
            "set,a,hashsize 100000",
            "set,a,color red",
            &format!("set,{}", "n".repeat(MAX_NAME + 1)),
        ] {
            assert!(
                matches!(KeywordSpec::parse_dataset(bad), Err(SpecError::Invalid(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            KeywordSpec::parse_dataset("isset,d,type string,load d.json,format json"),
            Err(SpecError::Unsupported("dataset option format".into()))
        );
    }

    #[test]
    fn parses_datarep_as_suricata() {
        let s = KeywordSpec::parse_datarep("dns_md5, >, 200, load dns_md5.rep, type md5").unwrap();
        assert_eq!(s.op, SetOp::Rep(RepOp::Gt, 200));
        assert_eq!(s.kind, Some(SetType::Md5));
        assert_eq!(s.load.as_deref(), Some("dns_md5.rep"));
        assert_eq!(
            KeywordSpec::parse_datarep("x,==,3").unwrap().op,
            SetOp::Rep(RepOp::Eq, 3)
        );
        assert_eq!(
            KeywordSpec::parse_datarep("x,<,0").unwrap().op,
            SetOp::Rep(RepOp::Lt, 0)
        );
        for bad in [
            "x",
            "x,>",
            "x,>=,1",
            "x,>,65536",
            "x,>,-1",
            "x,>,1,load f",
            "x,>,1,save f,type string",
            "x,>,1,state f,type string",
        ] {
            assert!(
                matches!(KeywordSpec::parse_datarep(bad), Err(SpecError::Invalid(_))),
                "{bad:?}"
            );
        }
    }

    /// The set `text` loads, or the first line it skipped.
    fn table(kind: SetType, text: &str) -> Result<Table, LoadError> {
        let mut t = Table::new("t", kind, DEFAULT_MEMCAP, None);
        let read = t.load_from(text.as_bytes(), Path::new("d.lst"))?;
        match read.skipped.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(t),
        }
    }

    #[test]
    fn reads_every_type_and_names_the_line_of_a_bad_one() {
        let t = table(SetType::String, "Y3VybC83LjQzLjA=\n\naGVsbG8\n").unwrap();
        assert_eq!(t.len(), 2);
        assert!(t.check(SetOp::IsSet, b"curl/7.43.0"));
        assert!(t.check(SetOp::IsSet, b"hello"));
        assert!(t.check(SetOp::IsNotSet, b"curl"));
        // Never on an empty buffer.
        assert!(!t.check(SetOp::IsNotSet, b""));
        let e = table(SetType::String, "Y3VybC83LjQzLjA=\nY3VybC83Lj!QzLjA=\n").unwrap_err();
        assert_eq!(e.to_string(), "d.lst:2: bad base64 encoding t");
        let t = table(SetType::Md5, "1d5920f4b44b27a802bd77c4f0536f5a,255\n").unwrap();
        assert!(t.has_rep);
        let md5 = hex(b"1d5920f4b44b27a802bd77c4f0536f5a", 16).unwrap();
        assert!(t.check(SetOp::Rep(RepOp::Gt, 200), &md5));
        assert!(!t.check(SetOp::Rep(RepOp::Gt, 255), &md5));
        assert!(t.check(SetOp::Rep(RepOp::Eq, 255), &md5));
        // Wrong length for the type: not in the set.
        assert!(t.check(SetOp::IsNotSet, b"abc"));
        let t = table(SetType::Ipv4, "82.165.177.154\n").unwrap();
        assert!(t.check(SetOp::IsSet, &[82, 165, 177, 154]));
        let t = table(SetType::Ip, "::ffff:82.165.177.154\n2001:db8::1\n").unwrap();
        assert!(t.check(SetOp::IsSet, &[82, 165, 177, 154]));
        assert!(t.check(SetOp::IsSet, &ip_key("2001:db8::1".parse().unwrap())));
        for (kind, text, msg) in [
            (
                SetType::String,
                "Z29vZ2xlLm;NvbQ==,1\n",
                "bad base64 encoding t",
            ),
            (
                SetType::String,
                "Z29vZ2xlLmNvbQ==,-1\n",
                "invalid datarep value t",
            ),
            (
                SetType::String,
                "Y3VybA==\nYmxhaA==,1\n",
                "cannot mix dataset and datarep",
            ),
            (
                SetType::String,
                "YmxhaA==,1\nY3VybA==\n",
                "cannot mix dataset and datarep",
            ),
            (SetType::Md5, "1d5920f4\n", "bad md5 hash"),
            (SetType::Sha256, "zz", "bad sha256 hash"),
            (SetType::Ipv4, "1.2.3\n", "bad ipv4 address"),
            (SetType::Ip, "nothing\n", "bad ip address"),
        ] {
            let e = table(kind, text).unwrap_err();
            assert!(e.message.contains(msg), "{text:?}: {e}");
            assert!(e.line >= 1, "{text:?}");
        }
        let long = "A".repeat(MAX_LINE + 4);
        assert!(
            table(SetType::String, &long)
                .unwrap_err()
                .message
                .contains("longer")
        );
    }

    /// One bad line costs that line only: it is skipped and reported with its file and line, and the lines after it
    /// load (Suricata logs a bad data line and reads on). An over-long line is read past without being kept; a
    /// reputation on a line of a file without them (or none where it has them) is such a bad line too, judged by
    /// the first line that loaded.
    #[test]
    fn a_bad_line_is_skipped_and_the_rest_loads() {
        let mut text = "!!!!\nY3VybA==,3\n".to_string();
        text.push_str(&"A".repeat(MAX_LINE * 3));
        text.push_str("\nYmxhaA==,7\naGVsbG8=,70000\nnot base64,1\naGVsbG8=,1\n");
        let mut t = Table::new("ua", SetType::String, DEFAULT_MEMCAP, None);
        let read = t.load_from(text.as_bytes(), Path::new("d.lst")).unwrap();
        assert_eq!((read.loaded, read.skipped_total), (3, 4));
        let got: Vec<String> = read.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "d.lst:1: bad base64 encoding ua".to_string(),
                format!("d.lst:3: line longer than {MAX_LINE} bytes, not read"),
                "d.lst:5: invalid datarep value ua (expected 0-65535)".to_string(),
                "d.lst:6: bad base64 encoding ua".to_string(),
            ]
        );
        assert!(t.check(SetOp::Rep(RepOp::Eq, 3), b"curl"));
        assert!(t.check(SetOp::Rep(RepOp::Eq, 7), b"blah"));
        assert!(t.check(SetOp::Rep(RepOp::Eq, 1), b"hello"));
        assert!(t.has_rep);
        // A file that mixes lines with and without a reputation is refused whole, as Suricata 8 refuses it.
        let mut t = Table::new("ua", SetType::String, DEFAULT_MEMCAP, None);
        let e = t
            .load_from(&b"!\nYmxhaA==,7\nY3VybA==\n"[..], Path::new("d.lst"))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.lst:3: cannot mix dataset and datarep values for set ua"
        );
        // Only the first few are kept with their reasons; all are counted.
        let many = "x\n".repeat(MAX_SKIPPED_REPORTED * 3);
        let mut t = Table::new("m", SetType::Md5, DEFAULT_MEMCAP, None);
        let read = t.load_from(many.as_bytes(), Path::new("m.lst")).unwrap();
        assert_eq!(read.skipped_total, MAX_SKIPPED_REPORTED * 3);
        assert_eq!(read.skipped.len(), MAX_SKIPPED_REPORTED);
        assert_eq!(read.skipped[1].line, 2);
    }

    /// A reader of nothing but bad lines, or of one endless line, is not read forever: past
    /// [`MAX_SKIPPED_BYTES`] skipped, the file fails as a whole, naming the line.
    #[test]
    fn endless_bad_input_is_refused_at_the_bound() {
        let mut t = Table::new("z", SetType::String, DEFAULT_MEMCAP, None);
        let endless_line = std::io::BufReader::new(std::io::repeat(b'A'));
        let e = t.load_from(endless_line, Path::new("zero")).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("read no further"), "{e}");
        let bad_lines = std::io::BufReader::new(std::io::Read::chain(&b"YQ==\n"[..], BadLines(0)));
        let e = t.load_from(bad_lines, Path::new("yes")).unwrap_err();
        // 1,000-byte lines: the bound is reached after 64 Mi of them.
        assert_eq!(e.line, (MAX_SKIPPED_BYTES / 1000) as usize + 2, "{e}");
        assert!(t.check(SetOp::IsSet, b"a"));

        /// Lines of 999 `!` forever.
        struct BadLines(u64);
        impl std::io::Read for BadLines {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                for b in buf.iter_mut() {
                    *b = if self.0 % 1000 == 999 { b'\n' } else { b'!' };
                    self.0 += 1;
                }
                Ok(buf.len())
            }
        }
    }

    #[test]
    fn strict_base64_refuses_what_suricata_refuses() {
        assert_eq!(
            decode_base64_strict(b"dGVzdA==").as_deref(),
            Some(&b"test"[..])
        );
        assert_eq!(
            decode_base64_strict(b"dGVzdA").as_deref(),
            Some(&b"test"[..])
        );
        for bad in [
            &b"dGV=zdA"[..],
            b"dGVzdA===",
            b"d",
            b"dGVz!A==",
            b"dGVzdA=",
            b"Zm9v YmFy",
        ] {
            assert_eq!(
                decode_base64_strict(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        for v in [&b""[..], b"a", b"ab", b"abc", b"abcd", b"/toto?x=\xff"] {
            assert_eq!(
                decode_base64_strict(encode_base64(v).as_bytes()).as_deref(),
                Some(v)
            );
        }
        assert_eq!(encode_base64(b"param3"), "cGFyYW0z");
        assert_eq!(encode_base64(b"param"), "cGFyYW0=");
    }

    #[test]
    fn set_and_unset_match_only_on_a_change_and_respect_the_memcap() {
        let mut t = Table::new("t", SetType::String, 2 * (ENTRY_OVERHEAD + 3), None);
        assert!(t.apply(SetOp::Set, b"abc"));
        assert!(!t.apply(SetOp::Set, b"abc"));
        assert!(t.apply(SetOp::IsSet, b"abc"));
        assert!(t.apply(SetOp::Set, b"def"));
        // Full: not stored, no match, counted.
        assert!(!t.apply(SetOp::Set, b"ghi"));
        assert_eq!(t.stats.memcap_full, 1);
        assert!(t.apply(SetOp::IsNotSet, b"ghi"));
        assert!(t.apply(SetOp::Unset, b"abc"));
        assert!(!t.apply(SetOp::Unset, b"abc"));
        // Room again.
        assert!(t.apply(SetOp::Set, b"ghi"));
        assert_eq!(t.len(), 2);
        assert!(!t.apply(SetOp::Set, b""));
        // Loading past the memcap names the line.
        let mut small = Table::new("s", SetType::String, ENTRY_OVERHEAD + 1, None);
        let read = small
            .load_from(&b"YQ==\nYg==\nYw==\n"[..], Path::new("f"))
            .unwrap();
        assert_eq!((read.loaded, read.skipped_total), (1, 1));
        assert_eq!(read.skipped[0].line, 2);
        assert!(read.skipped[0].message.contains("memcap"));
        assert!(
            read.skipped[0]
                .message
                .contains("the rest of the file not loaded")
        );
    }

    #[test]
    fn saves_as_it_loads() {
        let mut t = Table::new("t", SetType::Ip, DEFAULT_MEMCAP, None);
        t.apply(SetOp::Set, &ip_key("4:5::6".parse().unwrap()));
        t.apply(SetOp::Set, &[1, 2, 3, 4]);
        let mut out = Vec::new();
        t.write_to(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "0004:0005:0000:0000:0000:0000:0000:0006\n0102:0304:0000:0000:0000:0000:0000:0000\n"
        );
        let back = table(SetType::Ip, &text).unwrap();
        assert!(back.check(SetOp::IsSet, &[1, 2, 3, 4]));
        let s = table(SetType::String, "cGFyYW0z,7\n").unwrap();
        let mut out = Vec::new();
        s.write_to(&mut out).unwrap();
        assert_eq!(out, b"cGFyYW0z,7\n");
    }

    #[test]
    fn rule_paths_follow_the_policy() {
        let mut d = Datasets::new(Policy {
            data_dir: PathBuf::from("/nonexistent-data"),
            ..Policy::default()
        });
        let sp = |v: &str| spec(v);
        assert_eq!(
            d.resolve(&sp("isnotset,a,type string,state /dns-seen.txt"), None),
            Err("absolute paths not allowed: /dns-seen.txt".into())
        );
        assert_eq!(
            d.resolve(&sp("isnotset,a,type string,save ns/../x.txt"), None),
            Err("directory traversals not allowed: ns/../x.txt".into())
        );
        // A state file that does not exist yet is fine; the save goes under the data directory.
        let id = d
            .resolve(&sp("isnotset,a,type string,state s.txt"), None)
            .unwrap();
        assert_eq!(
            d.saves(),
            vec![(id, PathBuf::from("/nonexistent-data/s.txt"))]
        );
        // Named again: alone, or with the same type; another type is an error.
        assert_eq!(d.resolve(&sp("set,a"), None), Ok(id));
        assert!(d.resolve(&sp("set,a,type md5"), None).is_err());
        assert!(d.resolve(&sp("set,b"), None).is_err());
        // A missing load file is an error naming it.
        let e = d
            .resolve(&sp("isset,c,type string,load /nonexistent/x.lst"), None)
            .unwrap_err();
        assert!(e.starts_with("/nonexistent/x.lst: cannot open"), "{e}");
        d.policy.allow_write = false;
        assert!(
            d.resolve(&sp("set,e,type string,save e.txt"), None)
                .unwrap_err()
                .contains("disabled")
        );
    }

    #[test]
    fn deferred_operations_run_in_order_on_the_captured_values() {
        let mut d = Datasets::default();
        let id = d.resolve(&spec("set,s,type string"), None).unwrap();
        let mut st = DatasetState::new(&d);
        let ops = [(7, id, SetOp::IsNotSet), (8, id, SetOp::Set)];
        let cap = |v: &[u8]| -> Captured { vec![(7, v.into()), (8, v.into())].into() };
        assert!(st.apply(&ops, Some(&cap(b"x"))));
        assert!(!st.apply(&ops, Some(&cap(b"x"))));
        assert!(st.apply(&ops, Some(&cap(b"y"))));
        assert!(!st.apply(&ops, None));
        assert_eq!(st.uncaptured, 1);
    }

    fn scratch_dir(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("flowbundle-dataset-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn rules_match_loaded_sets_in_the_worker_and_defer_written_ones() {
        let dir = scratch_dir("rules");
        std::fs::write(
            dir.join("bl.lst"),
            format!("{}\n", encode_base64(b"evil.com")),
        )
        .unwrap();
        let md5 = |v: &[u8]| -> String {
            use md5::{Digest, Md5};
            Md5::digest(v).iter().map(|b| format!("{b:02x}")).collect()
        };
        std::fs::write(
            dir.join("rep.lst"),
            format!("{},255\n{},100\n", md5(b"evil.com"), md5(b"meh.com")),
        )
        .unwrap();
        let text = "alert dns any any -> any any (dns.query; dataset:isset,bl,type string,load bl.lst; sid:1;)\n\
                    alert dns any any -> any any (dns.query; to_md5; datarep:rep, >, 200, load rep.lst, type md5; sid:2;)\n\
                    alert dns any any -> any any (dns.query; content:\"com\"; dataset:set,seen,type string; sid:3;)\n\
                    alert dns any any -> any any (dns.query; dataset:isnotset,bl; sid:4;)\n\
                    alert tcp any any -> any any (content:\"x\"; dataset:isset,bl; sid:5;)\n\
                    alert dns any any -> any any (dns.query; dataset:isset,nowhere; sid:6;)\n\
                    alert dns any any -> any any (dns.query; dataset:isset,bad,type string,load missing.lst; sid:7;)\n";
        let rules_path = dir.join("t.rules");
        std::fs::write(&rules_path, text).unwrap();
        let (set, report) =
            crate::RuleSet::load_files_with(&[&rules_path], &crate::LoadOptions::default())
                .unwrap();
        assert_eq!(set.len(), 4, "{:?}", report.errors);
        let errors: Vec<&str> = report.errors.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(
            report.errors.iter().map(|e| e.line).collect::<Vec<_>>(),
            vec![5, 6, 7]
        );
        assert!(
            errors[0].contains("only supported on sticky buffers"),
            "{errors:?}"
        );
        assert!(errors[1].contains("not defined"), "{errors:?}");
        assert!(errors[2].contains("missing.lst: cannot open"), "{errors:?}");
        // Only the written set defers.
        let seen = set.datasets().id("seen").unwrap();
        assert!(set.datasets().written(seen));
        assert!(!set.datasets().written(set.datasets().id("bl").unwrap()));
        let mut sc = set.scanner();
        let ctx = crate::PacketCtx {
            app_proto: Some("dns"),
            ..crate::PacketCtx::default()
        };
        let mut run = |q: &[u8]| {
            let mut flow = crate::FlowMatchState::default();
            let mut out: Vec<(u32, Option<Captured>)> = Vec::new();
            set.scan_app(
                &mut sc,
                &mut flow,
                &ctx,
                0,
                crate::Buffer::DnsQuery,
                q,
                &mut |a: &crate::Alert<'_>| out.push((a.sid(), take_captured(a.rule))),
            );
            out.sort_by_key(|o| o.0);
            out
        };
        let evil = run(b"evil.com");
        assert_eq!(evil.iter().map(|o| o.0).collect::<Vec<_>>(), vec![1, 2, 3]);
        // The written set's operation matched as if it held and carries the value it saw.
        let cap = evil[2].1.as_deref().unwrap();
        assert_eq!(cap.len(), 1);
        assert_eq!(&*cap[0].1, b"evil.com");
        assert!(evil[0].1.is_none());
        let good = run(b"good.com");
        assert_eq!(good.iter().map(|o| o.0).collect::<Vec<_>>(), vec![3, 4]);
        assert!(run(b"meh.com").iter().all(|o| o.0 != 2));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ip_src_and_ip_dst_are_the_packets_addresses() {
        let dir = scratch_dir("ip");
        std::fs::write(dir.join("ips.lst"), "::ffff:192.0.2.7\n2001:db8::9\n").unwrap();
        let text = "alert ip any any -> any any (ip.dst; dataset:isset,ips,type ip,load ips.lst; sid:1;)\n\
                    alert ip any any -> any any (ip.src; content:\"|0a 00 00 01|\"; bsize:4; sid:2;)\n\
                    alert ip any any -> any any (ip.src; dataset:set,srcs,type ipv4; sid:3;)\n";
        let rules_path = dir.join("t.rules");
        std::fs::write(&rules_path, text).unwrap();
        let (set, report) =
            crate::RuleSet::load_files_with(&[&rules_path], &crate::LoadOptions::default())
                .unwrap();
        assert_eq!(set.len(), 3, "{:?}", report.errors);
        assert!(set.rules().iter().all(|r| !r.ip_only() && !r.flow_scoped()));
        let mut sc = set.scanner();
        let mut run = |src: &str, dst: &str| {
            let ctx = crate::PacketCtx {
                src: src.parse().unwrap(),
                dst: dst.parse().unwrap(),
                ..crate::PacketCtx::default()
            };
            let mut out: Vec<crate::AlertRecord> = Vec::new();
            set.scan_packet(
                &mut sc,
                &mut crate::FlowMatchState::default(),
                &ctx,
                b"",
                &mut out,
            );
            let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
            s.sort_unstable();
            s
        };
        assert_eq!(run("10.0.0.1", "192.0.2.7"), vec![1, 2, 3]);
        assert_eq!(run("10.0.0.2", "192.0.2.8"), vec![3]);
        assert_eq!(run("2001:db8::1", "2001:db8::9"), vec![1]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
