//! SECURITY.md's limits, pinned to the code: every row of the tables under "Limits and
//! their defaults" must be one this file knows, with the value (and flag) that the code's
//! constant or `Config` default renders to. A limit changed in the code without its row,
//! a row changed without the code, or a new row without its pin fails the build's tests.

use std::time::Duration;

use clap::CommandFactory;
use elementals_protocol::rules::MAX_ROUNDS;
use elementals_protocol::time_control::TimeControl;
use elementals_protocol::wire::{MAX_CLIENT_MESSAGE_BYTES, MAX_DEPTH, MAX_SERVER_MESSAGE_BYTES};

use crate::bus::MAX_RESYNC_ATTEMPTS;
use crate::config::Config;
use crate::game::{GameSettings, GAME_CHANNEL_CAPACITY, SPECTATOR_CHANNEL_CAPACITY};
use crate::outbox::OUTBOX_CAPACITY;

mod pins;
use pins::pins;

const SECURITY_MD: &str = include_str!("../../SECURITY.md");

/// One known row: its first cell, its value cell, and the flag its flag cell names.
struct Pin {
    what: &'static str,
    value: String,
    flag: Option<&'static str>,
}

fn pin(what: &'static str, value: impl Into<String>) -> Pin {
    Pin {
        what,
        value: value.into(),
        flag: None,
    }
}

fn flagged(what: &'static str, value: impl Into<String>, flag: &'static str) -> Pin {
    Pin {
        flag: Some(flag),
        ..pin(what, value)
    }
}

fn secs(d: Duration) -> String {
    assert_eq!(d.subsec_nanos(), 0, "{d:?} in whole seconds");
    format!("{} s", d.as_secs())
}

/// "a minute" for the login window, as the rows say it.
fn per_window() -> &'static str {
    assert_eq!(crate::limits::LOGIN_WINDOW, Duration::from_secs(60));
    "a minute"
}

fn count(n: u32, one: &str, many: &str) -> String {
    match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// The cells of one table row, trimmed (`|` inside backticks does not occur here).
fn cells(line: &str) -> Vec<&str> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(str::trim).collect()
}

/// Every problem with the limits tables of `doc` against `pins`, as messages saying what to
/// change; empty when they agree.
fn check(doc: &str, pins: &[Pin]) -> Vec<String> {
    let Some(start) = doc.find("## Limits and their defaults") else {
        return vec!["SECURITY.md has no section \"## Limits and their defaults\"".into()];
    };
    let section = &doc[start..];
    let section = &section[..section[2..].find("\n## ").map_or(section.len(), |i| i + 2)];
    let flags: Vec<String> = Config::command()
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    let mut problems = Vec::new();
    let mut seen = Vec::new();
    let mut lines = section.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with('|') || !lines.peek().is_some_and(|l| l.starts_with("|---")) {
            continue;
        }
        let header = cells(line);
        let flag_column = header.iter().position(|h| *h == "flag");
        lines.next();
        while let Some(row) = lines.next_if(|l| l.starts_with('|')) {
            let row = cells(row);
            let (what, value) = (row[0], row.get(1).copied().unwrap_or(""));
            let flag_cell = flag_column.and_then(|i| row.get(i)).copied().unwrap_or("");
            seen.push(what.to_owned());
            let Some(pin) = pins.iter().find(|p| p.what == what) else {
                problems.push(format!(
                    "SECURITY.md's limits have a row `{what}` that no test pins: add \
                     `pin(\"{what}\", <its value, rendered from the constant or Config \
                     default it documents>)` (or `flagged(…, \"--its-flag\")`) to `pins()` \
                     in server/src/security_md.rs"
                ));
                continue;
            };
            if value != pin.value {
                problems.push(format!(
                    "SECURITY.md says `{what}` is `{value}`; the code says `{}`",
                    pin.value
                ));
            }
            for word in flag_cell.split(['`', ' ', '(', ')', ',', ';', ':']) {
                if word.starts_with("--") && !flags.iter().any(|f| f == word) {
                    problems.push(format!("`{what}` names {word}, which is no flag"));
                }
            }
            match pin.flag {
                Some(flag) if !flag_cell.contains(&format!("`{flag}")) => problems.push(format!(
                    "`{what}` is set by {flag}: SECURITY.md's flag cell should say so"
                )),
                None if flag_cell.contains("--") => problems.push(format!(
                    "`{what}` is a constant, but SECURITY.md names a flag for it"
                )),
                _ => {}
            }
        }
    }
    for pin in pins {
        if !seen.iter().any(|w| w == pin.what) {
            problems.push(format!(
                "`{}` is pinned in server/src/security_md.rs but is no row of SECURITY.md",
                pin.what
            ));
        }
    }
    problems
}

