//! Message bytes generated on demand, so a flow of millions of bytes costs a few dozen bytes of state.
//!
//! A TCP message is [`Content`]: literal bytes, or a literal head, a *fill* of any length and a literal tail. The
//! fills are what bulk transfers carry: encrypted-looking bytes (a window into a 1 MiB pool of ChaCha output made
//! once per run), TLS application-data records (a 5-byte header every 16 KiB of such bytes), CRLF text lines
//! (mail bodies, FTP listings) and shared bytes (a gzip body made once and used by every response that carries
//! it). The packetizer asks for `len` bytes at `offset` and gets them written straight into the frame, so nothing
//! is allocated per packet.

use std::sync::Arc;

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Bytes of the random pool (a power of two).
pub(crate) const POOL: usize = 1 << 20;

/// A TLS record in a bulk transfer: 5-byte header + 16,384 bytes of data + content type + 16-byte tag.
pub(crate) const TLS_RECORD: u64 = 5 + 16_384 + 1 + 16;

/// Text line width of mail bodies and FTP listings (CRLF included).
pub(crate) const LINE: u64 = 72;

/// Random bytes and text shared by every flow of a run (made once from the seed).
pub(crate) struct Pools {
    pub random: Vec<u8>,
    pub words: Vec<&'static str>,
}

/// A vocabulary for names, mail bodies and HTML (deterministic, no external data).
pub(crate) const WORDS: &[&str] = &[
    "alpha", "bridge", "cache", "delta", "engine", "fabric", "gateway", "harbor", "index",
    "journal", "kernel", "ledger", "matrix", "network", "orbit", "packet", "queue", "router",
    "signal", "tensor", "uplink", "vector", "window", "xenon", "yield", "zenith", "amber",
    "basalt", "cobalt", "dune", "ember", "fjord", "granite", "hollow", "iris", "jade", "koala",
    "lotus", "maple", "nectar", "opal", "pepper", "quartz", "raven", "sage", "tundra", "umber",
    "velvet", "willow", "yarrow", "atlas", "beacon", "cipher", "dynamo", "echo", "falcon",
    "glacier", "helix", "ion", "jupiter", "kepler", "lumen", "meridian", "nova", "onyx", "pulsar",
    "quasar", "relay", "summit", "titan", "unity", "vertex", "wave", "axis", "breeze", "comet",
    "drift", "ether", "flux",
];

impl Pools {
    pub(crate) fn new(seed: u64) -> Pools {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x706f_6f6c);
        let mut random = vec![0u8; POOL];
        rng.fill_bytes(&mut random);
        Pools {
            random,
            words: WORDS.to_vec(),
        }
    }

    /// `out.len()` pool bytes starting at `off` (wrapping).
    pub(crate) fn random_at(&self, off: u64, out: &mut [u8]) {
        let mut at = (off as usize) & (POOL - 1);
        let mut done = 0;
        while done < out.len() {
            let n = (out.len() - done).min(POOL - at);
            out[done..done + n].copy_from_slice(&self.random[at..at + n]);
            done += n;
            at = 0;
        }
    }
}

/// What fills the middle of a message.
#[derive(Clone)]
pub(crate) enum Fill {
    /// Encrypted-looking bytes from the pool at this offset.
    Random(u64),
    /// TLS 1.2/1.3 application-data records whose bodies are pool bytes at this offset.
    TlsRecords(u64),
    /// Mail body text lines (seed of the line contents).
    MailText(u64),
    /// FTP `STAT` directory listing lines.
    Listing(u64),
    /// Shared bytes (the fill length is their length).
    Shared(Arc<[u8]>),
}

/// One message of a conversation.
#[derive(Clone)]
pub(crate) struct Content {
    pub head: Vec<u8>,
    pub fill: Option<Fill>,
    pub fill_len: u64,
    pub tail: Vec<u8>,
}

impl Content {
    /// Literal bytes.
    pub(crate) fn bytes(b: Vec<u8>) -> Content {
        Content {
            head: b,
            fill: None,
            fill_len: 0,
            tail: Vec::new(),
        }
    }

