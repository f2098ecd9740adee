//! `ARCHITECTURE.md` stays true: its crate table is the data path, and every crate's (non-dev) dependencies must
//! point up that table (to an earlier row), never across the runtime and engine tracks, and every workspace crate
//! must have a row. The table is read from the document itself and the dependencies from `cargo metadata`, so
//! neither can drift from what this test checks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One row of the table: its position, the crate's directory under `crates/`, and its track.
#[derive(Debug)]
struct Row {
    rank: usize,
    dir: String,
    track: String,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The rows of the crate table in `ARCHITECTURE.md` (`| stage | crate | track | what |`).
fn table() -> Vec<Row> {
    let text = std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md"))
        .expect("read ARCHITECTURE.md");
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("| stage | crate") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.get(1).is_some_and(|c| c.starts_with("---")) {
            continue;
        }
        let (Some(dir), Some(track)) = (cells.get(2), cells.get(3)) else {
            panic!("ARCHITECTURE.md: malformed table row: {line}");
        };
        rows.push(Row {
            rank: rows.len(),
            dir: dir.trim_matches('`').to_string(),
            track: track.to_string(),
        });
    }
    assert!(
        rows.len() > 5,
        "ARCHITECTURE.md: the crate table was not found"
    );
    rows
}

/// Per workspace package: its directory under `crates/` and its normal (non-dev, non-build) workspace dependencies.
fn packages() -> HashMap<String, (String, Vec<String>)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let root = workspace_root().canonicalize().expect("workspace root");
    let crates_dir = root.join("crates");
    let mut map = HashMap::new();
    for p in meta["packages"].as_array().expect("packages") {
        let name = p["name"].as_str().expect("name").to_string();
        let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest_path"));
        let dir = manifest
            .parent()
            .and_then(|d| d.strip_prefix(&crates_dir).ok())
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_else(|| panic!("{name}: not under crates/"));
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null() && d["path"].is_string())
            .map(|d| d["name"].as_str().expect("dep name").to_string())
            .collect();
        map.insert(name, (dir, deps));
    }
    map
}

/// The breaches of the rules, one line each (empty when the architecture holds).
fn breaches(rows: &[Row], pkgs: &HashMap<String, (String, Vec<String>)>) -> Vec<String> {
    let row_of = |name: &str| {
        pkgs.get(name)
            .and_then(|(dir, _)| rows.iter().find(|r| &r.dir == dir))
    };
    let mut out = Vec::new();
    for (name, (dir, deps)) in pkgs {
        let Some(me) = row_of(name) else {
            out.push(format!(
                "{name} (crates/{dir}) has no row in ARCHITECTURE.md's crate table"
            ));
            continue;
        };
        for dep in deps {
            let Some(it) = row_of(dep) else {
                continue; // reported on its own
            };
            if it.rank >= me.rank {
                out.push(format!(
                    "{name} depends on {dep}, which is not above it on the path"
                ));
            }
            let across = |a: &str, b: &str| {
                (a == "runtime" && b == "engine") || (a == "engine" && b == "runtime")
            };
            if across(&me.track, &it.track) {
                out.push(format!(
                    "{name} ({}) depends on {dep} ({}): the two tracks meet only in the vocabulary",
                    me.track, it.track
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_dependency_points_up_the_path_and_no_track_knows_the_other() {
    let rows = table();
    let pkgs = packages();
    let bad = breaches(&rows, &pkgs);
    assert!(
        bad.is_empty(),
        "ARCHITECTURE.md is not true:\n{}",
        bad.join("\n")
    );
    println!(
        "dependency direction: {} crates, {} table rows checked",
        pkgs.len(),
        rows.len()
    );
}

/// The check can fail: an arrow up the path, one across the tracks and an unplaced crate are each caught.
#[test]
fn the_check_catches_each_kind_of_breach() {
    let rows = table();
    let mut pkgs = packages();
    pkgs.get_mut("flowbundle-ingest")
        .expect("ingest")
        .1
        .push("flowbundle-decode".into());
    pkgs.get_mut("flowbundle-worker")
        .expect("worker")
        .1
        .push("flowbundle-inspect".into());
    pkgs.insert("flowbundle-unplaced".into(), ("nowhere".into(), Vec::new()));
    let bad = breaches(&rows, &pkgs);
    assert!(
        bad.iter()
            .any(|b| b.starts_with("flowbundle-ingest depends on flowbundle-decode")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|b| b.contains("the two tracks meet only in the vocabulary")),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|b| b.starts_with("flowbundle-unplaced")),
        "{bad:?}"
    );
}
