//! Application protocol identifiers, named as nDPI names them.

/// An application protocol. The string form is nDPI's protocol name, so flowbundle's output compares with
/// ndpiReader's at the master-protocol level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[non_exhaustive]
pub enum AppProto {
    Unknown,
    Http,
    Tls,
    Quic,
    Dns,
    Mdns,
    Ssh,
    Smtp,
    Pop3,
    Imap,
    Ftp,
    FtpData,
    Smb,
    Ntp,
    Dhcp,
    Sip,
    Rtp,
    Rtcp,
    BitTorrent,
    Mqtt,
    Rdp,
    Redis,
    Mysql,
    Postgres,
    NetBios,
    Snmp,
    Stun,
}

impl AppProto {
    /// nDPI's name for the protocol.
    pub fn name(self) -> &'static str {
        use AppProto::*;
        match self {
            Unknown => "Unknown",
            Http => "HTTP",
            Tls => "TLS",
            Quic => "QUIC",
            Dns => "DNS",
            Mdns => "MDNS",
            Ssh => "SSH",
            Smtp => "SMTP",
            Pop3 => "POP3",
            Imap => "IMAP",
            Ftp => "FTP_CONTROL",
            FtpData => "FTP_DATA",
            Smb => "SMBv23",
            Ntp => "NTP",
            Dhcp => "DHCP",
            Sip => "SIP",
            Rtp => "RTP",
            Rtcp => "RTCP",
            BitTorrent => "BitTorrent",
            Mqtt => "MQTT",
            Rdp => "RDP",
            Redis => "Redis",
            Mysql => "MySQL",
            Postgres => "PostgreSQL",
            NetBios => "NetBIOS",
            Snmp => "SNMP",
            Stun => "STUN",
        }
    }

    /// The EVE `app_proto` value Suricata uses, where Suricata knows the protocol (lowercase), else nDPI's name.
    pub fn eve_name(self) -> &'static str {
        use AppProto::*;
        match self {
            Unknown => "failed",
            Http => "http",
            Tls => "tls",
            Quic => "quic",
            Dns => "dns",
            Ssh => "ssh",
            Smtp => "smtp",
            Ftp => "ftp",
            FtpData => "ftp-data",
            Smb => "smb",
            Ntp => "ntp",
            Dhcp => "dhcp",
            Sip => "sip",
            Mqtt => "mqtt",
            Rdp => "rdp",
            Snmp => "snmp",
            Pop3 => "pop3",
            Imap => "imap",
            BitTorrent => "bittorrent-dht",
            other => other.name(),
        }
    }
}

impl std::fmt::Display for AppProto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
