//! Cryptocurrency mining pools' Stratum protocol (JSON-RPC lines over TCP): nDPI's `Mining`.
//!
//! Stratum (the Bitcoin pool protocol, and the Ethereum and CryptoNote variants miners use) is newline-delimited
//! JSON-RPC. A miner opens with a request whose method is Stratum's own: `mining.subscribe`, `mining.authorize`,
//! `mining.submit`, ... (Bitcoin), `eth_submitLogin`, `eth_getWork`, `eth_submitWork`, `eth_submitHashrate`
//! (Ethereum proxies), or `login` with a wallet `login` and a `pass` (CryptoNote pools). A JSON object on the
//! client's first line naming one of these methods is certain.

use crate::scan::find;
use crate::{AppProto, ByteSet, Detector, Direction, Probe, ProbeCtx};

/// Method names only mining pools use.
const METHODS: &[&[u8]] = &[
    b"\"mining.",
    b"\"eth_submitLogin\"",
    b"\"eth_getWork\"",
    b"\"eth_submitWork\"",
    b"\"eth_submitHashrate\"",
];

/// Detector for Stratum.
pub struct StratumDetector;

impl Detector for StratumDetector {
    fn proto(&self) -> AppProto {
        AppProto::Mining
    }
    fn first_bytes(&self) -> ByteSet {
        ByteSet::bytes(b"{")
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        if ctx.dir != Direction::ToServer {
            return Probe::NotForUs;
        }
        let d = ctx.prefix;
        if d.first() != Some(&b'{') {
            return Probe::NotForUs;
        }
        let Some(end) = d.iter().position(|&b| b == b'\n') else {
            return if d.len() < 2048 {
                Probe::Unsure
            } else {
                Probe::NotForUs
            };
        };
        let line = &d[..end];
        let Some(m) = find(line, b"\"method\"") else {
            return Probe::NotForUs;
        };
        let value = line[m + 8..]
            .iter()
            .position(|&b| b == b'"')
            .map_or(&[][..], |q| &line[m + 8 + q..]);
        let stratum = METHODS.iter().any(|k| value.starts_with(k))
            || (value.starts_with(b"\"login\"")
                && find(line, b"\"login\":").is_some()
                && find(line, b"\"pass\"").is_some());
        if stratum && find(line, b"\"params\"").is_some() {
            Probe::Certain
        } else {
            Probe::NotForUs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::ctx_tcp;

    fn probe(d: &[u8]) -> Probe {
        StratumDetector.probe(&ctx_tcp(Direction::ToServer, d))
    }

    #[test]
    fn pool_requests() {
        assert_eq!(
            probe(b"{\"id\": 1, \"method\": \"mining.subscribe\", \"params\": [\"miner/1.0\"]}\n"),
            Probe::Certain
        );
        assert_eq!(
            probe(b"{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"eth_submitLogin\",\"params\":[\"0xabc\"]}\n"),
            Probe::Certain
        );
        assert_eq!(
            probe(b"{\"method\":\"login\",\"params\":{\"login\":\"4abc\",\"pass\":\"x\",\"agent\":\"m/1\"},\"id\":1}\n"),
            Probe::Certain
        );
        assert_eq!(probe(b"{\"id\": 1, \"method\": \"mining."), Probe::Unsure);
        assert_eq!(
            probe(b"{\"id\":1,\"method\":\"eth_getBalance\",\"params\":[]}\n"),
            Probe::NotForUs
        );
        assert_eq!(
            probe(b"{\"method\":\"login\",\"params\":{\"user\":\"a\"}}\n"),
            Probe::NotForUs
        );
    }
}
