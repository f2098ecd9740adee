//! Rule keywords whose state crosses flows, through `flowbundle inspect` on the shared captures: `xbits` (bits per
//! host or address pair) and `dataset` (sets of values that rules add to and look up). They load, fire where their
//! state says, stay silent where it does not, and give the same alerts with one worker or two.

use flowbundle_testsupport::data;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `inspect` with `extra` arguments then `-- inputs`, EVE to standard output: the EVE lines.
fn eve(inputs: &[PathBuf], extra: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_flowbundle"))
        .args(["inspect", "-o", "-"])
        .args(extra)
        .arg("--")
        .args(inputs)
        .output()
        .expect("running flowbundle");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "inspect {extra:?}: {err}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn alerts_of(lines: &[String], sid: u32) -> Vec<&String> {
    let needle = format!("\"signature_id\":{sid},");
    lines
        .iter()
        .filter(|l| l.contains("\"event_type\":\"alert\"") && l.contains(&needle))
        .collect()
}

fn field<'l>(line: &'l str, name: &str) -> &'l str {
    let key = format!("\"{name}\":\"");
    let at = line.find(&key).expect("the field is there") + key.len();
    let len = line[at..].find('"').expect("a closed string");
    &line[at..at + len]
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("writing a test file");
    p
}

/// A SYN sets a bit on its sender (silently, `noalert`), read back on the SYN-ACK as the destination's bit: every
/// answered handshake fires, the same bit read as the SYN-ACK's source never does; `isnotset` then `set` on one
/// rule fires once per host; a pair bit holds either way round.
#[test]
fn xbits_cross_flows_by_host_and_pair() {
    let (Some(a), Some(b)) = (
        data("reassembly/example2.pcap"),
        data("ndpi/pcap/bt-http.pcapng"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rules = write(
        dir.path(),
        "x.rules",
        "alert tcp any any -> any any (msg:\"syn\"; flags:S; sid:1;)\n\
         alert tcp any any -> any any (msg:\"syn-ack\"; flags:SA; sid:2;)\n\
         alert tcp any any -> any any (msg:\"client\"; flags:S; xbits:set,client,track ip_src,expire 3600; noalert; sid:10;)\n\
         alert tcp any any -> any any (msg:\"answer to a client\"; flags:SA; xbits:isset,client,track ip_dst; sid:11;)\n\
         alert tcp any any -> any any (msg:\"server as client\"; flags:SA; xbits:isset,client,track ip_src; sid:12;)\n\
         alert tcp any any -> any any (msg:\"first syn of a host\"; flags:S; xbits:isnotset,seen,track ip_src; xbits:set,seen,track ip_src,expire 3600; sid:13;)\n\
         alert tcp any any -> any any (msg:\"pair\"; flags:S; xbits:set,pair,track ip_pair,expire 3600; xbits:noalert; sid:14;)\n\
         alert tcp any any -> any any (msg:\"answer in pair\"; flags:SA; xbits:isset,pair,track ip_pair; sid:15;)\n",
    );
    let r = rules.to_string_lossy().into_owned();
    let caps = [a, b];
    let serial = eve(&caps, &["--threads", "1", "--rules", &r]);
    let syn_acks = alerts_of(&serial, 2).len();
    assert!(syn_acks > 10, "{syn_acks}");
    assert!(alerts_of(&serial, 10).is_empty() && alerts_of(&serial, 14).is_empty());
    // Every SYN-ACK whose destination sent a SYN before.
    let clients: BTreeSet<&str> = alerts_of(&serial, 1)
        .iter()
        .map(|l| field(l, "src_ip"))
        .collect();
    let answered = alerts_of(&serial, 11);
    assert!(!answered.is_empty());
    assert!(answered.len() <= syn_acks);
    assert!(
        answered
            .iter()
            .all(|l| clients.contains(field(l, "dest_ip")))
    );
    assert_eq!(alerts_of(&serial, 15).len(), answered.len());
    // Servers never sent a SYN in these captures.
    let servers_as_clients = alerts_of(&serial, 12);
    assert!(
        servers_as_clients
            .iter()
            .all(|l| clients.contains(field(l, "src_ip"))),
        "{servers_as_clients:?}"
    );
    // Once per host.
    let firsts: Vec<&str> = alerts_of(&serial, 13)
        .iter()
        .map(|l| field(l, "src_ip"))
        .collect();
    assert_eq!(firsts.len(), clients.len(), "{firsts:?}");
    assert_eq!(firsts.iter().collect::<BTreeSet<_>>().len(), clients.len());
    for sched in ["lfb", "rss"] {
        let par = eve(
            &caps,
            &["--threads", "2", "--scheduler", sched, "--rules", &r],
        );
        let alerts = |v: &[String]| -> Vec<String> {
            v.iter()
                .filter(|l| l.contains("\"event_type\":\"alert\""))
                .cloned()
                .collect()
        };
        assert!(
            alerts(&par) == alerts(&serial),
            "--threads 2 --scheduler {sched} differs"
        );
    }
}

/// A DNS rule adds each query name to a set the first time it is seen (alerting then only) and saves the set; an
/// HTTP rule looks the host up in it: the set is written by one flow and read by another, so the alerts depend on
/// the order of the input, which the parallel runs keep. A loaded, never-written set is looked up in the workers.
#[test]
fn datasets_cross_flows_in_input_order() {
    let (Some(a), Some(b)) = (
        data("reassembly/example2.pcap"),
        data("ndpi/pcap/bt-http.pcapng"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A blocklist with one host of the capture, base64 as Suricata writes string sets.
    write(
        dir.path(),
        "bl.lst",
        "c3RhdGljLmJiY2kuY28udWs=\nbm90LWluLXRoZS1jYXB0dXJl\n",
    );
    let rules = write(
        dir.path(),
        "d.rules",
        "alert dns any any -> any any (msg:\"query\"; dns.query; bsize:>0; sid:1;)\n\
         alert dns any any -> any any (msg:\"new name\"; dns.query; dataset:set,seen,type string,state seen.lst; sid:2;)\n\
         alert http any any -> any any (msg:\"host queried before\"; http.host; dataset:isset,seen; sid:3;)\n\
         alert http any any -> any any (msg:\"host\"; http.host; bsize:>0; sid:4;)\n\
         alert http any any -> any any (msg:\"listed\"; http.host; dataset:isset,bl,type string,load bl.lst; sid:5;)\n\
         alert http any any -> any any (msg:\"not listed\"; http.host; dataset:isnotset,bl; sid:6;)\n",
    );
    let r = rules.to_string_lossy().into_owned();
    let caps = [a, b];
    let run = |name: &str, extra: &[&str]| -> (Vec<String>, String) {
        let data_dir = dir.path().join(name);
        std::fs::create_dir_all(&data_dir).unwrap();
        let set = format!("default-data-dir={}", data_dir.display());
        let mut args = vec!["--rules", &r, "--set", &set];
        args.extend_from_slice(extra);
        let lines = eve(&caps, &args);
        let saved = std::fs::read_to_string(data_dir.join("seen.lst")).expect("the set is saved");
        (lines, saved)
    };
    let (serial, saved) = run("serial", &["--threads", "1"]);
    let queries = alerts_of(&serial, 1).len();
    let new_names = alerts_of(&serial, 2).len();
    assert!(
        new_names > 10 && new_names < queries,
        "{new_names} of {queries}"
    );
    // One saved value per first sighting, each the base64 of a name.
    assert_eq!(saved.lines().count(), new_names);
    let hosts = alerts_of(&serial, 4).len();
    let known = alerts_of(&serial, 3).len();
    assert!(known > 0 && known <= hosts, "{known} of {hosts}");
    let (listed, unlisted) = (alerts_of(&serial, 5).len(), alerts_of(&serial, 6).len());
    assert!(listed > 0, "no listed host");
    assert_eq!(listed + unlisted, hosts);
    for (name, extra) in [
        ("lfb", &["--threads", "2", "--scheduler", "lfb"][..]),
        ("rss", &["--threads", "2", "--scheduler", "rss"]),
        (
            "lfb-reader",
            &[
                "--threads",
                "2",
                "--scheduler",
                "lfb",
                "--workers-read=false",
            ],
        ),
        ("pipeline", &["--threads", "2", "--exec", "pipeline"]),
        ("multilayer", &["--threads", "3", "--exec", "multilayer"]),
    ] {
        let sched = name;
        let (par, par_saved) = run(name, extra);
        let alerts = |v: &[String]| -> Vec<String> {
            v.iter()
                .filter(|l| l.contains("\"event_type\":\"alert\""))
                .cloned()
                .collect()
        };
        assert!(
            alerts(&par) == alerts(&serial),
            "{sched}: other alerts than the serial run"
        );
        assert_eq!(par_saved, saved, "{sched}: another saved set");
    }
}
