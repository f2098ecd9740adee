//! `app-layer-event:<proto>.<event>`: rules on the anomalies a parser raises, tested on the protocol's event buffer
//! as the engine hands it over; events no parser raises skip their rule with the name.

use flowbundle_rules::{
    AlertRecord, Buffer, Direction, FlowMatchState, LoadOptions, PacketCtx, RuleSet, Transport,
    Vars,
};
use flowbundle_types::{AppLayerEvent, AppLayerEvents, AppProto};

const RULES: &str = r#"alert dns any any -> any any (msg:"z"; app-layer-event:dns.z_flag_set; sid:1;)
alert dns any any -> any any (msg:"opcode to server"; flow:to_server; app-layer-event:dns.invalid_opcode; sid:2;)
alert dns any any -> any any (msg:"both"; app-layer-event:dns.z_flag_set; app-layer-event:dns.invalid_opcode; sid:3;)
alert dns any any -> any any (msg:"case"; app-layer-event:DNS.Not_A_Response; sid:4;)
"#;

fn load(text: &str, strict: bool) -> Result<(RuleSet, flowbundle_rules::LoadReport), String> {
    let opts = LoadOptions {
        strict,
        vars: Vars::suricata_defaults(),
        ..LoadOptions::default()
    };
    RuleSet::parse_with(&[("t", text.as_bytes())], &opts).map_err(|e| e.to_string())
}

/// Sids alerted by one message's anomalies, handed over as the engine does.
fn fire(rs: &RuleSet, dir: Direction, events: &[AppLayerEvent]) -> Vec<u32> {
    let set: AppLayerEvents = events.iter().copied().collect();
    let buffer = Buffer::app_layer_events(AppProto::Dns).expect("the DNS parser raises events");
    let mut sc = rs.scanner();
    let mut flow = FlowMatchState::default();
    let mut out: Vec<AlertRecord> = Vec::new();
    let ctx = PacketCtx {
        dir,
        transport: Transport::Udp,
        app_proto: Some("dns"),
        dst_port: 53,
        ..PacketCtx::default()
    };
    rs.scan_app(&mut sc, &mut flow, &ctx, 0, buffer, &set.flags(), &mut out);
    let mut s: Vec<u32> = out.iter().map(|a| a.sid).collect();
    s.sort();
    s
}

#[test]
fn rules_fire_on_the_events_raised_and_their_direction() {
    use AppLayerEvent as E;
    let (rs, _) = load(RULES, true).expect("every event named is raised");
    assert_eq!(rs.len(), 4);
    assert_eq!(fire(&rs, Direction::ToServer, &[E::DnsZFlagSet]), vec![1]);
    assert_eq!(
        fire(&rs, Direction::ToServer, &[E::DnsInvalidOpcode]),
        vec![2]
    );
    assert_eq!(
        fire(&rs, Direction::ToClient, &[E::DnsInvalidOpcode]),
        Vec::<u32>::new()
    );
    assert_eq!(
        fire(
            &rs,
            Direction::ToServer,
            &[E::DnsZFlagSet, E::DnsInvalidOpcode]
        ),
        vec![1, 2, 3]
    );
    assert_eq!(
        fire(&rs, Direction::ToClient, &[E::DnsNotAResponse]),
        vec![4]
    );
    assert_eq!(
        fire(&rs, Direction::ToClient, &[E::DnsMalformedData]),
        Vec::<u32>::new()
    );
}

#[test]
fn events_no_parser_raises_skip_their_rule_by_name() {
    let text = "alert tls any any -> any any (app-layer-event:tls.invalid_sni_length; sid:1;)\n\
                alert ip any any -> any any (app-layer-event:applayer_mismatch_protocol_both_directions; sid:2;)\n\
                alert dns any any -> any any (app-layer-event:dns.z_flag_set; sid:3;)\n";
    let (rs, report) = load(text, false).expect("loads");
    assert_eq!(rs.len(), 1);
    assert_eq!(report.skipped, 2);
    assert!(
        report
            .skip_reasons
            .keys()
            .any(|r| r.contains("tls.invalid_sni_length") && r.contains("not raised")),
        "{:?}",
        report.skip_reasons
    );
    assert!(
        load(
            "alert dns any any -> any any (app-layer-event:; sid:1;)\n",
            false
        )
        .map(|(_, r)| r.errors.len())
        .unwrap_or(1)
            > 0
    );
}

#[test]
fn each_protocol_has_its_event_buffer() {
    let text = "alert ftp any any -> any any (flow:to_server; app-layer-event:ftp.request_command_too_long; sid:1;)\n\
                alert dns any any -> any any (app-layer-event:dns.z_flag_set; sid:2;)\n";
    let (rs, _) = load(text, true).expect("both load");
    let buffers: Vec<Buffer> = rs.rules().iter().map(|r| r.groups[0].buffer).collect();
    assert_eq!(buffers, vec![Buffer::FtpEvents, Buffer::DnsEvents]);
    assert_eq!(
        Buffer::app_layer_events(AppProto::Ftp),
        Some(Buffer::FtpEvents)
    );
    assert_eq!(Buffer::app_layer_events(AppProto::Tls), None);
    // An ftp event on a dns rule is a buffer of another protocol.
    let (rs, report) = load(
        "alert dns any any -> any any (app-layer-event:ftp.request_command_too_long; sid:1;)\n",
        false,
    )
    .expect("reads");
    assert_eq!((rs.len(), report.skipped), (0, 1));
}
