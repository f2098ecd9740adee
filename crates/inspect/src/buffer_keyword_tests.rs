//! Keywords on buffers through the engine: the header sticky buffers (`ipv4.hdr`, `tcp.hdr`, `udp.hdr`,
//! `icmpv4.hdr`, ...) and `entropy`. Crafted IPv4 packets go through the serial path with a rule set, and the test
//! reads which rules alerted on which packets.

use crate::keyword_tests::{conversation, sids};

/// An IPv4 datagram from `10.0.0.1` to `10.0.0.2` of IP protocol `proto` carrying `l4` (its transport header and
/// payload), checksums zero.
fn ipv4(proto: u8, l4: &[u8]) -> Vec<u8> {
    let total = (20 + l4.len()) as u16;
    let mut b = vec![0x45, 0];
    b.extend_from_slice(&total.to_be_bytes());
    b.extend_from_slice(&[0, 7, 0, 0, 64, proto, 0, 0]);
    b.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    b.extend_from_slice(l4);
    b
}

#[test]
fn tcp_and_ipv4_headers_are_inspected_per_packet() {
    let packets = conversation(
        80,
        &[
            (true, b"GET / HTTP/1.0\r\n\r\n"),
            (false, b"HTTP/1.0 200 OK\r\n\r\n"),
        ],
    );
    let rules = r#"alert tcp any any -> any any (tcp.hdr; content:"|50 18|"; offset:12; depth:2; sid:1;)
alert tcp any any -> any 80 (content:"GET"; tcp.hdr; content:"|9c 40 00 50|"; startswith; sid:2;)
alert ip any any -> any any (tcp.flags:S; ipv4.hdr; content:"|40 06|"; offset:8; depth:2; bsize:20; sid:3;)
alert ip any any -> any any (udp.hdr; content:"|00|"; sid:4;)
alert tcp any any -> any any (flow:to_client; tcp.hdr; byte_test:2,=,80,0; sid:5;)
alert tcp any any -> any any (tcp.hdr; content:"|00 50|"; depth:2; content:"|12|"; distance:11; within:1; sid:6;)
"#;
    // Both data packets carry PSH ACK; the request alone has the payload and the client's ports; the SYN alone has
    // exactly flag S; each of the server's four packets (SYN-ACK, two ACKs with or without data, FIN) starts with
    // port 80; the SYN-ACK's flags byte (13) is 0x12.
    assert_eq!(sids(rules, &packets), vec![1, 1, 2, 3, 5, 5, 5, 5, 6]);
}

#[test]
fn udp_and_icmp_headers_are_inspected_per_datagram() {
    let mut udp = vec![0x9c, 0x40, 0, 53, 0, 12, 0, 0];
    udp.extend_from_slice(b"abcd");
    let mut echo = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1];
    echo.extend_from_slice(b"ping");
    let mut ts = vec![13, 0, 0, 0, 0x12, 0x34, 0, 2];
    ts.extend_from_slice(&[0; 12]);
    let packets = [ipv4(17, &udp), ipv4(1, &echo), ipv4(1, &ts)];
    let rules = r#"alert udp any any -> any any (udp.hdr; content:"|00 35|"; offset:2; depth:2; bsize:8; sid:1;)
alert ip any any -> any any (ipv4.hdr; content:"|11|"; offset:9; depth:1; sid:2;)
alert icmp any any -> any any (icmpv4.hdr; content:"|08 00|"; startswith; bsize:8; sid:3;)
alert icmp any any -> any any (icmpv4.hdr; content:"|0d 00|"; startswith; bsize:20; sid:4;)
alert icmp any any -> any any (icmpv6.hdr; content:"|08|"; sid:5;)
alert icmp any any -> any any (icmpv4.hdr; content:"ping"; sid:6;)
alert udp any any -> any any (udp.hdr; content:"abcd"; sid:7;)
"#;
    assert_eq!(sids(rules, &packets), vec![1, 2, 3, 4]);
}

/// `entropy` on an HTTP response body (`file.data`) and on datagrams: the Shannon entropy of the whole buffer (or of
/// the part `offset` and `bytes` select), compared.
#[test]
fn entropy_compares_the_buffers_shannon_entropy() {
    // 16 distinct bytes, each twice: exactly 4 bits per byte.
    let body: Vec<u8> = (b'a'..=b'p').chain(b'a'..=b'p').collect();
    let mut response = b"HTTP/1.1 200 OK\r\nContent-Length: 32\r\n\r\n".to_vec();
    response.extend_from_slice(&body);
    let packets = conversation(
        80,
        &[
            (true, b"GET /e HTTP/1.1\r\nHost: x\r\n\r\n"),
            (false, &response),
        ],
    );
    let rules = r#"alert http any any -> any any (file.data; entropy: value 4; sid:1;)
alert http any any -> any any (file.data; entropy: value > 4; sid:2;)
alert http any any -> any any (file.data; entropy: value 3.9-4.1; sid:3;)
alert http any any -> any any (file.data; entropy: value !3.9-4.1; sid:4;)
alert http any any -> any any (file.data; entropy: bytes 8, value 3; sid:5;)
alert http any any -> any any (file.data; content:"ijk"; entropy: offset 28, value 2; sid:6;)
alert http any any -> any any (file.data; entropy: offset 33, value >= 0; sid:7;)
"#;
    assert_eq!(sids(rules, &packets), vec![1, 3, 5, 6]);
    let mut noise = vec![0x9c, 0x40, 0, 53, 0, 0, 0, 0];
    noise.extend((0..=255u8).rev());
    let len = noise.len() as u16;
    noise[4..6].copy_from_slice(&len.to_be_bytes());
    let mut flat = vec![0x9c, 0x41, 0, 53, 0, 24, 0, 0];
    flat.extend_from_slice(&[b'A'; 16]);
    let rules = r#"alert udp any any -> any any (entropy: value >= 7.99; sid:1;)
alert udp any any -> any any (entropy: value 0; sid:2;)
alert udp any any -> any any (content:"AAAA"; entropy: bytes 4, offset 12, value < 0.5; sid:3;)
"#;
    assert_eq!(
        sids(rules, &[ipv4(17, &noise), ipv4(17, &flat)]),
        vec![1, 2, 3]
    );
}
