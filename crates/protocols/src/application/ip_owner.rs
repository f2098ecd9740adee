//! The organisation that holds an address: the weakest evidence of a flow's application (nDPI's `[IP: ...]`).
//!
//! The prefixes live in `crates/protocols/data/ip-owners.txt`, one block per organisation with the published list
//! or the BGP announcements they come from. The build script turns them into two tables (IPv4, IPv6) of sorted,
//! disjoint address ranges, each owned by the longest prefix that covers it, so a lookup is one binary search
//! over a few hundred entries in static memory: no allocation, no parsing at run time, and the longest-prefix
//! rule is settled once at build time rather than per lookup (a trie would do the same work per packet bit).
//!
//! ## How the engine uses it
//! Only for a flow whose payload named no application (no host name, no service named by content): a host name
//! that names no listed service is evidence that the flow is another tenant of the network (a customer's site on
//! a cloud provider), which an address cannot outweigh. And only for the application beside the master protocol,
//! never the protocol itself, so it cannot make a flow's protocol wrong. Real-time media (STUN, DTLS, RTP, SRTP,
//! RTCP) to an organisation with a calling service is named after that service (`STUN.WhatsAppCall` for Meta's
//! relays, `DTLS.GoogleCall` for Google Meet's).

use std::net::IpAddr;

use crate::AppProto;

include!(concat!(env!("OUT_DIR"), "/ip_owners.rs"));

/// The organisation an address belongs to and its calling service, if the address is in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    /// The organisation as nDPI names the application (`Google`, `Facebook`, `AmazonAWS`).
    pub name: &'static str,
    /// The organisation's calling service (`GoogleCall`, `WhatsAppCall`), named for real-time media flows.
    pub calls: Option<&'static str>,
}

impl Owner {
    /// The application to name for a flow of master protocol `proto` to this owner's address: the calling service
    /// for real-time media, else the organisation.
    pub fn application_for(&self, proto: AppProto) -> &'static str {
        match proto {
            AppProto::Stun | AppProto::Dtls | AppProto::Rtp | AppProto::Srtp | AppProto::Rtcp => {
                self.calls.unwrap_or(self.name)
            }
            _ => self.name,
        }
    }
}

/// The owner of `addr` (an IPv4-mapped IPv6 address is looked up as IPv4). One binary search.
pub fn owner(addr: IpAddr) -> Option<Owner> {
    let k = match addr {
        IpAddr::V4(a) => find(V4, u32::from(a))?,
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(a4) => find(V4, u32::from(a4))?,
            None => find(V6, u128::from(a))?,
        },
    };
    ORGS.get(usize::from(k))
        .map(|&(name, calls)| Owner { name, calls })
}

/// The organisation index of the range holding `x`.
fn find<T: Copy + Ord>(ranges: &[(T, T, u16)], x: T) -> Option<u16> {
    let i = ranges.partition_point(|r| r.0 <= x);
    let r = ranges.get(i.checked_sub(1)?)?;
    (x <= r.1).then_some(r.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(a: &str) -> Option<&'static str> {
        owner(a.parse().unwrap()).map(|o| o.name)
    }

    #[test]
    fn tables_are_sorted_disjoint_and_name_known_organisations() {
        for w in V4.windows(2) {
            assert!(w[0].1 < w[1].0, "{w:x?}");
        }
        for w in V6.windows(2) {
            assert!(w[0].1 < w[1].0, "{w:x?}");
        }
        for &(lo, hi, k) in V4 {
            assert!(lo <= hi && usize::from(k) < ORGS.len());
        }
        for &(lo, hi, k) in V6 {
            assert!(lo <= hi && usize::from(k) < ORGS.len());
        }
    }

    #[test]
    fn addresses_inside_and_at_the_edges_of_prefixes() {
        assert_eq!(name("8.8.8.8"), Some("Google"));
        assert_eq!(name("8.8.8.0"), Some("Google"));
        assert_eq!(name("8.8.8.255"), Some("Google"));
        assert_eq!(name("8.8.9.0"), None);
        assert_eq!(name("157.240.1.35"), Some("Facebook"));
        assert_eq!(name("17.253.144.10"), Some("Apple"));
        assert_eq!(name("2a03:2880:f12f:83:face:b00c::25de"), Some("Facebook"));
        assert_eq!(name("2a00:1450:4007:805::2004"), Some("Google"));
        assert_eq!(name("::ffff:8.8.4.4"), Some("Google"));
        assert_eq!(name("192.168.1.1"), None);
        assert_eq!(name("10.0.0.1"), None);
        assert_eq!(name("0.0.0.0"), None);
        assert_eq!(name("255.255.255.255"), None);
        assert_eq!(name("::"), None);
        assert_eq!(name("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), None);
    }

    #[test]
    fn the_longest_prefix_wins() {
        // Zoom's 3.7.35.0/25 lies inside AWS's 3.0.0.0/8.
        assert_eq!(name("3.7.35.1"), Some("Zoom"));
        assert_eq!(name("3.7.35.128"), Some("AmazonAWS"));
        assert_eq!(name("3.7.34.255"), Some("AmazonAWS"));
        // Exchange Online's 40.96.0.0/13 inside Azure's 40.64.0.0/13 neighbour, not inside: both named apart.
        assert_eq!(name("40.97.160.2"), Some("Outlook"));
    }

    #[test]
    fn media_flows_name_the_calling_service() {
        let fb = owner("157.240.20.52".parse().unwrap()).unwrap();
        assert_eq!(fb.application_for(AppProto::Stun), "WhatsAppCall");
        assert_eq!(fb.application_for(AppProto::Tls), "Facebook");
        let aws = owner("54.230.1.1".parse().unwrap()).unwrap();
        assert_eq!(aws.application_for(AppProto::Stun), "AmazonAWS");
    }
}
