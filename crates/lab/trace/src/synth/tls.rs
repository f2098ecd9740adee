//! TLS handshake messages as browsers and servers send them (RFC 8446): a ClientHello with SNI, ALPN, key share
//! and supported versions; a TLS 1.3 ServerHello. The same ClientHello body travels in a TLS record over TCP and in
//! QUIC CRYPTO frames (with the QUIC transport parameters extension and without the TLS 1.2 leftovers).

use rand::RngCore;
use rand_chacha::ChaCha8Rng;

fn u16be(v: usize) -> [u8; 2] {
    (v as u16).to_be_bytes()
}

fn ext(out: &mut Vec<u8>, kind: u16, body: &[u8]) {
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&u16be(body.len()));
    out.extend_from_slice(body);
}

/// A handshake message: type, 24-bit length, body.
fn handshake(kind: u8, body: &[u8]) -> Vec<u8> {
    let n = body.len();
    let mut h = vec![kind, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    h.extend_from_slice(body);
    h
}

/// A record of `content_type` (0x16 handshake, 0x17 application data, ...) with the given legacy version.
pub(crate) fn record(content_type: u8, version: u16, body: &[u8]) -> Vec<u8> {
    let mut r = vec![content_type];
    r.extend_from_slice(&version.to_be_bytes());
    r.extend_from_slice(&u16be(body.len()));
    r.extend_from_slice(body);
    r
}

/// The ClientHello handshake message (type, length, body) for `sni`. `quic` adds the transport parameters
/// extension, offers TLS 1.3 only and no session id, as QUIC clients do.
pub(crate) fn client_hello(rng: &mut ChaCha8Rng, sni: &str, alpn: &[&str], quic: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(512);
    b.extend_from_slice(&[0x03, 0x03]);
    let mut random = [0u8; 32];
    rng.fill_bytes(&mut random);
    b.extend_from_slice(&random);
    if quic {
        b.push(0);
    } else {
        b.push(32);
        let mut sid = [0u8; 32];
        rng.fill_bytes(&mut sid);
        b.extend_from_slice(&sid);
    }
    let suites: &[u16] = if quic {
        &[0x1301, 0x1302, 0x1303]
    } else {
        &[
            0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xcca9, 0xcca8, 0xc02c, 0xc030, 0xc013, 0xc014,
            0x009c, 0x002f,
        ]
    };
    b.extend_from_slice(&u16be(suites.len() * 2));
    for s in suites {
        b.extend_from_slice(&s.to_be_bytes());
    }
    b.extend_from_slice(&[1, 0]);
    let mut e = Vec::with_capacity(300);
    // server_name: one host_name entry.
    let name = sni.as_bytes();
    let mut sn = Vec::with_capacity(name.len() + 5);
    sn.extend_from_slice(&u16be(name.len() + 3));
    sn.push(0);
    sn.extend_from_slice(&u16be(name.len()));
    sn.extend_from_slice(name);
    ext(&mut e, 0, &sn);
    if !quic {
        ext(&mut e, 23, &[]); // extended_master_secret
        ext(&mut e, 0xff01, &[0]); // renegotiation_info
    }
    ext(&mut e, 10, &[0, 6, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x18]);
    if !quic {
        ext(&mut e, 11, &[1, 0]);
        ext(&mut e, 35, &[]); // session_ticket
    }
    let mut al = Vec::new();
    for a in alpn {
        al.push(a.len() as u8);
        al.extend_from_slice(a.as_bytes());
    }
    let mut alv = u16be(al.len()).to_vec();
    alv.extend_from_slice(&al);
    ext(&mut e, 16, &alv);
    ext(&mut e, 5, &[1, 0, 0, 0, 0]); // status_request (OCSP)
    let sigs: [u16; 8] = [
        0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601,
    ];
    let mut sv = u16be(sigs.len() * 2).to_vec();
    for s in sigs {
        sv.extend_from_slice(&s.to_be_bytes());
    }
    ext(&mut e, 13, &sv);
    let mut key = [0u8; 32];
    rng.fill_bytes(&mut key);
    let mut ks = u16be(36).to_vec();
    ks.extend_from_slice(&[0x00, 0x1d, 0x00, 0x20]);
    ks.extend_from_slice(&key);
    ext(&mut e, 51, &ks);
    ext(&mut e, 45, &[1, 1]); // psk_key_exchange_modes: psk_dhe_ke
    if quic {
        ext(&mut e, 43, &[2, 0x03, 0x04]);
        ext(&mut e, 57, &transport_parameters(rng));
    } else {
        ext(&mut e, 43, &[4, 0x03, 0x04, 0x03, 0x03]);
        // padding to a 512-byte ClientHello, as Chrome and Firefox do for old middleboxes.
        let so_far = b.len() + 2 + e.len() + 4;
        if so_far + 4 < 512 {
            ext(&mut e, 21, &vec![0u8; 512 - so_far - 4]);
        }
    }
    b.extend_from_slice(&u16be(e.len()));
    b.extend_from_slice(&e);
    handshake(1, &b)
}

/// QUIC varint (RFC 9000 §16) of `v` < 2^30.
pub(crate) fn varint(v: u64, out: &mut Vec<u8>) {
    if v < 64 {
        out.push(v as u8);
    } else if v < 16_384 {
        out.extend_from_slice(&((v as u16) | 0x4000).to_be_bytes());
    } else {
        out.extend_from_slice(&((v as u32) | 0x8000_0000).to_be_bytes());
    }
}

/// A plausible client transport-parameter block (RFC 9000 §18.2).
fn transport_parameters(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut p = Vec::new();
    let param = |id: u64, val: u64, p: &mut Vec<u8>| {
        let mut v = Vec::new();
        varint(val, &mut v);
        varint(id, p);
        varint(v.len() as u64, p);
        p.extend_from_slice(&v);
    };
    param(0x01, 30_000, &mut p); // max_idle_timeout
    param(0x03, 1_472, &mut p); // max_udp_payload_size
    param(0x04, 15_728_640, &mut p); // initial_max_data
    param(0x05, 6_291_456, &mut p); // initial_max_stream_data_bidi_local
    param(0x06, 6_291_456, &mut p);
    param(0x07, 6_291_456, &mut p);
    param(0x08, 100, &mut p); // initial_max_streams_bidi
    param(0x09, 103, &mut p);
    // initial_source_connection_id is filled by the caller's SCID in real stacks; a random 8 bytes is fine here.
    let mut scid = [0u8; 8];
    rng.fill_bytes(&mut scid);
    varint(0x0f, &mut p);
    varint(8, &mut p);
    p.extend_from_slice(&scid);
    p
}

/// A TLS 1.3 ServerHello handshake message echoing the client's session id length.
pub(crate) fn server_hello(rng: &mut ChaCha8Rng, with_session_id: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(128);
    b.extend_from_slice(&[0x03, 0x03]);
    let mut random = [0u8; 32];
    rng.fill_bytes(&mut random);
    b.extend_from_slice(&random);
    if with_session_id {
        b.push(32);
        let mut sid = [0u8; 32];
        rng.fill_bytes(&mut sid);
        b.extend_from_slice(&sid);
    } else {
        b.push(0);
    }
    b.extend_from_slice(&[0x13, 0x01, 0x00]);
    let mut e = Vec::new();
    ext(&mut e, 43, &[0x03, 0x04]);
    let mut key = [0u8; 32];
    rng.fill_bytes(&mut key);
    let mut ks = vec![0x00, 0x1d, 0x00, 0x20];
    ks.extend_from_slice(&key);
    ext(&mut e, 51, &ks);
    b.extend_from_slice(&u16be(e.len()));
    b.extend_from_slice(&e);
    handshake(2, &b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn hellos_parse_with_the_engine_parser() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let ch = client_hello(&mut rng, "www.example.com", &["h2", "http/1.1"], false);
        assert_eq!(ch.len(), 512, "padded to 512 bytes");
        let parsed =
            flowbundle_protocols::tls::parse_client_hello(&ch[4..], false).expect("parses");
        assert_eq!(parsed.sni.as_deref(), Some("www.example.com"));
        assert_eq!(parsed.alpn, vec!["h2".to_string(), "http/1.1".to_string()]);
        let q = client_hello(&mut rng, "quic.example.net", &["h3"], true);
        let parsed = flowbundle_protocols::tls::parse_client_hello(&q[4..], false).expect("parses");
        assert_eq!(parsed.sni.as_deref(), Some("quic.example.net"));
    }
}
