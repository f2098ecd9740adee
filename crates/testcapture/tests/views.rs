//! The three views of a capture agree with what the captures hold.

use flowbundle_testcapture::{Direction, connections, flows, segments};

#[test]
fn dns_queries_go_to_the_server_and_answers_come_back() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/DnsPackets.pcap") else {
        return;
    };
    let segs = segments(&cap);
    let dns = |s: &flowbundle_testcapture::Segment| !s.tcp && (s.sport == 53 || s.dport == 53);
    assert!(segs.iter().filter(|s| dns(s)).count() > 10);
    let flows = flows(&cap, 100);
    let mut queries = 0;
    for (key, f) in flows
        .iter()
        .filter(|(k, _)| !k.tcp && (k.a.1 == 53 || k.b.1 == 53))
    {
        // The first datagram's sender is the client; a query (QR bit clear) goes to the server, an answer to
        // the client, whichever came first in the capture.
        let Some(client) = f.client else { continue };
        for (dir, msg, gap) in &f.payloads {
            assert_eq!(*gap, 0, "UDP has no gaps");
            let Some(flags) = msg.get(2) else { continue };
            let query = flags & 0x80 == 0;
            let to_53 = match dir {
                Direction::ToServer => key.server_of(client).1 == 53,
                Direction::ToClient => client.1 == 53,
            };
            assert_eq!(
                query, to_53,
                "{key:?}: a query goes to port 53, an answer comes from it"
            );
            queries += usize::from(query);
        }
    }
    assert!(queries > 0);
    // l7-filter's view: one connection per flow, every datagram kept (up to the cap).
    let conns = connections(&cap, 100);
    assert_eq!(conns.len(), flows.len());
    let kept: usize = conns.iter().map(|c| c.packets.len()).sum();
    assert_eq!(kept, segs.len());
}

#[test]
fn http_requests_travel_to_the_server_and_responses_back() {
    let Some(cap) = flowbundle_testsupport::data("reassembly/example2.pcap") else {
        return;
    };
    let flows = flows(&cap, 1000);
    let (mut requests, mut responses) = (0, 0);
    for (key, f) in flows.iter().filter(|(k, _)| k.tcp) {
        let Some(client) = f.client else { continue };
        if client.1 == 80 {
            continue; // picked up mid-stream from the server's side
        }
        for (dir, data, _) in &f.payloads {
            if data.starts_with(b"GET ") || data.starts_with(b"POST ") {
                assert_eq!(*dir, Direction::ToServer, "{key:?}");
                requests += 1;
            }
            if data.starts_with(b"HTTP/1.") {
                assert_eq!(*dir, Direction::ToClient, "{key:?}");
                responses += 1;
            }
        }
    }
    assert!(requests > 0 && responses > 0, "{requests} {responses}");
    // Every payload byte of the flows is a byte of a segment, retransmitted bytes counted once.
    let seg_bytes: usize = segments(&cap).iter().map(|s| s.payload.len()).sum();
    let flow_bytes: usize = flows
        .values()
        .flat_map(|f| f.payloads.iter())
        .map(|p| p.1.len())
        .sum();
    assert!(flow_bytes > 0 && flow_bytes <= seg_bytes);
}
