//! `stream_size`: the amount of sequence space a TCP session's client or server has used, as Suricata measures it.
//!
//! `stream_size:<server|client|both|either>,<op>,<bytes>` with `op` one of `<`, `<=`, `=`, `!=`, `>=`, `>`. The
//! size of a side is its next expected sequence number minus its initial sequence number (Suricata's
//! `next_seq - isn`, wrapping in 32 bits): the SYN counts one, every in-order payload byte one, a FIN one. So a
//! client that has sent its SYN and nothing else has size 1, and `stream_size:server,<,5` holds until the server
//! has sent four bytes. The engine tracks both sides per TCP flow and hands them over with every inspection of the
//! flow ([`crate::PacketCtx::stream_size`]), so the test is checked on the packet that is inspected, whether its
//! payload is matched as a packet, as stream data or as an application buffer, as Suricata checks it on the packet
//! (a packet keyword that does not make its rule a packet rule). A flow that is not TCP, or a TCP flow whose
//! sizes the engine does not know yet, matches no `stream_size` test (Suricata: no session, no match).
//!
//! The test is a condition like `flow`: checking it costs a comparison, and it never changes which rule group or
//! prefilter table a rule is in.

/// Which side of the session `stream_size` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamSide {
    Server,
    Client,
    /// Both sides pass.
    Both,
    /// At least one side passes.
    Either,
}

/// The comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SizeOp {
    Lt,
    Le,
    Eq,
    Ne,
    Ge,
    Gt,
}

impl SizeOp {
    fn test(self, x: u32, n: u32) -> bool {
        match self {
            SizeOp::Lt => x < n,
            SizeOp::Le => x <= n,
            SizeOp::Eq => x == n,
            SizeOp::Ne => x != n,
            SizeOp::Ge => x >= n,
            SizeOp::Gt => x > n,
        }
    }
}

/// The sizes of one TCP session's two sides when a packet of it is inspected (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamSizes {
    pub client: u32,
    pub server: u32,
}

/// One `stream_size` test of a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamSize {
    pub side: StreamSide,
    pub op: SizeOp,
    pub bytes: u32,
}

impl StreamSize {
    /// Parses the keyword's value; a one-line reason for anything else.
    pub fn parse(v: &str) -> Result<StreamSize, String> {
        let short: String = v.chars().take(40).collect();
        let bad = || {
            format!(
                "stream_size: expected `<server|client|both|either>,<op>,<bytes>`, not `{short}`"
            )
        };
        let mut parts = v.split(',').map(str::trim);
        let (Some(side), Some(op), Some(bytes), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let side = match side {
            "server" => StreamSide::Server,
            "client" => StreamSide::Client,
            "both" => StreamSide::Both,
            "either" => StreamSide::Either,
            _ => return Err(format!("stream_size: unknown side `{side}`")),
        };
        let op = match op {
            "<" => SizeOp::Lt,
            "<=" => SizeOp::Le,
            "=" => SizeOp::Eq,
            "!=" => SizeOp::Ne,
            ">=" => SizeOp::Ge,
            ">" => SizeOp::Gt,
            _ => return Err(format!("stream_size: unknown operator `{op}`")),
        };
        if bytes.is_empty() || !bytes.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        let bytes = bytes
            .parse::<u32>()
            .map_err(|_| format!("stream_size: `{bytes}` is above {}", u32::MAX))?;
        Ok(StreamSize { side, op, bytes })
    }

    /// Whether the session's sizes pass.
    #[inline]
    pub fn matches(&self, s: StreamSizes) -> bool {
        let t = |x| self.op.test(x, self.bytes);
        match self.side {
            StreamSide::Server => t(s.server),
            StreamSide::Client => t(s.client),
            StreamSide::Both => t(s.server) && t(s.client),
            StreamSide::Either => t(s.server) || t(s.client),
        }
    }
}

/// One side of a TCP session as `stream_size` counts it: its initial sequence number and the next one expected.
/// The engine keeps two per TCP flow and feeds every packet in capture order ([`SeqSpan::on_segment`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqSpan {
    /// `isn` and `next` are known.
    pub known: bool,
    pub isn: u32,
    pub next: u32,
}

impl SeqSpan {
    /// The sequence space used so far (0 while unknown).
    pub fn size(&self) -> u32 {
        if self.known {
            self.next.wrapping_sub(self.isn)
        } else {
            0
        }
    }

