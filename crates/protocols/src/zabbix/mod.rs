//! Zabbix agent/server protocol: nDPI's `Zabbix`.
//!
//! Every message is framed by the 4-byte signature `ZBXD` and a flags byte (`0x01` plain, `0x02`/`0x03`
//! compressed, `0x04`/`0x05` large). Five fixed bytes at offset 0 are certain.

use crate::scan::{Lit, lit_ci};
use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for Zabbix.
pub struct ZabbixDetector;

impl Detector for ZabbixDetector {
    fn proto(&self) -> AppProto {
        AppProto::Zabbix
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        match lit_ci(p, b"ZBXD") {
            Lit::Yes if p.starts_with(b"ZBXD") => match p.get(4) {
                Some(1..=7) => Probe::Certain,
                None => Probe::Unsure,
                Some(_) => Probe::NotForUs,
            },
            Lit::Maybe => Probe::Unsure,
            _ => Probe::NotForUs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[test]
    fn header() {
        let m = b"ZBXD\x01\x0a\x00\x00\x00\x00\x00\x00\x00agent.ping";
        assert_eq!(
            ZabbixDetector.probe(&ctx_tcp(Direction::ToServer, m)),
            Probe::Certain
        );
        assert_eq!(
            ZabbixDetector.probe(&ctx_tcp(Direction::ToServer, b"ZB")),
            Probe::Unsure
        );
        assert_eq!(
            ZabbixDetector.probe(&ctx_tcp(Direction::ToServer, b"ZBXD\x09")),
            Probe::NotForUs
        );
    }
}
