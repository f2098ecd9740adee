//! `ARCHITECTURE.md` stays true: its crate table is the data path, and every crate's (non-dev) dependencies must
//! point up that table (to an earlier row) and into a track that the crate's own track knows (its track table: the
//! runtime and the engine never know each other, nor the engine and the sinks, nor one lab tool another), and every
//! workspace crate must have a row. Both tables are read from the document itself and the dependencies from
//! `cargo metadata`, so neither can drift from what this test checks.

use std::collections::{BTreeSet, HashMap};
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

/// The cells of every row of the table in `ARCHITECTURE.md` whose header row starts with `header`.
fn table_cells(header: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md"))
        .expect("read ARCHITECTURE.md");
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with(header) {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<String> = line.split('|').map(|c| c.trim().to_string()).collect();
        if cells.get(1).is_some_and(|c| c.starts_with("---")) {
            continue;
        }
        // A row is `| a | b | ... |`: drop the empty cells outside the first and last bar.
        rows.push(cells[1..cells.len().saturating_sub(1)].to_vec());
    }
    rows
}

/// The rows of the crate table (`| stage | crate | track | what |`).
fn table() -> Vec<Row> {
    let rows: Vec<Row> = table_cells("| stage | crate")
        .into_iter()
        .enumerate()
        .map(|(rank, cells)| {
            let (Some(dir), Some(track)) = (cells.get(1), cells.get(2)) else {
                panic!("ARCHITECTURE.md: malformed crate table row: {cells:?}");
            };
            Row {
                rank,
                dir: dir.trim_matches('`').to_string(),
                track: track.clone(),
            }
        })
        .collect();
    assert!(
        rows.len() > 5,
        "ARCHITECTURE.md: the crate table was not found"
    );
    rows
}

/// What each track knows, from the track table (`| track | knows |`); `every track` knows them all.
fn tracks() -> HashMap<String, Knows> {
    let map: HashMap<String, Knows> = table_cells("| track | knows")
        .into_iter()
        .map(|cells| {
            let (Some(track), Some(knows)) = (cells.first(), cells.get(1)) else {
                panic!("ARCHITECTURE.md: malformed track table row: {cells:?}");
            };
            let knows = if knows == "every track" {
                Knows::Every
            } else {
                Knows::These(
                    knows
                        .split(',')
                        .map(|t| t.trim().trim_matches('`').to_string())
                        .collect(),
                )
            };
            (track.clone(), knows)
        })
        .collect();
    assert!(
        map.len() > 3,
        "ARCHITECTURE.md: the track table was not found"
    );
    map
}

/// The tracks a track's crates may depend on.
#[derive(Debug, Clone)]
enum Knows {
    Every,
    These(BTreeSet<String>),
}

impl Knows {
    fn allows(&self, track: &str) -> bool {
        match self {
            Knows::Every => true,
            Knows::These(set) => set.contains(track),
        }
    }
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
fn breaches(
    rows: &[Row],
    knows: &HashMap<String, Knows>,
    pkgs: &HashMap<String, (String, Vec<String>)>,
) -> Vec<String> {
    let row_of = |name: &str| {
        pkgs.get(name)
            .and_then(|(dir, _)| rows.iter().find(|r| &r.dir == dir))
    };
    let mut out = Vec::new();
    for r in rows {
        if !knows.contains_key(&r.track) {
            out.push(format!(
                "crates/{}: track {} has no row in ARCHITECTURE.md's track table",
                r.dir, r.track
            ));
        }
    }
    for (track, k) in knows {
        if let Knows::These(set) = k {
            for t in set.iter().filter(|t| !knows.contains_key(*t)) {
                out.push(format!("track {track} knows {t}, which is no track"));
            }
        }
    }
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
            if knows.get(&me.track).is_some_and(|k| !k.allows(&it.track)) {
                out.push(format!(
                    "{name} ({}) depends on {dep} ({}): the {} track does not know the {} track",
                    me.track, it.track, me.track, it.track
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_dependency_points_up_the_path_into_a_track_its_own_knows() {
    let rows = table();
    let knows = tracks();
    let pkgs = packages();
    let bad = breaches(&rows, &knows, &pkgs);
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

/// The check can fail: an arrow up the path, the runtime knowing the engine, the sinks knowing the engine, one lab
/// tool knowing another and an unplaced crate are each caught, and the real tree has none of them.
#[test]
fn the_check_catches_each_kind_of_breach() {
    let rows = table();
    let knows = tracks();
    let mut pkgs = packages();
    let clean = breaches(&rows, &knows, &pkgs);
    let mut add = |from: &str, to: &str| {
        pkgs.get_mut(from)
            .unwrap_or_else(|| panic!("{from}"))
            .1
            .push(to.into());
    };
    add("flowbundle-ingest", "flowbundle-decode");
    add("flowbundle-worker", "flowbundle-inspect");
    add("flowbundle-sinks", "flowbundle-inspect");
    add("flowbundle-sim", "flowbundle-bench");
    pkgs.insert("flowbundle-unplaced".into(), ("nowhere".into(), Vec::new()));
    let bad = breaches(&rows, &knows, &pkgs);
    for expected in [
        "flowbundle-ingest depends on flowbundle-decode, which is not above it on the path",
        "flowbundle-worker (runtime) depends on flowbundle-inspect (engine): the runtime track does not know the engine track",
        "flowbundle-sinks (output) depends on flowbundle-inspect (engine): the output track does not know the engine track",
        "flowbundle-sim (lab) depends on flowbundle-bench (lab): the lab track does not know the lab track",
        "flowbundle-unplaced (crates/nowhere) has no row in ARCHITECTURE.md's crate table",
    ] {
        assert!(
            bad.iter().any(|b| b == expected) && !clean.iter().any(|b| b == expected),
            "not caught: {expected}\n{bad:#?}"
        );
    }
}
