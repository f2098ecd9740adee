//! Application protocol identifiers, named as nDPI names them, with Suricata's `app_proto` names where Suricata has
//! the protocol.
//!
//! The enumeration is generated (by `build.rs`) from the protocols' registration records, one `protocol.toml` per
//! protocol directory under `crates/protocols/src/`: the variants, [`AppProto::ALL`], the name tables, categories,
//! default ports, EVE names and the stable codes all come from them, so adding a protocol is one directory and
//! nothing can drift out of step.

use crate::Transport;

include!(concat!(env!("OUT_DIR"), "/app_proto_table.rs"));

impl AppProto {
    /// The position in [`AppProto::ALL`]: a small stable number per protocol (cost-file codes are this plus one).
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The protocol at `index` in [`AppProto::ALL`].
    pub fn from_index(index: usize) -> Option<AppProto> {
        AppProto::ALL.get(index).copied()
    }

    /// The protocol nDPI calls `name` (exact spelling).
    pub fn from_name(name: &str) -> Option<AppProto> {
        AppProto::ALL.iter().copied().find(|p| p.name() == name)
    }

    /// The protocol an L7-filter signature named `name` identifies (compared case-insensitively), if its record
    /// claims that signature.
    pub fn from_l7filter_name(name: &str) -> Option<AppProto> {
        AppProto::ALL.iter().copied().find(|p| {
            p.l7filter_name()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
    }

    /// The protocol whose parser fills the rule buffer (sticky buffer keyword) `keyword`, e.g. `tls.sni` or
    /// `http.uri`.
    pub fn for_rule_buffer(keyword: &str) -> Option<AppProto> {
        AppProto::ALL.iter().copied().find(|p| {
            p.rule_buffer_prefixes()
                .iter()
                .any(|pre| keyword.starts_with(pre))
        })
    }
}

impl std::fmt::Display for AppProto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_the_enumeration() {
        for (i, &p) in AppProto::ALL.iter().enumerate() {
            assert_eq!(p.index(), i);
            assert_eq!(AppProto::from_index(i), Some(p));
            assert_eq!(
                AppProto::from_name(p.name()),
                Some(p),
                "{p:?}: names are unique"
            );
        }
        assert_eq!(AppProto::ALL[0], AppProto::Unknown);
    }

    #[test]
    fn eve_names_follow_suricata_where_it_has_the_protocol() {
        assert_eq!(AppProto::Unknown.eve_name(), "failed");
        assert_eq!(AppProto::Http.eve_name(), "http");
        assert_eq!(AppProto::HttpProxy.eve_name(), "http");
        assert_eq!(AppProto::Kerberos.eve_name(), "krb5");
        assert_eq!(AppProto::Dcerpc.eve_name(), "dcerpc");
        assert_eq!(AppProto::Postgres.eve_name(), "pgsql");
        assert_eq!(AppProto::EthernetIp.eve_name(), "enip");
        // Protocols Suricata does not parse: Suricata's value, `failed` (the engine's name stays `name()`).
        assert_eq!(AppProto::Zabbix.eve_name(), "failed");
        assert_eq!(AppProto::NetBios.eve_name(), "failed");
        assert_eq!(AppProto::NetBios.name(), "NetBIOS");
        // Implicit TLS on the mail ports is TLS to Suricata; mDNS and VNC have parsers of their own.
        assert_eq!(AppProto::Smtps.eve_name(), "tls");
        assert_eq!(AppProto::Mdns.eve_name(), "mdns");
        assert_eq!(AppProto::Vnc.eve_name(), "rfb");
    }

    #[test]
    fn records_give_ports_categories_and_rule_buffers() {
        assert_eq!(AppProto::Dns.default_ports(Transport::Udp), &[53]);
        assert_eq!(AppProto::Ssh.default_ports(Transport::Udp), &[] as &[u16]);
        assert_eq!(AppProto::Ssh.transports(), &[Transport::Tcp]);
        assert_eq!(AppProto::Tls.category(), "Web");
        assert_eq!(AppProto::Unknown.category(), "Unspecified");
        assert_eq!(AppProto::for_rule_buffer("tls.sni"), Some(AppProto::Tls));
        assert_eq!(AppProto::for_rule_buffer("ja3s.hash"), Some(AppProto::Tls));
        assert_eq!(AppProto::for_rule_buffer("http.uri"), Some(AppProto::Http));
        assert_eq!(AppProto::for_rule_buffer("file.data"), None);
        assert_eq!(AppProto::from_l7filter_name("SSL"), Some(AppProto::Tls));
        assert_eq!(AppProto::from_l7filter_name("socks"), None);
        assert_eq!(AppProto::Http.eve_event_type(), Some("http"));
        assert_eq!(AppProto::Kerberos.suricata_name(), Some("krb5"));
        assert_eq!(AppProto::Zabbix.suricata_name(), None);
        for &p in AppProto::ALL {
            for t in [Transport::Tcp, Transport::Udp] {
                assert!(
                    p.default_ports(t).is_empty() || p.transports().contains(&t),
                    "{p:?}: ports on a transport it does not run on"
                );
            }
        }
    }

    #[test]
    fn insecure_marks_follow_the_table() {
        assert!(
            AppProto::Telnet.is_insecure()
                && AppProto::Ftp.is_insecure()
                && AppProto::Smbv1.is_insecure()
        );
        assert!(
            !AppProto::Ssh.is_insecure()
                && !AppProto::Smb.is_insecure()
                && !AppProto::Unknown.is_insecure()
        );
    }
}
