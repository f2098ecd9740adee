//! TCP stream anomalies: what a packet did to its connection's state or stream that a correct stack would not do,
//! named as Suricata's `stream-event` keyword names them (`stream-event:reassembly_seq_gap`; Suricata's event table
//! and `engine-event` prefix them with `stream.`).
//!
//! The engine's connection tracking and reassembly set them on the packet that caused them, as Suricata sets them
//! on that packet; the rules' `stream-event:<name>` keyword tests them. One bit per event in a [`StreamEvents`] set,
//! so recording one costs an OR where the anomaly is found and nothing on the clean path.
//!
//! Only the events the engine detects are listed: a rule naming another of Suricata's stream events is skipped
//! with its name rather than loaded to never fire.

use crate::{EventKind, EventSet};

macro_rules! stream_events {
    ($($(#[$m:meta])* $v:ident = $s:literal,)+) => {
        /// One TCP stream anomaly. See the module documentation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum StreamEvent { $($(#[$m])* $v,)+ }

        impl StreamEvent {
            /// Every event, in declaration order.
            pub const ALL: &'static [StreamEvent] = &[$(StreamEvent::$v,)+];
            /// Number of events.
            pub const COUNT: usize = Self::ALL.len();

            /// Suricata's name without its `stream.` prefix (`reassembly_seq_gap`), as `stream-event` spells it.
            pub fn name(self) -> &'static str {
                match self { $(StreamEvent::$v => $s,)+ }
            }
        }
    };
}

stream_events! {
    /// The SYN-ACK answering the SYN does not acknowledge it (its acknowledgement is not the SYN's sequence number
    /// plus one, or with TCP Fast Open not the end of the SYN's data either).
    ThreeWhsSynackWithWrongAck = "3whs_synack_with_wrong_ack",
    /// With TCP Fast Open the SYN-ACK acknowledges the SYN but not the data the SYN carried.
    ThreeWhsSynackTfoDataIgnored = "3whs_synack_tfo_data_ignored",
    /// A SYN-ACK from the client while the handshake waits for the server's (and the server sent no SYN of its own).
    ThreeWhsSynackInWrongDirection = "3whs_synack_in_wrong_direction",
    /// Four-way handshake (both sides sent a SYN): the client's SYN-ACK does not acknowledge the server's SYN.
    FourWhsSynackWithWrongAck = "4whs_synack_with_wrong_ack",
    /// Four-way handshake: the client's SYN-ACK does not carry the sequence number of its first SYN.
    FourWhsSynackWithWrongSyn = "4whs_synack_with_wrong_syn",
    /// A SYN-ACK from the client after the server's SYN-ACK.
    ThreeWhsSynackToserverOnSynRecv = "3whs_synack_toserver_on_syn_recv",
    /// The server's SYN-ACK resent with another acknowledgement number.
    ThreeWhsSynackResendWithDiffAck = "3whs_synack_resend_with_diff_ack",
    /// A SYN from the server after its SYN-ACK.
    ThreeWhsSynToclientOnSynRecv = "3whs_syn_toclient_on_syn_recv",
    /// The client's SYN resent with another sequence number after the server's SYN-ACK.
    ThreeWhsSynResendDiffSeqOnSynRecv = "3whs_syn_resend_diff_seq_on_syn_recv",
    /// A SYN-ACK from the client on an established connection.
    EstSynackToserver = "est_synack_toserver",
    /// The server's SYN-ACK resent on an established connection, acknowledging other data than the server last did.
    EstSynackResendWithDiffAck = "est_synack_resend_with_diff_ack",
    /// The server's SYN-ACK resent on an established connection with another sequence number.
    EstSynackResendWithDiffSeq = "est_synack_resend_with_diff_seq",
    /// The server's SYN-ACK resent after the server already sent on the established connection.
    EstSynackResend = "est_synack_resend",
    /// A SYN from the server on an established connection.
    EstSynToclient = "est_syn_toclient",
    /// The client's SYN resent with another sequence number on an established connection.
    EstSynResendDiffSeq = "est_syn_resend_diff_seq",
    /// The client's SYN resent on an established connection.
    EstSynResend = "est_syn_resend",
    /// A RST on a connection without a session: nothing opened it (no SYN, or a mid-stream pickup that the
    /// configuration does not allow).
    RstButNoSession = "rst_but_no_session",
    /// A FIN on a connection without a session (with mid-stream pickups allowed, only a FIN without data).
    FinButNoSession = "fin_but_no_session",
    /// Reassembly gave up a hole in a direction: the bytes it held back were released past missing data.
    ReassemblySeqGap = "reassembly_seq_gap",
}

impl StreamEvent {
    /// The event named `name` (Suricata's spelling without `stream.`, ASCII case ignored; its two long spellings
    /// `*_synack_resend_with_different_ack` are accepted for `*_synack_resend_with_diff_ack`).
    pub fn from_name(name: &str) -> Option<StreamEvent> {
        let lower = name.to_ascii_lowercase();
        let canonical = match lower.as_str() {
            "est_synack_resend_with_different_ack" => "est_synack_resend_with_diff_ack",
            "3whs_synack_resend_with_different_ack" => "3whs_synack_resend_with_diff_ack",
            other => other,
        };
        Self::ALL.iter().copied().find(|e| e.name() == canonical)
    }
}

impl core::fmt::Display for StreamEvent {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

const _: () = assert!(StreamEvent::COUNT <= 64);

impl EventKind for StreamEvent {
    const ALL: &'static [StreamEvent] = StreamEvent::ALL;
    #[inline]
    fn index(self) -> usize {
        self as usize
    }
}

/// A set of [`StreamEvent`]s (see [`EventSet`]).
pub type StreamEvents = EventSet<StreamEvent>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_again() {
        for (i, e) in StreamEvent::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i);
            assert_eq!(StreamEvent::from_name(e.name()), Some(*e));
            assert!(
                StreamEvent::ALL[..i].iter().all(|o| o.name() != e.name()),
                "{e} twice"
            );
        }
        assert_eq!(
            StreamEvent::from_name("REASSEMBLY_SEQ_GAP"),
            Some(StreamEvent::ReassemblySeqGap)
        );
        assert_eq!(StreamEvent::from_name("no_such_event"), None);
        assert_eq!(
            StreamEvent::from_name("3whs_synack_resend_with_different_ack"),
            Some(StreamEvent::ThreeWhsSynackResendWithDiffAck)
        );
    }
}
