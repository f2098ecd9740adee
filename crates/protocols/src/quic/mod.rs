//! QUIC: detection of long-header Initial packets (IETF v1 and v2, drafts, Facebook mvfst, Google QUIC), and
//! decryption of the client's Initial packets to read the ClientHello (SNI, ALPN, JA3/JA4) into an EVE `quic`
//! event.
//!
//! ## Detection
//! A client opens with a long-header packet (`1x` top bits) whose version we know and whose packet type is
//! Initial (type bits 0 in v1 and drafts, 1 in v2), with connection-id lengths that fit. Google QUIC before Q046
//! uses its own public header (flags with the version bit, an 8-byte connection id, `Q0xx`). One datagram
//! decides; nothing is decrypted while probing.
//!
//! ## Decryption (RFC 9001 §5, and RFC 9369 for v2)
//! The Initial keys are public: `initial_secret = HKDF-Extract(salt(version), DCID)`, then `client in` →
//! `quic key` / `quic iv` / `quic hp` (`quicv2 ...` for v2) with HKDF-Expand-Label over SHA-256. Header protection
//! is removed with AES-128-ECB on a 16-byte sample taken 4 bytes after the packet-number offset, then the payload
//! is opened with AES-128-GCM (nonce = iv XOR packet number, AAD = the unprotected header). The payload's CRYPTO
//! frames are placed at their offsets in a reassembly buffer (capped at [`crate::Limits::quic_crypto_cap`]): they
//! can arrive out of order within a packet and across packets (a post-quantum ClientHello spans two Initials).
//! Once the ClientHello is contiguous it is parsed by [`crate::tls::parse_client_hello`]. gQUIC Q050 (encrypted
//! Initials with a `CHLO` inside) and Q043/Q046 (cleartext `CHLO`) yield the SNI and user agent from the CHLO tags;
//! a cleartext `CHLO` also its CYU fingerprint ([`Chlo::cyu`]), and each one the client sends (up to
//! [`MAX_CLEARTEXT_CHLOS`]) is an event of its own, as Suricata makes a transaction of each.
//!
//! ## Layout
//! This file holds the detector; `version.rs` the version families and salts, `packet.rs` the headers,
//! `crypto.rs` the Initial keys and decryption, `hello.rs` the ClientHello/CHLO fields and the EVE `quic` event,
//! `parser.rs` the per-flow CRYPTO reassembly.
//!
//! ## Cost
//! Decryption happens in the parser, only for the first client datagrams of an identified QUIC flow (at most
//! [`MAX_INITIALS`] packets); later packets cost a header check. Per flow: one reassembly buffer, grown on use.

use crate::tls::{ClientHello, Ja3, parse_client_hello};
use crate::{
    AppEvent, AppProto, ByteSet, Detector, Direction, EventSink, Limits, Parser, ParserStats,
    Probe, ProbeCtx, Transport,
};

mod crypto;
mod hello;
mod packet;
mod parser;
mod version;

pub use crypto::*;
pub use hello::*;
pub use packet::*;
pub use parser::*;
pub use version::*;

/// Client Initial packets the parser tries to decrypt before giving up on a flow.
pub const MAX_INITIALS: u32 = 8;
/// Cleartext gQUIC client hellos (`CHLO`) read per flow, each an event of its own (the first is often rejected and
/// sent again with the server's token).
pub const MAX_CLEARTEXT_CHLOS: u32 = 4;

/// Judges one datagram: an Initial with a known version, or a gQUIC public header with a version.
pub fn probe_quic(d: &[u8]) -> Probe {
    let Some(&first) = d.first() else {
        return Probe::NotForUs;
    };
    if first & 0x80 != 0 {
        // Long header (IETF and gQUIC Q046+).
        let Some(v) = d
            .get(1..5)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        else {
            return Probe::NotForUs;
        };
        return match family(v) {
            Some(Family::GoogleLong) => {
                // Q046: 0xc3 with both connection-id length nibbles in one byte (client sends DCID 8).
                if d.len() >= 1200 || d.get(5) == Some(&0x50) {
                    Probe::Certain
                } else {
                    Probe::NotForUs
                }
            }
            // Any long-header packet of a known version: a client's 0-RTT may overtake its Initial, and a flow
            // may be picked up from the server's Initial or Handshake.
            Some(_) => match parse_long_header(d) {
                Some(_) if first & 0x40 != 0 => Probe::Certain,
                _ => Probe::NotForUs,
            },
            None => Probe::NotForUs,
        };
    }
    // gQUIC public header: flags 0x01 (version present) with 0x08 (8-byte connection id), reserved bit 0x80 clear.
    if first & 0x09 == 0x09
        && first & 0x40 == 0
        && let Some(v) = d
            .get(9..13)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        && matches!(family(v), Some(Family::GoogleLegacy))
    {
        return Probe::Certain;
    }
    Probe::NotForUs
}

