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
        Verdict::NoMatchYet
    }

    /// Does the engine's answer `engine` agree with the reference's `reference` for the same packet? Equal, or
    /// the engine already knows NoMatch while the reference is still waiting (it will never match).
    pub fn agrees(engine: Verdict, reference: Verdict) -> bool {
        engine == reference || (engine == Verdict::NoMatch && reference == Verdict::NoMatchYet)
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
