//! SDP (RFC 4566 / 8866), the session description a SIP body carries: read line by line (`<type>=<value>`), as
//! Suricata's EVE `sip.sdp` object and its `sdp.*` keywords present it.
//!
//! The session's fields come before the first `m=` line; each `t=` starts a time description (its `r=` lines are
//! its repeat times, the first kept); each `m=` starts a media description that owns the `i=`, `c=`, `b=`, `k=` and
//! `a=` lines after it. Values are kept as sent, trimmed. A body whose first line is not `v=` is not SDP. Unknown
//! line types are skipped.
//!
//! **Bounds.** At most [`MAX_ITEMS`] bandwidths, attributes, time descriptions and media descriptions are kept
//! (per list); the rest are counted in [`SdpEvent::cut`].

/// Entries kept per list (bandwidths, attributes, time and media descriptions).
pub const MAX_ITEMS: usize = 64;

/// A time description: `t=` and its first `r=`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TimeDescription {
    pub time: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_time: Option<String>,
}

/// A media description: `m=` and the lines that belong to it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MediaDescription {
    pub media: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_info: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bandwidths: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption_key: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<String>,
}

/// A session description, with EVE's field names (`sip.sdp`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SdpEvent {
    pub version: u32,
    pub origin: String,
    pub session_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_info: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone_number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_data: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bandwidths: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub time_descriptions: Vec<TimeDescription>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encryption_key: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub media_descriptions: Vec<MediaDescription>,
    /// Entries past [`MAX_ITEMS`] not kept. Not written.
    #[serde(skip)]
    pub cut: u32,
}

fn push<T>(list: &mut Vec<T>, v: T, cut: &mut u32) {
    if list.len() < MAX_ITEMS {
        list.push(v);
    } else {
        *cut += 1;
    }
}

/// Reads a session description; `None` when `body` does not start with a `v=` line.
pub fn parse(body: &[u8]) -> Option<SdpEvent> {
    let mut lines = body
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty());
    let first = lines.next()?;
    let version = first.strip_prefix(b"v=")?.trim_ascii();
    let mut s = SdpEvent {
        version: std::str::from_utf8(version).ok()?.parse().ok()?,
        ..SdpEvent::default()
    };
    let mut cut = 0;
    // The last `m=` was past the cap: its lines are dropped with it.
    let mut media_dropped = false;
    for line in lines {
        let (&[t, b'='], v) = line.split_at_checked(2).unwrap_or((&[], &[])) else {
            continue;
        };
        let v = String::from_utf8_lossy(v.trim_ascii()).into_owned();
        if t == b'm' {
            media_dropped = s.media_descriptions.len() >= MAX_ITEMS;
            push(
                &mut s.media_descriptions,
                MediaDescription {
                    media: v,
                    ..MediaDescription::default()
                },
                &mut cut,
            );
            continue;
        }
        if !s.media_descriptions.is_empty() {
            // Lines after an `m=` belong to its media description (or to the one dropped at the cap).
            if media_dropped {
                continue;
            }
            let Some(m) = s.media_descriptions.last_mut() else {
                continue;
            };
            match t {
                b'i' => m.media_info = Some(v),
                b'c' => m.connection_data = Some(v),
                b'b' => push(&mut m.bandwidths, v, &mut cut),
                b'k' => m.encryption_key = Some(v),
                b'a' => push(&mut m.attributes, v, &mut cut),
                _ => {}
            }
            continue;
        }
        match t {
            b'o' => s.origin = v,
            b's' => s.session_name = v,
            b'i' => s.session_info = Some(v),
            b'u' => s.uri = Some(v),
            b'e' => s.email = Some(v),
            b'p' => s.phone_number = Some(v),
            b'c' => s.connection_data = Some(v),
            b'b' => push(&mut s.bandwidths, v, &mut cut),
            b't' => push(
                &mut s.time_descriptions,
                TimeDescription {
                    time: v,
                    repeat_time: None,
                },
                &mut cut,
            ),
            b'r' => {
                if let Some(td) = s.time_descriptions.last_mut() {
                    td.repeat_time.get_or_insert(v);
                }
            }
            b'z' => s.timezone = Some(v),
            b'k' => s.encryption_key = Some(v),
            b'a' => push(&mut s.attributes, v, &mut cut),
            _ => {}
        }
    }
    s.cut = cut;
    Some(s)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The body of suricata-verify's sip-sdp capture.
    pub(crate) const SDP: &[u8] = b"v=0\r\n\
o=SIPPS 105015165 105015162 IN IP4 192.168.1.2\r\n\
s=SIP call\r\n\
i=Session Description Protocol\r\n\
u=https://www.sdp.proto\r\n\
e=j.doe@example.com (Jane Doe)\r\n\
p=+1 617 555-6011 (Jane Doe)\r\n\
c=IN IP4 192.168.1.2\r\n\
b=AS:64\r\n\
t=3034423619 3042462419\r\n\
r=604800 3600 0 90000\r\n\
z=2882844526 -1h 2898848070 0\r\n\
k=prompt\r\n\
a=sendrecv\r\n\
m=audio 30000 RTP/AVP 0 8 97 2 3\r\n\
i=media info\r\n\
c=IN IP4 192.168.1.2\r\n\
k=prompt\r\n\
a=rtpmap:0 pcmu/8000\r\n\
a=rtpmap:8 pcma/8000\r\n";

    #[test]
    fn every_field_as_eve_writes_it() {
        let s = parse(SDP).unwrap();
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({
                "version": 0,
                "origin": "SIPPS 105015165 105015162 IN IP4 192.168.1.2",
                "session_name": "SIP call",
                "session_info": "Session Description Protocol",
                "uri": "https://www.sdp.proto",
                "email": "j.doe@example.com (Jane Doe)",
                "phone_number": "+1 617 555-6011 (Jane Doe)",
                "connection_data": "IN IP4 192.168.1.2",
                "bandwidths": ["AS:64"],
                "time_descriptions": [{"time": "3034423619 3042462419", "repeat_time": "604800 3600 0 90000"}],
                "timezone": "2882844526 -1h 2898848070 0",
                "encryption_key": "prompt",
                "attributes": ["sendrecv"],
                "media_descriptions": [{"media": "audio 30000 RTP/AVP 0 8 97 2 3", "media_info": "media info",
                    "connection_data": "IN IP4 192.168.1.2", "encryption_key": "prompt",
                    "attributes": ["rtpmap:0 pcmu/8000", "rtpmap:8 pcma/8000"]}]
            })
        );
    }

    #[test]
    fn not_sdp_and_caps() {
        assert_eq!(parse(b"hello"), None);
        assert_eq!(parse(b"v=x\r\n"), None);
        assert_eq!(parse(b""), None);
        let mut body = b"v=0\r\n".to_vec();
        for _ in 0..MAX_ITEMS + 3 {
            body.extend_from_slice(b"m=audio 1 RTP/AVP 0\r\na=x\r\n");
        }
        let s = parse(&body).unwrap();
        assert_eq!(s.media_descriptions.len(), MAX_ITEMS);
        assert_eq!(s.cut, 3);
        assert!(s.media_descriptions.iter().all(|m| m.attributes == ["x"]));
    }
}