/// Shortest short-header packet considered: 1 byte, an 8-byte DCID, a packet number and a 16-byte tag.
const MIN_SHORT: usize = 26;

/// A flow picked up after its handshake carries only short-header packets (`01xx xxxx`), whose connection id is
/// not self-describing. On port 443 two consecutive datagrams of one direction with the fixed bit set and the
/// same 8 bytes after the first decide (the destination connection id does not change between packets).
fn probe_short_header(ctx: &ProbeCtx<'_>) -> Probe {
    let d = ctx.data;
    if !ctx.either_port_is(443) || d.len() < MIN_SHORT || d[0] & 0xc0 != 0x40 {
        return Probe::NotForUs;
    }
    let p = ctx.prev;
    if p.is_empty() {
        return Probe::Unsure;
    }
    if p.len() >= MIN_SHORT && p[0] & 0xc0 == 0x40 && p.get(1..9) == d.get(1..9) {
        Probe::Certain
    } else {
        Probe::NotForUs
    }
}

/// Long headers (`1xxx xxxx`), short headers (`01xx xxxx`), and gQUIC public headers with the version and
/// connection-id flags (`0x09`) set.
const QUIC_FIRST_BYTES: ByteSet = {
    let mut words = [0u64; 4];
    let mut b = 0usize;
    while b < 256 {
        if b >= 0x40 || b & 0x09 == 0x09 {
            words[b / 64] |= 1 << (b % 64);
        }
        b += 1;
    }
    ByteSet(words)
};

/// QUIC over UDP.
#[derive(Clone, Copy, Debug, Default)]
pub struct QuicDetector;

