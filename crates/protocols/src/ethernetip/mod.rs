//! EtherNet/IP encapsulation (CIP over TCP 44818): nDPI's `EthernetIP`.
//!
//! A 24-byte little-endian header: command (NOP, ListServices, ListIdentity, ListInterfaces, RegisterSession,
//! UnRegisterSession, SendRRData, SendUnitData, IndicateStatus, Cancel), the length of the data after the header,
//! session handle, status, sender context and options. Command plus exact length are certain.

use crate::scan::{le16, le32};
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for EthernetIP.
pub struct EthernetIpDetector;

impl Detector for EthernetIpDetector {
    fn proto(&self) -> AppProto {
        AppProto::EthernetIp
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let d = ctx.prefix;
        let (Some(cmd), Some(len)) = (le16(d, 0), le16(d, 2)) else {
            return Probe::Unsure;
        };
        let known = matches!(
            cmd,
            0x0000 | 0x0004 | 0x0063 | 0x0064 | 0x0065 | 0x0066 | 0x006f | 0x0070 | 0x0072 | 0x0073
        );
        if !known {
            return Probe::NotForUs;
        }
        match d.len().cmp(&(usize::from(len) + 24)) {
            std::cmp::Ordering::Equal if d.len() >= 24 && le32(d, 20) == Some(0) => Probe::Certain,
            std::cmp::Ordering::Less if d.len() < 24 => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;

    #[allow(non_upper_case_globals)]
    const Det: EthernetIpDetector = EthernetIpDetector;

    #[test]
    fn recognises_real_shapes() {
        let mut m = vec![0x70, 0x00, 0x04, 0x00];
        m.extend_from_slice(&[0u8; 20]);
        m.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &m)),
            Probe::Certain
        );
        m.push(0);
        assert_eq!(
            Det.probe(&crate::testkit::ctx_tcp(Direction::ToServer, &m)),
            Probe::NotForUs
        );
    }
}