    /// Head, fill of `len` bytes, tail.
    pub(crate) fn framed(head: Vec<u8>, fill: Fill, len: u64, tail: Vec<u8>) -> Content {
        let len = match &fill {
            Fill::Shared(b) => b.len() as u64,
            _ => len,
        };
        Content {
            head,
            fill: Some(fill),
            fill_len: len,
            tail,
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.head.len() as u64 + self.fill_len + self.tail.len() as u64
    }

    /// Writes bytes `[off, off + out.len())` of the message into `out`.
    pub(crate) fn copy(&self, off: u64, out: &mut [u8], pools: &Pools) {
        let mut pos = off;
        let mut done = 0usize;
        let head = self.head.len() as u64;
        let fill_end = head + self.fill_len;
        while done < out.len() {
            let want = (out.len() - done) as u64;
            if pos < head {
                let n = (head - pos).min(want) as usize;
                out[done..done + n].copy_from_slice(&self.head[pos as usize..pos as usize + n]);
                done += n;
                pos += n as u64;
            } else if pos < fill_end {
                let n = (fill_end - pos).min(want) as usize;
                if let Some(f) = &self.fill {
                    fill_copy(
                        f,
                        self.fill_len,
                        pos - head,
                        &mut out[done..done + n],
                        pools,
                    );
                }
                done += n;
                pos += n as u64;
            } else {
                let t = (pos - fill_end) as usize;
                let n = (self.tail.len().saturating_sub(t)).min(want as usize);
                if n == 0 {
                    // Past the end: nothing more to give (the caller asked too much); zero the rest.
                    out[done..].fill(0);
                    return;
                }
                out[done..done + n].copy_from_slice(&self.tail[t..t + n]);
                done += n;
                pos += n as u64;
            }
        }
    }
}

/// The `i`-th record's (start, length) of a TLS bulk of `len` bytes: full records, except that a last record of
/// 5 bytes or fewer (no room for data) borrows 6 bytes from the one before.
fn tls_record(len: u64, i: u64) -> (u64, u64) {
    let full = len / TLS_RECORD;
    let rem = len % TLS_RECORD;
    if rem > 0 && rem <= 5 && full >= 1 {
        // Records 0..full-1 are full, record full-1 is 6 shorter, record `full` is rem + 6.
        if i + 1 < full {
            (i * TLS_RECORD, TLS_RECORD)
        } else if i + 1 == full {
            (i * TLS_RECORD, TLS_RECORD - 6)
        } else {
            (full * TLS_RECORD - 6, rem + 6)
        }
    } else {
        let start = i * TLS_RECORD;
        (start, TLS_RECORD.min(len - start))
    }
}

fn fill_copy(f: &Fill, len: u64, off: u64, out: &mut [u8], pools: &Pools) {
    match f {
        Fill::Random(seed) => pools.random_at(seed.wrapping_add(off), out),
        Fill::Shared(b) => {
            let s = (off as usize).min(b.len());
            let n = out.len().min(b.len() - s);
            out[..n].copy_from_slice(&b[s..s + n]);
        }
        Fill::TlsRecords(seed) => {
            let mut pos = off;
            let mut done = 0;
            while done < out.len() {
                let full = len / TLS_RECORD;
                let mut i = pos / TLS_RECORD;
                let (mut start, mut rl) = tls_record(len, i);
                if pos >= start + rl {
                    i += 1;
                    (start, rl) = tls_record(len, i);
                } else if pos < start && i > 0 {
                    i -= 1;
                    (start, rl) = tls_record(len, i);
                }
                let _ = full;
                let within = pos - start;
                let n = ((rl - within) as usize).min(out.len() - done);
                if within < 5 {
                    let body = (rl - 5) as u16;
                    let hdr = [0x17, 0x03, 0x03, (body >> 8) as u8, body as u8];
                    let h = ((5 - within) as usize).min(n);
                    out[done..done + h].copy_from_slice(&hdr[within as usize..within as usize + h]);
                    pools.random_at(
                        seed.wrapping_add(pos + h as u64),
                        &mut out[done + h..done + n],
                    );
                } else {
                    pools.random_at(seed.wrapping_add(pos), &mut out[done..done + n]);
                }
                done += n;
                pos += n as u64;
            }
        }
        Fill::MailText(seed) | Fill::Listing(seed) => {
            let listing = matches!(f, Fill::Listing(_));
            let lines = (len / LINE).max(1);
            let mut pos = off;
            let mut done = 0;
            let mut line = [0u8; 2 * LINE as usize];
            while done < out.len() {
                let i = (pos / LINE).min(lines - 1);
                let start = i * LINE;
                let width = if i + 1 == lines { len - start } else { LINE };
                let w = width as usize;
                if listing {
                    listing_line(*seed, i, &mut line[..w], pools);
                } else {
                    mail_line(*seed, i, &mut line[..w], pools);
                }
                let within = (pos - start) as usize;
                let n = (w - within).min(out.len() - done);
                out[done..done + n].copy_from_slice(&line[within..within + n]);
                done += n;
                pos += n as u64;
            }
        }
    }
}

/// Small deterministic mixer for per-line choices.
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut x = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 31;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 29;
    x
}

/// A line of prose: words separated by spaces, padded, ending in CRLF (never starts with a dot, so it can never
/// end the SMTP DATA phase).
fn mail_line(seed: u64, i: u64, out: &mut [u8], pools: &Pools) {
    let w = out.len();
    if w < 2 {
        out.fill(b'\n');
        return;
    }
    let body = w - 2;
    let mut at = 0;
    let mut k = 0u64;
    while at < body {
        let word =
            pools.words[(mix(seed, i * 64 + k) % pools.words.len() as u64) as usize].as_bytes();
        let n = word.len().min(body - at);
        out[at..at + n].copy_from_slice(&word[..n]);
        at += n;
        if at < body {
            out[at] = b' ';
            at += 1;
        }
        k += 1;
    }
    if out[0] == b'.' || out[0] == b' ' {
        out[0] = b'x';
    }
    out[body] = b'\r';
    out[body + 1] = b'\n';
}