impl Detector for QuicDetector {
    fn proto(&self) -> AppProto {
        AppProto::Quic
    }
    fn first_bytes(&self) -> ByteSet {
        QUIC_FIRST_BYTES
    }
    fn probe(&self, ctx: &ProbeCtx<'_>) -> Probe {
        match probe_quic(ctx.data) {
            Probe::NotForUs => probe_short_header(ctx),
            v => v,
        }
    }
    fn parser(&self, _t: Transport, limits: &Limits) -> Option<Box<dyn Parser>> {
        Some(Box::new(QuicParser::new(limits)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    const DCID: &str = "8394c8f03e515708";

    /// RFC 9001 Appendix A.2: the unprotected CRYPTO frame of the client's first Initial (then 917 bytes of
    /// PADDING).
    const CLIENT_FRAMES: &str = "\
        060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e868\
        04fe3a47f06a2b69484c00000413011302010000c000000010000e00000b6578\
        616d706c652e636f6dff01000100000a00080006001d00170018001000070005\
        04616c706e000500050100000000003300260024001d00209370b2c9caa47fba\
        baf4559fedba753de171fa71f50f1ce15d43e994ec74d748002b000302030400\
        0d0010000e0403050306030203080408050806002d00020101001c0002400100\
        3900320408ffffffffffffffff05048000ffff07048000ffff08011001048000\
        75300901100f088394c8f03e51570806048000ffff";

    /// RFC 9001 Appendix A.2: the protected client Initial (1200 bytes).
    const V1_CLIENT_INITIAL: &str = "\
        c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11\
        d242b123dc9bd8bab936b47d92ec356c0bab7df5976d27cd449f63300099f399\
        1c260ec4c60d17b31f8429157bb35a1282a643a8d2262cad67500cadb8e7378c\
        8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6005f80fcb7df6212\
        30c83711b39343fa028cea7f7fb5ff89eac2308249a02252155e2347b63d58c5\
        457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c208\
        4dce25ff9b06cde535d0f920a2db1bf362c23e596d11a4f5a6cf3948838a3aec\
        4e15daf8500a6ef69ec4e3feb6b1d98e610ac8b7ec3faf6ad760b7bad1db4ba3\
        485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e30c5c4287e53805db\
        059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c\
        7b4378e846d29f37ed7b4ea9ec5d82e7961b7f25a9323851f681d582363aa5f8\
        9937f5a67258bf63ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556\
        be52afe3f565636ad1b17d508b73d8743eeb524be22b3dcbc2c7468d54119c74\
        68449a13d8e3b95811a198f3491de3e7fe942b330407abf82a4ed7c1b311663a\
        c69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00\
        f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632\
        291d6a418211cc2962e20fe47feb3edf330f2c603a9d48c0fcb5699dbfe58964\
        25c5bac4aee82e57a85aaf4e2513e4f05796b07ba2ee47d80506f8d2c25e50fd\
        14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c1f28ff18f58891ff\
        ef132eef2fa09346aee33c28eb130ff28f5b766953334113211996d20011a198\
        e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009dd\
        c324044e847a4f4a0ab34f719595de37252d6235365e9b84392b061085349d73\
        203a4a13e96f5432ec0fd4a1ee65accdd5e3904df54c1da510b0ff20dcc0c77f\
        cb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de354270123cb11450e\
        fc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03ade\
        a2e1fbc5aa463d08ca19896d2bf59a071b851e6c239052172f296bfb5e724047\
        90a2181014f3b94a4e97d117b438130368cc39dbb2d198065ae3986547926cd2\
        162f40a29f0c3c8745c0f50fba3852e566d44575c29d39a03f0cda721984b6f4\
        40591f355e12d439ff150aab7613499dbd49adabc8676eef023b15b65bfc5ca0\
        6948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e\
        8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0\
        be79e2fb8f5d5fbbe2e30ecadd220723c8c0aea8078cdfcb3868263ff8f09400\
        54da48781893a7e49ad5aff4af300cd804a6b6279ab3ff3afb64491c85194aab\
        760d58a606654f9f4400e8b38591356fbf6425aca26dc85244259ff2b19c41b9\
        f96f3ca9ec1dde434da7d2d392b905ddf3d1f9af93d1af5950bd493f5aa731b4\
        056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd4684064\
        7e78bfe706ca4cf5e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f9474241\
        e221af44860018ab0856972e194cd934";

    /// RFC 9369 Appendix A.2: the same ClientHello in a QUIC v2 Initial.
    const V2_CLIENT_INITIAL: &str = "\
        d76b3343cf088394c8f03e5157080000449ea0c95e82ffe67b6abcdb4298b485\
        dd04de806071bf03dceebfa162e75d6c96058bdbfb127cdfcbf903388e99ad04\
        9f9a3dd4425ae4d0992cfff18ecf0fdb5a842d09747052f17ac2053d21f57c5d\
        250f2c4f0e0202b70785b7946e992e58a59ac52dea6774d4f03b55545243cf1a\
        12834e3f249a78d395e0d18f4d766004f1a2674802a747eaa901c3f10cda5500\
        cb9122faa9f1df66c392079a1b40f0de1c6054196a11cbea40afb6ef5253cd68\
        18f6625efce3b6def6ba7e4b37a40f7732e093daa7d52190935b8da58976ff33\
        12ae50b187c1433c0f028edcc4c2838b6a9bfc226ca4b4530e7a4ccee1bfa2a3\
        d396ae5a3fb512384b2fdd851f784a65e03f2c4fbe11a53c7777c023462239dd\
        6f7521a3f6c7d5dd3ec9b3f233773d4b46d23cc375eb198c63301c21801f6520\
        bcfb7966fc49b393f0061d974a2706df8c4a9449f11d7f3d2dcbb90c6b877045\
        636e7c0c0fe4eb0f697545460c806910d2c355f1d253bc9d2452aaa549e27a1f\
        ac7cf4ed77f322e8fa894b6a83810a34b361901751a6f5eb65a0326e07de7c12\
        16ccce2d0193f958bb3850a833f7ae432b65bc5a53975c155aa4bcb4f7b2c4e5\
        4df16efaf6ddea94e2c50b4cd1dfe06017e0e9d02900cffe1935e0491d77ffb4\
        fdf85290fdd893d577b1131a610ef6a5c32b2ee0293617a37cbb08b847741c3b\
        8017c25ca9052ca1079d8b78aebd47876d330a30f6a8c6d61dd1ab5589329de7\
        14d19d61370f8149748c72f132f0fc99f34d766c6938597040d8f9e2bb522ff9\
        9c63a344d6a2ae8aa8e51b7b90a4a806105fcbca31506c446151adfeceb51b91\
        abfe43960977c87471cf9ad4074d30e10d6a7f03c63bd5d4317f68ff325ba3bd\
        80bf4dc8b52a0ba031758022eb025cdd770b44d6d6cf0670f4e990b22347a7db\
        848265e3e5eb72dfe8299ad7481a408322cac55786e52f633b2fb6b614eaed18\
        d703dd84045a274ae8bfa73379661388d6991fe39b0d93debb41700b41f90a15\
        c4d526250235ddcd6776fc77bc97e7a417ebcb31600d01e57f32162a8560cacc\
        7e27a096d37a1a86952ec71bd89a3e9a30a2a26162984d7740f81193e8238e61\
        f6b5b984d4d3dfa033c1bb7e4f0037febf406d91c0dccf32acf423cfa1e70710\
        10d3f270121b493ce85054ef58bada42310138fe081adb04e2bd901f2f13458b\
        3d6758158197107c14ebb193230cd1157380aa79cae1374a7c1e5bbcb80ee23e\
        06ebfde206bfb0fcbc0edc4ebec309661bdd908d532eb0c6adc38b7ca7331dce\
        8dfce39ab71e7c32d318d136b6100671a1ae6a6600e3899f31f0eed19e3417d1\
        34b90c9058f8632c798d4490da4987307cba922d61c39805d072b589bd52fdf1\
        e86215c2d54e6670e07383a27bbffb5addf47d66aa85a0c6f9f32e59d85a44dd\
        5d3b22dc2be80919b490437ae4f36a0ae55edf1d0b5cb4e9a3ecabee93dfc6e3\
        8d209d0fa6536d27a5d6fbb17641cde27525d61093f1b28072d111b2b4ae5f89\
        d5974ee12e5cf7d5da4d6a31123041f33e61407e76cffcdcfd7e19ba58cf4b53\
        6f4c4938ae79324dc402894b44faf8afbab35282ab659d13c93f70412e85cb19\
        9a37ddec600545473cfb5a05e08d0b209973b2172b4d21fb69745a262ccde96b\
        a18b2faa745b6fe189cf772a9f84cbfc";

    /// RFC 9001 Appendix A.3: the server's Initial (ServerHello), protected with the server keys.
    const V1_SERVER_INITIAL: &str = "\
        cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a\
        5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3\
        dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84\
        022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4\
        2158407dd074ee";

    #[test]
    fn rfc9001_initial_keys() {
        let c = initial_keys(1, &unhex(DCID), true).unwrap();
        assert_eq!(c.key.to_vec(), unhex("1f369613dd76d5467730efcbe3b1a22d"));
        assert_eq!(c.iv.to_vec(), unhex("fa044b2f42a3fd3b46fb255c"));
        assert_eq!(c.hp.to_vec(), unhex("9f50449e04a0e810283a1e9933adedd2"));
        let s = initial_keys(1, &unhex(DCID), false).unwrap();
        assert_eq!(s.key.to_vec(), unhex("cf3a5331653c364c88f0f379b6067e37"));
        assert_eq!(s.iv.to_vec(), unhex("0ac1493ca1905853b0bba03e"));
        assert_eq!(s.hp.to_vec(), unhex("c206b8d9b9f0f37644430b490eeaa314"));
    }

    #[test]
    fn rfc9369_initial_keys() {
        let c = initial_keys(V2, &unhex(DCID), true).unwrap();
        assert_eq!(c.key.to_vec(), unhex("8b1a0bc121284290a29e0971b5cd045d"));
        assert_eq!(c.iv.to_vec(), unhex("91f73e2351d8fa91660e909f"));
        assert_eq!(c.hp.to_vec(), unhex("45b95e15235d6f45a6b19cbcb0294ba9"));
        let s = initial_keys(V2, &unhex(DCID), false).unwrap();
        assert_eq!(s.key.to_vec(), unhex("82db637861d55e1d011f19ea71d5d2a7"));
        assert_eq!(s.iv.to_vec(), unhex("dd13c276499c0249d3310652"));
        assert_eq!(s.hp.to_vec(), unhex("edf6d05c83121201b436e16877593c3a"));
    }

    fn decrypt(pkt: &[u8], client: bool) -> Vec<u8> {
        let h = parse_long_header(pkt).unwrap();
        let dcid = if client { h.dcid.to_vec() } else { unhex(DCID) };
        let keys = initial_keys(h.version, &dcid, client).unwrap();
        let mut out = Vec::new();
        decrypt_initial(pkt, &h, &keys, &mut out).unwrap();
        out
    }

    #[test]
    fn rfc9001_client_initial_decrypts_to_the_published_frames() {
        let pkt = unhex(V1_CLIENT_INITIAL);
        assert_eq!(pkt.len(), 1200);
        assert_eq!(probe_quic(&pkt), Probe::Certain);
        let plain = decrypt(&pkt, true);
        let mut want = unhex(CLIENT_FRAMES);
        want.resize(want.len() + 917, 0);
        assert_eq!(plain, want);
    }

    #[test]
    fn rfc9001_server_initial_decrypts() {
        let pkt = unhex(V1_SERVER_INITIAL);
        let plain = decrypt(&pkt, false);
        // ACK frame then a CRYPTO frame holding the ServerHello.
        assert!(plain.starts_with(&unhex("02000000000600405a020000560303eefce7f7")));
    }

    fn run_parser(datagrams: &[Vec<u8>]) -> Vec<AppEvent> {
        let mut p = QuicParser::new(&Limits::default());
        let mut out = Vec::new();
        for d in datagrams {
            p.parse(Direction::ToServer, d, 0, &mut out);
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn parser_reads_sni_and_alpn_from_v1_and_v2_initials() {
        for (hex, version) in [(V1_CLIENT_INITIAL, "1"), (V2_CLIENT_INITIAL, "6b3343cf")] {
            let ev = run_parser(&[unhex(hex)]);
            let [AppEvent::Quic(q)] = ev.as_slice() else {
                panic!("{ev:?}")
            };
            assert_eq!(q.version, version);
            assert_eq!(q.sni.as_deref(), Some("example.com"));
            assert_eq!(q.alpn, vec!["alpn".to_string()]);
            let names: Vec<_> = q
                .extensions
                .iter()
                .filter_map(|e| e.name.as_deref())
                .collect();
            assert_eq!(names[..2], ["server_name", "renegotiation_info"]);
            assert!(
                q.ja4
                    .as_deref()
                    .is_some_and(|j| j.starts_with("q13d0211an_")),
                "{:?}",
                q.ja4
            );
        }
    }

    #[test]
    fn corrupted_initial_is_counted_not_fatal() {
        let mut pkt = unhex(V1_CLIENT_INITIAL);
        pkt[100] ^= 1; // breaks the AEAD tag
        let mut p = QuicParser::new(&Limits::default());
        let mut out = Vec::new();
        p.parse(Direction::ToServer, &pkt, 0, &mut out);
        assert!(out.is_empty());
        assert_eq!(p.stats().malformed, 1);
        p.finish(&mut out);
        let [AppEvent::Quic(q)] = out.as_slice() else {
            panic!()
        };
        assert_eq!((q.version.as_str(), q.sni.as_deref()), ("1", None));
    }

    #[test]
    fn versions_and_families() {
        assert_eq!(version_string(0xff00_001d), "ff00001d");
        assert_eq!(version_string(0x5130_3530), "Q050");
        assert_eq!(family(0x5130_3433), Some(Family::GoogleLegacy));
        assert_eq!(family(0x5130_3436), Some(Family::GoogleLong));
        assert_eq!(family(0x5430_3531), Some(Family::GoogleIetf));
        assert_eq!(
            family(0x1a2a_3a4a),
            None,
            "grease/unknown versions are not QUIC evidence"
        );
        assert_eq!(varint(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(
            varint(&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c]),
            Some((151_288_809_941_952_652, 8))
        );
    }

    #[test]
    fn gquic_chlo_tags() {
        // CHLO with two tags: SNI "www.google.com", UAID "Chrome/90".
        let mut m = b"CHLO".to_vec();
        m.extend_from_slice(&2u16.to_le_bytes());
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(b"SNI\0");
        m.extend_from_slice(&14u32.to_le_bytes());
        m.extend_from_slice(b"UAID");
        m.extend_from_slice(&23u32.to_le_bytes());
        m.extend_from_slice(b"www.google.comChrome/90");
        let mut d = vec![0x0d];
        d.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        d.extend_from_slice(b"Q043");
        d.push(1);
        d.extend_from_slice(&[0; 12]);
        d.extend_from_slice(&m);
        assert_eq!(probe_quic(&d), Probe::Certain);
        let ev = run_parser(&[d.clone()]);
        let [AppEvent::Quic(q)] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert_eq!(q.version, "Q043");
        assert_eq!(q.sni.as_deref(), Some("www.google.com"));
        assert_eq!(q.ua.as_deref(), Some("Chrome/90"));
        assert_eq!(
            q.cyu,
            [Cyu {
                hash: "9f946d5dc2772006371ed3360664cb84".into(),
                string: "43,SNI-UAID".into()
            }]
        );
        // The client sends its hello again (after the server's rejection): another event, up to the bound.
        let ev = run_parser(&vec![d.clone(); 6]);
        assert_eq!(ev.len(), MAX_CLEARTEXT_CHLOS as usize);
        // Q050 and later have no CYU.
        let chlo = parse_chlo(&m).expect("chlo");
        assert_eq!(chlo.cyu(u32::from_be_bytes(*b"Q050")), None);
    }

    /// The CYU of a published CHLO (Salesforce's gQUIC fingerprinting write-up, as Suricata's tests use it): the
    /// version's number, the tags in order up to their NUL, and the MD5 of that.
    #[test]
    fn cyu_of_a_published_chlo() {
        let tags = [
            b"PAD\0", b"SNI\0", b"VER\0", b"CCS\0", b"PDMD", b"ICSL", b"MIDS", b"CFCW", b"SFCW",
        ];
        let chlo = Chlo {
            tags: tags.iter().map(|t| **t).collect(),
            ..Chlo::default()
        };
        let cyu = chlo
            .cyu(u32::from_be_bytes(*b"Q043"))
            .expect("Q043 has a CYU");
        assert_eq!(cyu.string, "43,PAD-SNI-VER-CCS-PDMD-ICSL-MIDS-CFCW-SFCW");
        assert_eq!(cyu.hash, "e030dea1f2eea44ac7db5fe4de792acd");
        // Q045 is numbered 44, as Suricata numbers it.
        let q45 = chlo.cyu(u32::from_be_bytes(*b"Q045")).expect("Q045");
        assert!(q45.string.starts_with("44,"));
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn arbitrary_datagrams_never_panic(d in proptest::collection::vec(any::<u8>(), 0..1400),
                                               e in proptest::collection::vec(any::<u8>(), 0..300)) {
                let _ = (probe_quic(&d), parse_long_header(&d), parse_chlo(&d));
                let ev = run_parser(&[d, e]);
                prop_assert!(ev.len() <= 1);
            }

            #[test]
            fn mutated_initial_never_panics(pos in 0usize..1200, byte in any::<u8>(), cut in 0usize..1200) {
                let mut pkt = unhex(V1_CLIENT_INITIAL);
                pkt[pos] = byte;
                let cut = cut.min(pkt.len());
                let ev = run_parser(&[pkt[..cut].to_vec(), pkt.clone()]);
                prop_assert!(ev.len() <= 1);
            }

            #[test]
            fn crypto_frames_in_any_order(order in Just((0usize..4).collect::<Vec<_>>()).prop_shuffle()) {
                // The RFC ClientHello cut into four CRYPTO frames, placed in the parser's reassembly in any order.
                let frames = unhex(CLIENT_FRAMES);
                let hello = &frames[4..]; // after frame type 0x06, offset 0x00, length 0x40f1
                let mut p = QuicParser::new(&Limits::default());
                let bounds = [0, 50, 120, 200, hello.len()];
                for &i in &order {
                    let mut f = vec![0x06];
                    for v in [bounds[i] as u64, (bounds[i + 1] - bounds[i]) as u64] {
                        f.extend_from_slice(&(0x4000u16 | v as u16).to_be_bytes());
                    }
                    f.extend_from_slice(&hello[bounds[i]..bounds[i + 1]]);
                    p.frames(&f);
                }
                let mut out = Vec::new();
                p.try_hello(1, &mut out);
                let [AppEvent::Quic(q)] = out.as_slice() else { panic!("{out:?}") };
                prop_assert_eq!(q.sni.as_deref(), Some("example.com"));
            }
        }
    }
}
