//! The transport protocol a packet or flow travels over.

/// Transport protocol of a packet or flow, from the IP protocol number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Transport {
    Tcp,
    Udp,
    /// ICMP or ICMPv6.
    Icmp,
    /// Any other IP protocol, by number.
    Other(u8),
}

impl Transport {
    /// The transport of IP protocol number `proto` (6 TCP, 17 UDP, 1 and 58 ICMP).
    #[inline]
    pub fn from_ip_proto(proto: u8) -> Transport {
        match proto {
            6 => Transport::Tcp,
            17 => Transport::Udp,
            1 | 58 => Transport::Icmp,
            n => Transport::Other(n),
        }
    }

    /// Whether payloads of this transport are a byte stream (reassembled) rather than datagrams.
    #[inline]
    pub fn is_stream(self) -> bool {
        self == Transport::Tcp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_protocol_numbers_map_to_transports() {
        assert_eq!(Transport::from_ip_proto(6), Transport::Tcp);
        assert_eq!(Transport::from_ip_proto(17), Transport::Udp);
        assert_eq!(Transport::from_ip_proto(1), Transport::Icmp);
        assert_eq!(Transport::from_ip_proto(58), Transport::Icmp);
        assert_eq!(Transport::from_ip_proto(132), Transport::Other(132));
        assert!(Transport::Tcp.is_stream() && !Transport::Udp.is_stream());
    }
}
