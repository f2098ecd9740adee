//! The suricata-verify suite through the engine: every test folder of `../shared/data/suricata-verify` is
//! selected or excluded with a reason (see `sv/mod.rs` for the rules), the selected ones run through the engine with
//! their rules, and their evaluable checks (`alert`, `flow` and `dns` events, as the product's EVE writer writes them) are
//! compared. Prints the per-test table, the exclusions by first reason, and every blocking reason with the number of
//! tests it blocks alone. `scripts/suricata-verify` prints the same table.
//!
//! What it asserts: the selection does not silently shrink below a pinned floor, the number of passing tests does
//! not fall below a pinned floor (both for all selected tests and for the *alert tests*, whose rules load and that
//! have an evaluated alert check), and every failing test is explained in `tests/data/suricata_verify_failures.txt`
//! (a new failure must be investigated and listed, a fixed one removed). The target is 400 selected alert
//! tests with 95% passing; the floors pin what holds today and the fixture names each failure with its owner.

mod sv;

/// Tests selected on the suite snapshot when this was written; the selection may grow, not silently shrink.
const SELECTED_FLOOR: usize = 608;
/// Selected tests passing when this was written.
const PASS_FLOOR: usize = 587;
/// Alert tests (rules load, an alert check evaluated) selected, and passing, when this was written.
const ALERT_SELECTED_FLOOR: usize = 499;
const ALERT_PASS_FLOOR: usize = 485;
/// The target pass rate, in percent.
const TARGET_PERCENT: usize = 95;

#[test]
fn suricata_verify_alert_tests() {
    let Some(root) = sv::suite_root() else {
        return;
    };
    let results = sv::run_suite(&root, None);
    let known = sv::known_failures();
    println!("{}", sv::report(&results, &known));
    let selected = results.iter().filter(|r| r.selected()).count();
    let passed = results.iter().filter(|r| r.passed()).count();
    let rate = (passed * 100).checked_div(selected).unwrap_or(0);
    println!(
        "pass rate {rate}% ({passed}/{selected}); target {TARGET_PERCENT}%: {}",
        if rate >= TARGET_PERCENT {
            "reached"
        } else {
            "not reached (see the fixture for each failure)"
        }
    );
    assert!(
        selected >= SELECTED_FLOOR,
        "only {selected} tests selected, the floor is {SELECTED_FLOOR}"
    );
    assert!(
        passed >= PASS_FLOOR,
        "{passed} tests pass, the floor is {PASS_FLOOR}"
    );
    let alert_selected = results.iter().filter(|r| r.alert_test()).count();
    let alert_passed = results
        .iter()
        .filter(|r| r.alert_test() && r.passed())
        .count();
    assert!(
        alert_selected >= ALERT_SELECTED_FLOOR,
        "only {alert_selected} alert tests selected, the floor is {ALERT_SELECTED_FLOOR}"
    );
    assert!(
        alert_passed >= ALERT_PASS_FLOOR,
        "{alert_passed} alert tests pass, the floor is {ALERT_PASS_FLOOR}"
    );
    let unexplained: Vec<&str> = results
        .iter()
        .filter(|r| r.selected() && !r.passed() && !known.contains_key(&r.name))
        .map(|r| r.name.as_str())
        .collect();
    assert!(
        unexplained.is_empty(),
        "failing tests not explained in tests/data/suricata_verify_failures.txt: {unexplained:?}"
    );
}
