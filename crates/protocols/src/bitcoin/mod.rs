//! The Bitcoin peer-to-peer protocol: nDPI's `BITCOIN`.
//!
//! Every message starts with the network magic (`f9 be b4 d9` mainnet, `0b 11 09 07` testnet3, `fa bf b5 da`
//! regtest, `0a 03 cf 40` signet) and a 12-byte NUL-padded ASCII command (`version`, `verack`, ...). Magic and
//! command are certain.

use crate::{AppProto, Detector, Probe, ProbeCtx};

/// Detector for BITCOIN.
pub struct BitcoinDetector;

impl Detector for BitcoinDetector {
    fn proto(&self) -> AppProto {
        AppProto::Bitcoin
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        let p = ctx.prefix;
        const MAGICS: [[u8; 4]; 4] = [
            [0xf9, 0xbe, 0xb4, 0xd9],
            [0x0b, 0x11, 0x09, 0x07],
            [0xfa, 0xbf, 0xb5, 0xda],
            [0x0a, 0x03, 0xcf, 0x40],
        ];
        let n = p.len().min(4);
        if !MAGICS.iter().any(|m| m[..n] == p[..n]) {
            return Probe::NotForUs;
        }
        let Some(cmd) = p.get(4..16) else {
            return Probe::Unsure;
        };
        let name_len = cmd.iter().position(|&b| b == 0).unwrap_or(12);
        let ok = name_len > 0
            && cmd[..name_len].iter().all(u8::is_ascii_lowercase)
            && cmd[name_len..].iter().all(|&b| b == 0);
        if ok { Probe::Certain } else { Probe::NotForUs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::testkit::ctx_tcp;

    #[allow(non_upper_case_globals)]
    const Det: BitcoinDetector = BitcoinDetector;

    #[test]
    fn recognises_real_shapes() {
        let d = b"\xf9\xbe\xb4\xd9version\x00\x00\x00\x00\x00\x55\x00\x00\x00";
        assert_eq!(Det.probe(&ctx_tcp(Direction::ToServer, d)), Probe::Certain);
        assert_eq!(
            Det.probe(&ctx_tcp(Direction::ToServer, &d[..6])),
            Probe::Unsure
        );
        assert_eq!(
            Det.probe(&ctx_tcp(
                Direction::ToServer,
                b"\xf9\xbe\xb4\xd9VERSION\x00\x00\x00\x00\x00"
            )),
            Probe::NotForUs
        );
    }
}