/// A directory entry as `ls -l` prints it, padded with the file name to the width, ending in CRLF. FTP multi-line
/// replies continue with lines that do not start with the reply code and a space, which these never do.
fn listing_line(seed: u64, i: u64, out: &mut [u8], pools: &Pools) {
    let w = out.len();
    if w < 2 {
        out.fill(b'\n');
        return;
    }
    let h = mix(seed, i);
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let prefix = format!(
        " -rw-r--r--   1 ftp      ftp      {:>10} {} {:>2} {:02}:{:02} ",
        h % 900_000_000,
        months[(h >> 32) as usize % 12],
        (h >> 36) % 28 + 1,
        (h >> 40) % 24,
        (h >> 44) % 60
    );
    let body = w - 2;
    let p = prefix.as_bytes();
    let n = p.len().min(body);
    out[..n].copy_from_slice(&p[..n]);
    let mut at = n;
    let mut k = 0;
    while at < body {
        let word = pools.words[(mix(h, k) % pools.words.len() as u64) as usize].as_bytes();
        let m = word.len().min(body - at);
        out[at..at + m].copy_from_slice(&word[..m]);
        at += m;
        if at < body {
            out[at] = if k % 2 == 0 { b'-' } else { b'_' };
            at += 1;
        }
        k += 1;
    }
    out[body] = b'\r';
    out[body + 1] = b'\n';
}

/// A random alphanumeric string of `n` characters.
pub(crate) fn token(rng: &mut ChaCha8Rng, n: usize) -> String {
    const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..n)
        .map(|_| ALNUM[rng.random_range(0..ALNUM.len())] as char)
        .collect()
}

/// A random host name such as `api.cobalt-meridian.net`.
pub(crate) fn host_name(rng: &mut ChaCha8Rng) -> String {
    let sub = [
        "www", "api", "cdn", "static", "img", "mail", "login", "edge", "assets", "m",
    ];
    let tld = ["com", "net", "org", "io", "example"];
    format!(
        "{}.{}-{}.{}",
        sub[rng.random_range(0..sub.len())],
        WORDS[rng.random_range(0..WORDS.len())],
        WORDS[rng.random_range(0..WORDS.len())],
        tld[rng.random_range(0..tld.len())]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(c: &Content, pools: &Pools) -> Vec<u8> {
        let mut v = vec![0u8; c.len() as usize];
        c.copy(0, &mut v, pools);
        v
    }

    #[test]
    fn pieces_in_any_split_equal_the_whole() {
        let pools = Pools::new(1);
        let contents = [
            Content::framed(b"HEAD".to_vec(), Fill::Random(77), 5000, b"TAIL".to_vec()),
            Content::framed(
                Vec::new(),
                Fill::TlsRecords(3),
                3 * TLS_RECORD + 4,
                Vec::new(),
            ),
            Content::framed(
                b"x".to_vec(),
                Fill::MailText(9),
                1000,
                b"\r\n.\r\n".to_vec(),
            ),
            Content::framed(
                b"213-\r\n".to_vec(),
                Fill::Listing(9),
                333,
                b"213 End\r\n".to_vec(),
            ),
        ];
        for c in &contents {
            let whole = all(c, &pools);
            for step in [1usize, 7, 1460, 4096] {
                let mut v = Vec::new();
                let mut off = 0;
                while off < whole.len() {
                    let n = step.min(whole.len() - off);
                    let mut b = vec![0u8; n];
                    c.copy(off as u64, &mut b, &pools);
                    v.extend_from_slice(&b);
                    off += n;
                }
                assert_eq!(v, whole);
            }
        }
    }

    #[test]
    fn tls_bulk_is_a_sequence_of_well_formed_records() {
        let pools = Pools::new(2);
        for len in [
            100,
            TLS_RECORD,
            TLS_RECORD + 3,
            2 * TLS_RECORD + 5,
            2 * TLS_RECORD + 6,
            40_000,
        ] {
            let c = Content::framed(Vec::new(), Fill::TlsRecords(5), len, Vec::new());
            let b = all(&c, &pools);
            let mut at = 0;
            while at < b.len() {
                assert_eq!(&b[at..at + 3], &[0x17, 3, 3], "len {len} at {at}");
                let n = u16::from_be_bytes([b[at + 3], b[at + 4]]) as usize;
                assert!((1..=16_384 + 256).contains(&n));
                at += 5 + n;
            }
            assert_eq!(at, b.len(), "len {len}");
        }
    }

    #[test]
    fn text_lines_end_in_crlf_and_never_start_with_a_dot() {
        let pools = Pools::new(3);
        let c = Content::framed(Vec::new(), Fill::MailText(1), 10 * LINE + 30, Vec::new());
        let b = all(&c, &pools);
        let text = String::from_utf8(b).unwrap();
        assert!(text.ends_with("\r\n"));
        for l in text.split("\r\n").filter(|l| !l.is_empty()) {
            assert!(!l.starts_with('.'));
        }
        assert_eq!(text.matches("\r\n").count(), 10);
    }
}