#[test]
fn every_limit_in_security_md_is_the_one_in_the_code() {
    let problems = check(SECURITY_MD, &pins());
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn a_row_without_a_pin_or_with_another_value_is_refused_with_what_to_do() {
    let pins = vec![
        pin("known", "7"),
        flagged("tunable", "3", "--max-connections"),
    ];
    let doc = "## Limits and their defaults\n\n\
        | what | default | flag | beyond it |\n|---|---|---|---|\n\
        | known | 8 | | |\n\
        | tunable | 3 | `--no-such-flag` | |\n\
        | brand new | 1 | | |\n\n## Next\n| known | 9 | | |\n";
    let problems = check(doc, &pins);
    let expect = [
        "SECURITY.md says `known` is `8`; the code says `7`",
        "`tunable` names --no-such-flag, which is no flag",
        "`tunable` is set by --max-connections: SECURITY.md's flag cell should say so",
        "add `pin(\"brand new\"",
    ];
    for text in expect {
        assert!(
            problems.iter().any(|p| p.contains(text)),
            "{text} in {problems:#?}"
        );
    }
    assert_eq!(problems.len(), expect.len(), "{problems:#?}");
}

/// The counts in the prose of "beyond it" cells are the code's too.
#[test]
fn the_counts_in_what_happens_beyond_a_limit_are_the_code_s() {
    let row = |start: &str| {
        SECURITY_MD
            .lines()
            .find(|l| l.starts_with(&format!("| {start} |")))
            .unwrap_or_else(|| panic!("SECURITY.md has the row `{start}`"))
    };
    let expect = [
        (
            "a spectator's events",
            format!("after {MAX_RESYNC_ATTEMPTS} in a row"),
        ),
        (
            "messages per connection",
            format!(
                "{} refusals in a row",
                crate::connection::RATE_STRIKES_BEFORE_CLOSE
            ),
        ),
        (
            "accepted TCP connections waiting for a handshake slot",
            format!("({} deep", crate::accept::LISTEN_BACKLOG),
        ),
    ];
    for (what, text) in expect {
        assert!(row(what).contains(&text), "`{what}` should say {text}");
    }
}

/// The tests SECURITY.md names as `path.rs::test_name` (its threat table's proof column):
/// each is a test in the file named, so that a test moved or renamed takes its row along.
#[test]
fn every_test_security_md_names_is_in_the_file_it_names() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut named = 0;
    let mut problems = Vec::new();
    for span in SECURITY_MD.split('`').skip(1).step_by(2) {
        let Some((path, test)) = span.split_once(".rs::") else {
            continue;
        };
        if test.is_empty() || !test.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        named += 1;
        let file = format!("{root}/{path}.rs");
        match std::fs::read_to_string(&file) {
            Ok(text) if text.contains(&format!("fn {test}(")) => {}
            Ok(_) => problems.push(format!("{path}.rs has no test `{test}`")),
            Err(_) => problems.push(format!("{path}.rs (named with `{test}`) is no file")),
        }
    }
    assert!(
        named > 50,
        "SECURITY.md names {named} tests: is the form still `path.rs::name`?"
    );
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
