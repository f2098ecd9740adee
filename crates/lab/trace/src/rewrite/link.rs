//! Turning other link types into Ethernet, so that captures of different link types can be merged into one
//! classic pcap file (which has a single link type).
//!
//! Raw IP (LINKTYPE_RAW, IPV4, IPV6 and the BSD DLT_RAW numbers), BSD loopback (NULL, LOOP) and Linux cooked
//! captures (SLL, SLL2) all carry an EtherType or enough to derive one; the link header is replaced by a 14-byte
//! Ethernet header with locally administered MAC addresses (`02:00:00:00:00:01` → `02:00:00:00:00:02`; SLL's
//! sender address is used as the source when it is a 6-byte MAC). Nothing above the link layer changes, so flows,
//! checksums and lengths stay as they were.

use flowbundle_decode::wire::{ethertype, null, sll, sll2};
use flowbundle_ingest::LinkType;

/// Source MAC given to converted frames that carry no sender address.
pub const CONVERTED_SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// Destination MAC given to converted frames.
pub const CONVERTED_DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// Writes `data` (a frame of link type `link`) as an Ethernet frame into `out`. Returns the change in length
/// (bytes added, negative when the old link header was longer), or `None` when the link type cannot be converted
/// or the header is cut short. Ethernet input is copied unchanged.
pub fn to_ethernet(link: LinkType, data: &[u8], out: &mut Vec<u8>) -> Option<i64> {
    let (src, et, payload): ([u8; 6], u16, &[u8]) = match link {
        LinkType::ETHERNET => {
            out.clear();
            out.extend_from_slice(data);
            return Some(0);
        }
        LinkType::RAW | LinkType::RAW_BSD12 | LinkType::RAW_BSD14 => {
            let et = match data.first().map(|b| b >> 4) {
                Some(4) => ethertype::IPV4,
                Some(6) => ethertype::IPV6,
                _ => return None,
            };
            (CONVERTED_SRC_MAC, et, data)
        }
        LinkType::IPV4 => (CONVERTED_SRC_MAC, ethertype::IPV4, data),
        LinkType::IPV6 => (CONVERTED_SRC_MAC, ethertype::IPV6, data),
        LinkType::NULL | LinkType::LOOP => {
            let h = if link == LinkType::NULL {
                null::Header::new_checked_null(data)
            } else {
                null::Header::new_checked_loop(data)
            }
            .ok()?;
            let et = match h.family() {
                null::Family::Ipv4 => ethertype::IPV4,
                null::Family::Ipv6 => ethertype::IPV6,
                null::Family::Other(_) => return None,
            };
            (CONVERTED_SRC_MAC, et, data.get(null::HEADER_LEN..)?)
        }
        LinkType::LINUX_SLL => {
            let h = sll::Header::new_checked(data).ok()?;
            let mut src = CONVERTED_SRC_MAC;
            if h.addr_len() == 6
                && let Some(a) = h.addr().get(..6)
            {
                src.copy_from_slice(a);
            }
            (src, h.protocol(), data.get(sll::HEADER_LEN..)?)
        }
        LinkType::LINUX_SLL2 => {
            let h = sll2::Header::new_checked(data).ok()?;
            let mut src = CONVERTED_SRC_MAC;
            if h.addr_len() == 6
                && let Some(a) = h.addr().get(..6)
            {
                src.copy_from_slice(a);
            }
            (src, h.protocol(), data.get(sll2::HEADER_LEN..)?)
        }
        _ => return None,
    };
    // An SLL protocol below 0x0600 is not an EtherType (802.2 frames, CAN, ...): nothing to put in Ethernet II.
    if et < 0x0600 {
        return None;
    }
    out.clear();
    out.extend_from_slice(&CONVERTED_DST_MAC);
    out.extend_from_slice(&src);
    out.extend_from_slice(&et.to_be_bytes());
    out.extend_from_slice(payload);
    Some(out.len() as i64 - data.len() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flowbundle_decode::{DecodeOptions, decode_bytes};

    const IPV4_UDP: [u8; 28] = [
        0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 53, 0,
        8, 0, 0,
    ];

    #[test]
    fn raw_ip_gets_an_ethernet_header_and_decodes_the_same() {
        let mut out = Vec::new();
        assert_eq!(to_ethernet(LinkType::RAW, &IPV4_UDP, &mut out), Some(14));
        let a = decode_bytes(LinkType::RAW, &IPV4_UDP, &DecodeOptions::default());
        let b = decode_bytes(LinkType::ETHERNET, &out, &DecodeOptions::default());
        assert_eq!(a.ip, b.ip);
        assert_eq!(a.ports(), b.ports());
    }

    #[test]
    fn loopback_and_cooked_headers_are_replaced() {
        let mut null = vec![2, 0, 0, 0];
        null.extend_from_slice(&IPV4_UDP);
        let mut out = Vec::new();
        assert_eq!(to_ethernet(LinkType::NULL, &null, &mut out), Some(10));
        assert_eq!(&out[12..14], &[0x08, 0x00]);
        let mut sll = vec![0, 0, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00];
        sll.extend_from_slice(&IPV4_UDP);
        assert_eq!(to_ethernet(LinkType::LINUX_SLL, &sll, &mut out), Some(-2));
        assert_eq!(&out[6..12], &[1, 2, 3, 4, 5, 6]);
        assert_eq!(&out[14..], &IPV4_UDP);
    }

    #[test]
    fn unknown_or_short_input_is_refused() {
        let mut out = Vec::new();
        assert_eq!(to_ethernet(LinkType(147), &IPV4_UDP, &mut out), None);
        assert_eq!(to_ethernet(LinkType::RAW, &[], &mut out), None);
        assert_eq!(to_ethernet(LinkType::LINUX_SLL, &[0; 5], &mut out), None);
    }
}
