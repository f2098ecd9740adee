//! The literal l7-filter algorithm, kept as an oracle for tests and fuzzing.
//!
//! [`Reference`] does what `xt_layer7.c` does: it keeps the connection's data in a buffer (NULs removed, at
//! most `max_bytes`), and after every packet that added bytes it runs each signature's regex over the *whole*
//! buffer, in precedence order, and the first that matches classifies the connection. It uses
//! `regex-automata`'s meta regex on the same translated pattern, so comparing it with
//! [`SignatureSet::feed`] checks everything the incremental engine adds: grouping, saved DFA states across
//! packets, the `$` end-of-input peek, NUL removal, limits and precedence. It costs O(patterns × buffer) per
//! packet and a buffer per connection, which is why the engine does not work this way.
//!
//! One difference is intended: `feed` may answer NoMatch early, when no pattern can match any continuation;
//! the reference only knows at the limits. [`Reference::agrees`] encodes what "the same answer" means.

use crate::set::{SigId, SignatureSet, Verdict};
use crate::translate;
use regex_automata::meta::Regex;

/// Patterns that exercise every part of the engine: `^` and `$`, gaps, alternations mixing anchored and
/// unanchored branches, brackets with `]` and `[`, an interval, literals long enough for the prefilters, one-byte
/// starts. Used by the proptests and the fuzz targets.
pub const TEST_PATTERNS: &[(&str, &str)] = &[
    ("anchored", "^ab"),
    ("gap-end", "b.*c$"),
    ("digits", "x[0-9]+y"),
    ("binary", r"^\x01\x02"),
    ("mixed", "q|^z"),
    ("bracket", r"[]\x01]-"),
    ("literal", "hello world"),
    ("anchored-gap", "^get /.*user-agent: test"),
    ("printable", r"post [ -~]* http/1\.[01]"),
    ("prefix", "abc|^abd"),
    ("interval", "t[a-c]{2,3}u"),
    ("end", "k$"),
    ("brackets", r"[\x58[\x60]x"),
    ("ssh", r"^ssh-[12]\.[0-9]"),
];

/// Splits `data` into packets at the positions `cuts` names (taken modulo the length, sorted); empty packets
/// are kept, as l7-filter counts them. Shared by the proptests and fuzz targets.
pub fn split_at<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    at.sort_unstable();
    let mut packets = Vec::with_capacity(at.len() + 1);
    let mut prev = 0;
    for a in at {
        packets.push(&data[prev..a]);
        prev = a;
    }
    packets.push(&data[prev..]);
    packets
}

/// The re-scanning matcher over a set's signatures.
#[derive(Debug)]
pub struct Reference {
    regexes: Vec<(SigId, Regex)>,
    max_bytes: usize,
    max_packets: usize,
    strip_nul: bool,
}

/// A connection for [`Reference`]: the whole buffer.
#[derive(Debug, Clone, Default)]
pub struct RefConn {
    buffer: Vec<u8>,
    packets: usize,
    verdict: Option<Verdict>,
}

impl RefConn {
    /// The data kept so far.
    pub fn buffer(&self) -> &[u8] {
        &self.buffer
    }
}

impl Reference {
    /// Compiles every signature of `set` on its own. Fails only if a pattern the set compiled does not compile
    /// here (which would be a bug).
    pub fn new(set: &SignatureSet) -> Result<Reference, String> {
        let mut regexes = Vec::with_capacity(set.len());
        for (id, sig) in set.iter() {
            let t = translate::translate(&sig.pattern).map_err(|e| format!("{}: {e}", sig.name))?;
            let re = Regex::builder()
                .build_from_hir(&t.hir)
                .map_err(|e| format!("{}: {e}", sig.name))?;
            regexes.push((id, re));
        }
        Ok(Reference {
            regexes,
            max_bytes: set.max_bytes(),
            max_packets: set.max_packets(),
            strip_nul: set.strip_nul(),
        })
    }

    /// A fresh connection.
    pub fn new_conn(&self) -> RefConn {
        RefConn::default()
    }

    /// Feeds one packet the way l7-filter does.
    pub fn feed(&self, conn: &mut RefConn, data: &[u8]) -> Verdict {
        if let Some(v) = conn.verdict {
            return v;
        }
        conn.packets += 1;
        let room = self.max_bytes - conn.buffer.len();
        let before = conn.buffer.len();
        for &b in &data[..data.len().min(room)] {
            if b != 0 || !self.strip_nul {
                conn.buffer.push(b);
            }
        }
        if conn.buffer.len() > before {
            for (id, re) in &self.regexes {
                if re.is_match(&conn.buffer) {
                    conn.verdict = Some(Verdict::Matched(*id));
                    return Verdict::Matched(*id);
                }
            }
        }
        if conn.buffer.len() >= self.max_bytes || conn.packets >= self.max_packets {
            conn.verdict = Some(Verdict::NoMatch);
            return Verdict::NoMatch;
        }
        Verdict::Pending
    }

    /// Does the engine's answer `engine` agree with the reference's `reference` for the same packet? Equal, or
    /// the engine already knows NoMatch while the reference is still waiting (it will never match).
    pub fn agrees(engine: Verdict, reference: Verdict) -> bool {
        engine == reference || (engine == Verdict::NoMatch && reference == Verdict::Pending)
    }

    /// Feeds `packets` to both `set` and this reference and checks that they agree after every packet
    /// ([`Reference::agrees`]). The entry point of the proptests and the fuzz targets.
    pub fn compare(&self, set: &SignatureSet, packets: &[&[u8]]) -> Result<(), String> {
        let mut state = set.new_state();
        let mut conn = self.new_conn();
        for (k, p) in packets.iter().enumerate() {
            let engine = set.feed(&mut state, p);
            let literal = self.feed(&mut conn, p);
            if !Self::agrees(engine, literal) {
                return Err(format!(
                    "packet {k}: engine {engine:?}, reference {literal:?}, packets {packets:?}"
                ));
            }
        }
        Ok(())
    }

    /// Which signatures match `data` as one buffer (NULs stripped if configured), in precedence order.
    pub fn matching(&self, data: &[u8]) -> Vec<SigId> {
        let buffer: Vec<u8> = data
            .iter()
            .copied()
            .filter(|&b| b != 0 || !self.strip_nul)
            .collect();
        self.regexes
            .iter()
            .filter(|(_, re)| re.is_match(&buffer))
            .map(|(id, _)| *id)
            .collect()
    }
}
