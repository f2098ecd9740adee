//! Decoder anomalies: what a packet's headers got wrong, named as Suricata's `decode-event` keyword, its
//! `decoder.event.*` counters and its EVE `anomaly` records name them.
//!
//! The decoder (and the defragmenter, for the fragment events) sets them on the packet it decodes; the rules'
//! `decode-event:<name>` keyword tests them; the stats count them. One bit per event in a [`DecodeEvents`] set (two
//! words: the list outgrew 64), so recording one costs an OR on the path where the anomaly was found and nothing on
//! the clean path.
//!
//! Only the events the decoder detects are listed: a rule naming another Suricata decoder event is skipped with its
//! name rather than loaded to never fire.

use crate::{EventKind, EventSet};

macro_rules! decode_events {
    ($($(#[$m:meta])* $v:ident = $s:literal,)+) => {
        /// One decoder anomaly. See the module documentation.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum DecodeEvent { $($(#[$m])* $v,)+ }

        impl DecodeEvent {
            /// Every event, in declaration order (the order of the counters).
            pub const ALL: &'static [DecodeEvent] = &[$(DecodeEvent::$v,)+];
            /// Number of events.
            pub const COUNT: usize = Self::ALL.len();

            /// Suricata's name (`ipv6.frag_overlap`), as `decode-event` and `decoder.event.*` spell it.
            pub fn name(self) -> &'static str {
                match self { $(DecodeEvent::$v => $s,)+ }
            }
        }
    };
}

decode_events! {
    /// Ethernet header cut short.
    EthernetPktTooSmall = "ethernet.pkt_too_small",
    /// VLAN tag cut short.
    VlanHeaderTooSmall = "vlan.header_too_small",
    /// More than three VLAN tags.
    VlanTooManyLayers = "vlan.too_many_layers",
    /// Linux cooked header cut short.
    SllPktTooSmall = "sll.pkt_too_small",
    /// BSD loopback header cut short.
    LtnullPktTooSmall = "ltnull.pkt_too_small",
    /// BSD loopback family other than IPv4/IPv6.
    LtnullUnsupportedType = "ltnull.unsupported_type",
    /// More encapsulation layers than the decoder follows.
    TooManyLayers = "too_many_layers",
    /// IPv4: fewer than 20 bytes.
    Ipv4PktTooSmall = "ipv4.pkt_too_small",
    /// IPv4 header length field below 20 bytes.
    Ipv4HlenTooSmall = "ipv4.hlen_too_small",
    /// IPv4 total length below the header length.
    Ipv4IplenSmallerThanHlen = "ipv4.iplen_smaller_than_hlen",
    /// IPv4 total length beyond the bytes captured.
    Ipv4TruncPkt = "ipv4.trunc_pkt",
    /// Version field not 4 where IPv4 was announced.
    Ipv4WrongIpVersion = "ipv4.wrong_ip_version",
    /// IPv4 carrying ICMPv6.
    Ipv4Icmpv6 = "ipv4.icmpv6",
    /// IPv4 option whose length byte is below 2 or runs past the options.
    Ipv4OptInvalidLen = "ipv4.opt_invalid_len",
    /// IPv4 option whose length is wrong for its type.
    Ipv4OptMalformed = "ipv4.opt_malformed",
    /// IPv4 option seen twice.
    Ipv4OptDuplicate = "ipv4.opt_duplicate",
    /// IPv4 option of an unknown type.
    Ipv4OptUnknown = "ipv4.opt_unknown",
    /// IPv4 options not padded with zeroes after an end-of-list option.
    Ipv4OptPadRequired = "ipv4.opt_pad_required",
    /// IPv4 fragments reassembling beyond 65,535 bytes.
    Ipv4FragPktTooLarge = "ipv4.frag_pkt_too_large",
    /// IPv4 fragment overlapping data already held for its datagram.
    Ipv4FragOverlap = "ipv4.frag_overlap",
    /// IPv6: fewer than 40 bytes.
    Ipv6PktTooSmall = "ipv6.pkt_too_small",
    /// IPv6 payload length beyond the bytes captured.
    Ipv6TruncPkt = "ipv6.trunc_pkt",
    /// IPv6 extension header cut short.
    Ipv6TruncExthdr = "ipv6.trunc_exthdr",
    /// Second fragment header.
    Ipv6ExthdrDuplFh = "ipv6.exthdr_dupl_fh",
    /// Fragment header of an unfragmented packet (offset 0, no more fragments).
    Ipv6ExthdrUselessFh = "ipv6.exthdr_useless_fh",
    /// Second routing header.
    Ipv6ExthdrDuplRh = "ipv6.exthdr_dupl_rh",
    /// Second hop-by-hop header, or one that is not first.
    Ipv6ExthdrDuplHh = "ipv6.exthdr_dupl_hh",
    /// More than two destination options headers.
    Ipv6ExthdrDuplDh = "ipv6.exthdr_dupl_dh",
    /// Second authentication header.
    Ipv6ExthdrDuplAh = "ipv6.exthdr_dupl_ah",
    /// Second ESP header.
    Ipv6ExthdrDuplEh = "ipv6.exthdr_dupl_eh",
    /// Option length running past its options header.
    Ipv6ExthdrInvalidOptlen = "ipv6.exthdr_invalid_optlen",
    /// Version field not 6 where IPv6 was announced.
    Ipv6WrongIpVersion = "ipv6.wrong_ip_version",
    /// Authentication header with a non-zero reserved field.
    Ipv6ExthdrAhResNotNull = "ipv6.exthdr_ah_res_not_null",
    /// Hop-by-hop option of an unknown type.
    Ipv6HopoptsUnknownOpt = "ipv6.hopopts_unknown_opt",
    /// Hop-by-hop header holding only padding.
    Ipv6HopoptsOnlyPadding = "ipv6.hopopts_only_padding",
    /// Destination option of an unknown type.
    Ipv6DstoptsUnknownOpt = "ipv6.dstopts_unknown_opt",
    /// Destination options header holding only padding.
    Ipv6DstoptsOnlyPadding = "ipv6.dstopts_only_padding",
    /// Routing header type 0 (deprecated, RFC 5095).
    Ipv6RhType0 = "ipv6.rh_type_0",
    /// PadN option of length 0.
    Ipv6ZeroLenPadn = "ipv6.zero_len_padn",
    /// Fragment header with a non-zero reserved field.
    Ipv6FhNonZeroReservedField = "ipv6.fh_non_zero_reserved_field",
    /// Data after a No Next Header.
    Ipv6DataAfterNoneHeader = "ipv6.data_after_none_header",
    /// Next Header of an unknown protocol.
    Ipv6UnknownNextHeader = "ipv6.unknown_next_header",
    /// IPv6 carrying ICMP for IPv4.
    Ipv6Icmpv4 = "ipv6.icmpv4",
    /// IPv6 fragments reassembling beyond 65,535 bytes.
    Ipv6FragPktTooLarge = "ipv6.frag_pkt_too_large",
    /// IPv6 fragment overlapping data already held for its datagram.
    Ipv6FragOverlap = "ipv6.frag_overlap",
    /// IPv6 fragment with more fragments to come whose length is not a multiple of 8.
    Ipv6FragInvalidLength = "ipv6.frag_invalid_length",
    /// IPv4-in-IPv6 shorter than an IPv4 header.
    Ipv6Ipv4InIpv6TooSmall = "ipv6.ipv4_in_ipv6_too_small",
    /// IPv4-in-IPv6 whose inner version is not 4.
    Ipv6Ipv4InIpv6WrongVersion = "ipv6.ipv4_in_ipv6_wrong_version",
    /// IPv6-in-IPv6 shorter than an IPv6 header.
    Ipv6Ipv6InIpv6TooSmall = "ipv6.ipv6_in_ipv6_too_small",
    /// IPv6-in-IPv6 whose inner version is not 6.
    Ipv6Ipv6InIpv6WrongVersion = "ipv6.ipv6_in_ipv6_wrong_version",
    /// TCP: fewer than 20 bytes.
    TcpPktTooSmall = "tcp.pkt_too_small",
    /// TCP data offset below 5.
    TcpHlenTooSmall = "tcp.hlen_too_small",
    /// TCP header length beyond the segment.
    TcpInvalidOptlen = "tcp.invalid_optlen",
    /// TCP option whose length is wrong for its kind, or runs past the header.
    TcpOptInvalidLen = "tcp.opt_invalid_len",
    /// TCP option seen twice.
    TcpOptDuplicate = "tcp.opt_duplicate",
    /// UDP: fewer than 8 bytes.
    UdpHlenTooSmall = "udp.hlen_too_small",
    /// UDP length field beyond the datagram.
    UdpPktTooSmall = "udp.pkt_too_small",
    /// UDP length field not the datagram's length.
    UdpHlenInvalid = "udp.hlen_invalid",
    /// UDP length field below 8.
    UdpLenInvalid = "udp.len_invalid",
    /// ICMPv4: fewer than 8 bytes.
    Icmpv4PktTooSmall = "icmpv4.pkt_too_small",
    /// ICMPv4 message of a type Suricata's decoder does not know (not echo, destination unreachable, source
    /// quench, redirect, router advertisement, time exceeded, parameter problem, timestamp, information or address
    /// mask request or reply; a router solicitation included, as Suricata decides).
    Icmpv4UnknownType = "icmpv4.unknown_type",
    /// ICMPv4 message of a known type with a code its type does not have (an echo's other than 0, a destination
    /// unreachable's above 15, a redirect's above 3, a time exceeded's above 1, ...).
    Icmpv4UnknownCode = "icmpv4.unknown_code",
    /// ICMPv4 error quoting less than an IPv4 header, or a timestamp or router advertisement cut short.
    Icmpv4Ipv4TruncPkt = "icmpv4.ipv4_trunc_pkt",
    /// ICMPv4 error quoting a datagram whose version is not 4.
    Icmpv4Ipv4UnknownVer = "icmpv4.ipv4_unknown_ver",
    /// ICMPv6: fewer than 8 bytes.
    Icmpv6PktTooSmall = "icmpv6.pkt_too_small",
    /// ICMPv6 message of type 0 or 127 (neither assigned, unassigned nor experimental in Suricata's table).
    Icmpv6UnknownType = "icmpv6.unknown_type",
    /// ICMPv6 message of a known type with a code its type does not have.
    Icmpv6UnknownCode = "icmpv6.unknown_code",
    /// ICMPv6 error quoting less than an IPv6 header.
    Icmpv6Ipv6TruncPkt = "icmpv6.ipv6_trunc_pkt",
    /// ICMPv6 error quoting a packet whose version is not 6.
    Icmpv6Ipv6UnknownVersion = "icmpv6.ipv6_unknown_version",
    /// MLD query, report or done message whose hop limit is not 1.
    Icmpv6MldMessageWithInvalidHl = "icmpv6.mld_message_with_invalid_hl",
    /// ICMPv6 message of an unassigned type (5-99, 102-126, 160-199, 202-255).
    Icmpv6UnassignedType = "icmpv6.unassigned_type",
    /// ICMPv6 message of a type reserved for experimentation (100, 101, 200, 201).
    Icmpv6ExperimentationType = "icmpv6.experimentation_type",
    /// GRE header cut short.
    GrePktTooSmall = "gre.pkt_too_small",
    /// GRE version other than 0 and 1.
    GreWrongVersion = "gre.wrong_version",
    /// SCTP: fewer than 12 bytes (its common header).
    SctpPktTooSmall = "sctp.pkt_too_small",
}

impl DecodeEvent {
    /// The event named `name` (Suricata's spelling, ASCII case ignored).
    pub fn from_name(name: &str) -> Option<DecodeEvent> {
        Self::ALL
            .iter()
            .copied()
            .find(|e| e.name().eq_ignore_ascii_case(name))
    }
}

impl core::fmt::Display for DecodeEvent {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

const _: () = assert!(DecodeEvent::COUNT <= 128);

impl EventKind for DecodeEvent {
    const ALL: &'static [DecodeEvent] = DecodeEvent::ALL;
    #[inline]
    fn index(self) -> usize {
        self as usize
    }
}

/// A set of [`DecodeEvent`]s (see [`EventSet`]), in two words.
pub type DecodeEvents = EventSet<DecodeEvent, 2>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_again() {
        for (i, e) in DecodeEvent::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i);
            assert_eq!(DecodeEvent::from_name(e.name()), Some(*e));
            assert!(
                DecodeEvent::ALL[..i].iter().all(|o| o.name() != e.name()),
                "{e} twice"
            );
        }
        assert_eq!(
            DecodeEvent::from_name("IPV6.FRAG_OVERLAP"),
            Some(DecodeEvent::Ipv6FragOverlap)
        );
        assert_eq!(DecodeEvent::from_name("ipv6.no_such_event"), None);
    }

    #[test]
    fn set_holds_what_was_added() {
        let mut s = DecodeEvents::default();
        assert!(s.is_empty());
        s.set(DecodeEvent::TcpOptDuplicate);
        s.set(DecodeEvent::EthernetPktTooSmall);
        let last = *DecodeEvent::ALL.last().unwrap();
        // The list is longer than one word: its last event lives in the second.
        assert!(last as usize >= 64);
        assert!(!s.contains(last));
        s.set(last);
        assert!(!s.contains(DecodeEvent::ALL[last as usize - 64]));
        assert!(s.contains(DecodeEvent::TcpOptDuplicate) && s.contains(last));
        assert!(!s.contains(DecodeEvent::Ipv6FragOverlap));
        let v: Vec<_> = s.iter().collect();
        assert_eq!(
            v,
            vec![
                DecodeEvent::EthernetPktTooSmall,
                DecodeEvent::TcpOptDuplicate,
                last
            ]
        );
        assert_eq!(v.into_iter().collect::<DecodeEvents>(), s);
    }
}