    /// A segment this side sent: a SYN fixes the initial sequence number; the first segment of a side picked up
    /// without its SYN counts from the number before it (as Suricata's mid-stream pickup does); afterwards the
    /// next expected number advances over a segment that starts at or before it (in order, or overlapping what
    /// came before), by its payload and by one for a FIN. Out-of-order data (beyond a hole) does not advance it.
    pub fn on_segment(&mut self, seq: u32, len: u32, syn: bool, fin: bool) {
        if syn && !self.known {
            self.known = true;
            self.isn = seq;
            self.next = seq.wrapping_add(1);
        } else if !self.known {
            self.known = true;
            self.isn = seq.wrapping_sub(1);
            self.next = seq;
        }
        let start = if syn { seq.wrapping_add(1) } else { seq };
        let end = start.wrapping_add(len).wrapping_add(u32::from(fin));
        // `start <= next < end` in sequence space: the segment reaches past what was expected without a hole.
        let ahead = end.wrapping_sub(self.next) as i32;
        let behind = self.next.wrapping_sub(start) as i32;
        if ahead > 0 && behind >= 0 {
            self.next = end;
        }
    }

    /// The receiving side learnt from an acknowledgement, for a side not seen yet (a mid-stream pickup whose first
    /// packet came from the peer): Suricata then takes the acknowledged number as the side's next one.
    pub fn on_peer_ack(&mut self, ack: u32) {
        if !self.known {
            self.known = true;
            self.isn = ack.wrapping_sub(1);
            self.next = ack;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &str) -> StreamSize {
        StreamSize::parse(v).unwrap()
    }

    #[test]
    fn parses_every_side_and_operator() {
        assert_eq!(
            p("server,<,5"),
            StreamSize {
                side: StreamSide::Server,
                op: SizeOp::Lt,
                bytes: 5
            }
        );
        assert_eq!(p(" client , >= , 8 ").op, SizeOp::Ge);
        assert_eq!(p("both,!=,0").side, StreamSide::Both);
        assert_eq!(p("either,<=,4294967295").bytes, u32::MAX);
        for (v, op) in [("<", SizeOp::Lt), ("<=", SizeOp::Le), ("=", SizeOp::Eq)] {
            assert_eq!(p(&format!("client,{v},1")).op, op);
        }
        for bad in [
            "",
            "server",
            "server,<",
            "server,<,5,6",
            "sever,<,5",
            "server,=>,5",
            "server,<,-1",
            "server,<,x",
            "server,<,4294967296",
            "server,<,",
        ] {
            let e = StreamSize::parse(bad).unwrap_err();
            assert!(
                e.starts_with("stream_size") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn compares_the_sides_as_documented() {
        let s = StreamSizes {
            client: 1,
            server: 10,
        };
        assert!(p("client,=,1").matches(s) && p("server,=,10").matches(s));
        assert!(p("server,>,9").matches(s) && !p("server,>,10").matches(s));
        assert!(p("server,>=,10").matches(s) && p("server,<=,10").matches(s));
        assert!(p("server,!=,9").matches(s) && !p("server,!=,10").matches(s));
        assert!(!p("both,<,5").matches(s) && p("either,<,5").matches(s));
        assert!(p("both,<,11").matches(s) && !p("either,>,10").matches(s));
    }

    #[test]
    fn counts_syn_data_and_fin_in_order_only() {
        let mut c = SeqSpan::default();
        assert_eq!(c.size(), 0);
        c.on_segment(u32::MAX - 1, 0, true, false); // SYN, wrapping soon
        assert_eq!(c.size(), 1);
        c.on_segment(u32::MAX, 10, false, false);
        assert_eq!(c.size(), 11);
        // A retransmission and a segment overlapping the end: only new numbers count.
        c.on_segment(u32::MAX, 10, false, false);
        c.on_segment(4, 8, false, false); // numbers 4..12: 9..12 are new
        assert_eq!(c.size(), 14);
        // Beyond a hole: not yet.
        c.on_segment(100, 5, false, false);
        assert_eq!(c.size(), 14);
        // A FIN right after the data counts one.
        c.on_segment(12, 0, false, true);
        assert_eq!(c.size(), 15);
    }

    #[test]
    fn mid_stream_pickup_counts_from_the_first_segment() {
        let mut c = SeqSpan::default();
        c.on_segment(5000, 20, false, false);
        assert_eq!(c.size(), 21);
        let mut s = SeqSpan::default();
        s.on_peer_ack(9000);
        assert_eq!(s.size(), 1);
        s.on_peer_ack(9100); // only the first acknowledgement fixes it
        s.on_segment(9000, 4, false, false);
        assert_eq!(s.size(), 5);
    }
}
