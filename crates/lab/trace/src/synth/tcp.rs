//! The TCP conversation: three-way handshake, data segments with the peer's delayed ACKs, teardown; sequence and
//! acknowledgement numbers exactly as a real stack keeps them (tshark's sequence analysis finds nothing to say).
//!
//! Each side sends a message as MSS-sized segments (PSH on the last). The receiver acknowledges every second
//! segment and the end of a message with a pure ACK, except when it answers: its reply carries the ACK (see
//! [`super::apps::message_packets`], which counts exactly what this emits). Windows stay far above the bytes in
//! flight, so no window is ever full.

use flowbundle_decode::wire::tcp::flags;

use super::apps::{Side, Teardown};
use super::content::Content;

/// Window field after the handshake (scaled by 2^7: 256 KiB).
const WINDOW: [u16; 2] = [2053, 2046];
/// Window in the SYN and SYN-ACK (unscaled).
const SYN_WINDOW: [u16; 2] = [64_240, 65_160];

/// One segment to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    pub from: Side,
    pub flags: u16,
    pub seq: u32,
    pub ack: u32,
    pub window: u16,
    /// SYN segments carry options with this MSS.
    pub syn_mss: Option<u16>,
    /// Payload: message index, offset in it and length.
    pub payload: Option<(usize, u64, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Syn,
    SynAck,
    Ack,
    Data,
    Close(u8),
    Done,
}

/// A TCP conversation's segment generator.
pub(crate) struct TcpConv {
    pub msgs: Vec<(Side, Content)>,
    closer: Side,
    teardown: Teardown,
    next: [u32; 2],
    mss: u64,
    stage: Stage,
    msg: usize,
    off: u64,
    unacked: u32,
    ack_due: Option<Side>,
}

impl TcpConv {
    pub(crate) fn new(
        msgs: Vec<(Side, Content)>,
        closer: Side,
        teardown: Teardown,
        isn: [u32; 2],
        mss: u64,
    ) -> TcpConv {
        TcpConv {
            msgs,
            closer,
            teardown,
            next: isn,
            mss,
            stage: Stage::Syn,
            msg: 0,
            off: 0,
            unacked: 0,
            ack_due: None,
        }
    }

    fn seg(&self, from: Side, flags: u16, payload: Option<(usize, u64, usize)>) -> Segment {
        Segment {
            from,
            flags,
            seq: self.next[from.index()],
            ack: if flags & flags::ACK != 0 {
                self.next[from.other().index()]
            } else {
                0
            },
            window: WINDOW[from.index()],
            syn_mss: None,
            payload,
        }
    }

