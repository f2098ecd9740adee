//! Prints the suricata-verify table: per selected test pass/fail with its alerts, the failed checks with
//! the reason from the known-failures fixture, and the excluded tests grouped by reason.
//!
//! ```text
//! cargo run --release -p flowbundle-inspect --example suricata_verify -- [NAME_SUBSTRING] [--excluded]
//! ```
//!
//! `--excluded` also lists every excluded test with its reason and detail. The integration test
//! `tests/suricata_verify.rs` runs the same code and asserts the pass rate.

#[path = "../tests/sv/mod.rs"]
mod sv;

fn main() {
    let mut filter = None;
    let mut list_excluded = false;
    for a in std::env::args().skip(1) {
        if a == "--excluded" {
            list_excluded = true;
        } else {
            filter = Some(a);
        }
    }
    let Some(root) = sv::suite_root() else {
        std::process::exit(2);
    };
    let results = sv::run_suite(&root, filter.as_deref());
    if list_excluded {
        for r in &results {
            if let sv::Verdict::Excluded { reason, detail } = &r.verdict {
                println!("{:<48} {reason}  {detail}", r.name);
                for b in r.blockers.iter().skip(1) {
                    println!("{:<48}   also: {b}", "");
                }
            }
        }
        println!();
    }
    print!("{}", sv::report(&results, &sv::known_failures()));
}