    /// The next segment, or `None` once the conversation is closed.
    pub(crate) fn next(&mut self) -> Option<Segment> {
        use Side::{Client as C, Server as S};
        match self.stage {
            Stage::Syn => {
                let mut s = self.seg(C, flags::SYN, None);
                s.window = SYN_WINDOW[0];
                s.syn_mss = Some(self.mss as u16);
                self.next[0] = self.next[0].wrapping_add(1);
                self.stage = Stage::SynAck;
                Some(s)
            }
            Stage::SynAck => {
                let mut s = self.seg(S, flags::SYN | flags::ACK, None);
                s.window = SYN_WINDOW[1];
                s.syn_mss = Some(self.mss as u16);
                self.next[1] = self.next[1].wrapping_add(1);
                self.stage = Stage::Ack;
                Some(s)
            }
            Stage::Ack => {
                self.stage = Stage::Data;
                Some(self.seg(C, flags::ACK, None))
            }
            Stage::Data => {
                if let Some(side) = self.ack_due.take() {
                    return Some(self.seg(side, flags::ACK, None));
                }
                let Some((from, content)) = self.msgs.get(self.msg) else {
                    self.stage = Stage::Close(0);
                    return self.next();
                };
                let from = *from;
                let len = content.len();
                let n = (len - self.off).min(self.mss) as usize;
                let last = self.off + n as u64 >= len;
                let f = flags::ACK | if last { flags::PSH } else { 0 };
                let s = self.seg(from, f, Some((self.msg, self.off, n)));
                self.next[from.index()] = self.next[from.index()].wrapping_add(n as u32);
                self.off += n as u64;
                self.unacked += 1;
                let reply = last && self.msgs.get(self.msg + 1).is_some_and(|(d, _)| *d != from);
                if last {
                    self.msg += 1;
                    self.off = 0;
                }
                if reply {
                    self.unacked = 0;
                } else if self.unacked == 2 || (last && self.unacked > 0) {
                    self.ack_due = Some(from.other());
                    self.unacked = 0;
                }
                Some(s)
            }
            Stage::Close(step) => {
                let (x, y) = (self.closer, self.closer.other());
                let fin = flags::FIN | flags::ACK;
                let (seg, done) = match (self.teardown, step) {
                    (Teardown::Rst, _) => (self.seg(x, flags::RST | flags::ACK, None), true),
                    (Teardown::Fin3, 0) | (Teardown::Fin4, 0) => {
                        let s = self.seg(x, fin, None);
                        self.next[x.index()] = self.next[x.index()].wrapping_add(1);
                        (s, false)
                    }
                    (Teardown::Fin3, 1) | (Teardown::Fin4, 2) => {
                        let s = self.seg(y, fin, None);
                        self.next[y.index()] = self.next[y.index()].wrapping_add(1);
                        (s, false)
                    }
                    (Teardown::Fin4, 1) => (self.seg(y, flags::ACK, None), false),
                    _ => (self.seg(x, flags::ACK, None), true),
                };
                self.stage = if done {
                    Stage::Done
                } else {
                    Stage::Close(step + 1)
                };
                Some(seg)
            }
            Stage::Done => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::apps::GeneratedApp;

    /// The packetizer emits exactly what the shape's closed form counts, with consistent sequence numbers.
    #[test]
    fn counts_and_sequence_numbers() {
        for app in [
            GeneratedApp::Http,
            GeneratedApp::Tls,
            GeneratedApp::Ssh,
            GeneratedApp::Smtp,
            GeneratedApp::Ftp,
        ] {
            let shape = app.shape().unwrap();
            for target in [
                shape.min_packets(),
                shape.min_packets() + 1,
                57,
                58,
                59,
                300,
            ] {
                for rst in [false, true] {
                    let (n, td) = shape.solve(target, rst);
                    let mss = 1460;
                    // Messages of the shape's segment counts: 1-segment messages of 100 bytes, 3-segment ones of
                    // 3000, the bulk of n segments.
                    let msgs = shape
                        .steps
                        .iter()
                        .map(|s| {
                            use crate::synth::apps::Step::*;
                            let (side, len) = match s {
                                C(k) => (Side::Client, if *k == 1 { 100 } else { 3000 }),
                                S(k) => (Side::Server, if *k == 1 { 100 } else { 3000 }),
                                BulkC => (Side::Client, (n - 1) * mss + 7),
                                BulkS => (Side::Server, (n - 1) * mss + 7),
                            };
                            (side, Content::bytes(vec![b'x'; len as usize]))
                        })
                        .collect();
                    let mut conv = TcpConv::new(msgs, shape.closer, td, [1000, 5000], mss);
                    let mut count = 0;
                    // What each side has sent, and the highest ack each side received.
                    let mut sent = [1000u32, 5000];
                    while let Some(s) = conv.next() {
                        count += 1;
                        let i = s.from.index();
                        assert_eq!(s.seq, sent[i], "{app:?}: sequence continuity");
                        if s.flags & flags::ACK != 0 {
                            assert_eq!(s.ack, sent[1 - i], "{app:?}: acks everything received");
                        }
                        let len = s.payload.map_or(0, |p| p.2 as u32);
                        let syn_fin = u32::from(s.flags & (flags::SYN | flags::FIN) != 0);
                        sent[i] = sent[i].wrapping_add(len + syn_fin);
                    }
                    assert_eq!(
                        count,
                        target.max(shape.min_packets()),
                        "{app:?} target {target} rst {rst}"
                    );
                }
            }
        }
    }
}
