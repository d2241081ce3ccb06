//! `Sample`: one sample of the server and the run, as a CSV line; and the count of a
//! process's open descriptors it takes.

use serde::Serialize;

/// The columns of the CSV file, in order.
pub const CSV_HEADER: &str = "elapsed_s,phase,hold_s,server_rss_bytes,server_fds,players,\
spectators,in_game,games_completed,rounds_per_s,errors,loadtest_rss_bytes,loadtest_fds,\
load_average_1m";

/// One sample: the server's memory and descriptors, and where the run stood.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Sample {
    /// Since the run began (the start of the ramp).
    pub elapsed_s: f64,
    /// `ramp`, `hold`, `storm`, `stopping` or `stopped` (after every client has closed).
    pub phase: &'static str,
    /// Since the hold began; `None` before it.
    pub hold_s: Option<f64>,
    pub server_rss_bytes: Option<u64>,
    pub server_fds: Option<u64>,
    /// Players signed in now.
    pub players: i64,
    pub spectators: i64,
    /// Players seated in live games now.
    pub in_game: i64,
    /// Games completed since the run began.
    pub games_completed: u64,
    /// Rounds completed per second since the previous sample; a sample taken within a
    /// second of it (the one at the end of the hold) repeats its rate rather than
    /// dividing a handful of rounds by a fraction of a second.
    pub rounds_per_s: f64,
    /// Errors counted since the run began.
    pub errors: u64,
    /// The load generator itself, to tell its growth from the server's.
    pub loadtest_rss_bytes: Option<u64>,
    pub loadtest_fds: Option<u64>,
    pub load_average_1m: Option<f64>,
}

impl Sample {
    /// The sample as a CSV line (no newline), in the order of [`CSV_HEADER`].
    pub fn csv_line(&self) -> String {
        fn opt<T: ToString>(v: Option<T>) -> String {
            v.map(|v| v.to_string()).unwrap_or_default()
        }
        format!(
            "{:.1},{},{},{},{},{},{},{},{},{:.1},{},{},{},{}",
            self.elapsed_s,
            self.phase,
            self.hold_s.map(|s| format!("{s:.1}")).unwrap_or_default(),
            opt(self.server_rss_bytes),
            opt(self.server_fds),
            self.players,
            self.spectators,
            self.in_game,
            self.games_completed,
            self.rounds_per_s,
            self.errors,
            opt(self.loadtest_rss_bytes),
            opt(self.loadtest_fds),
            opt(self.load_average_1m),
        )
    }
}

/// Open file descriptors of a process: the entries of `/proc/PID/fd`.
pub fn open_fds(pid: u32) -> Option<u64> {
    let entries = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    // Listing our own descriptors lists the one `read_dir` holds open for the listing:
    // leave it out, so that a count does not depend on which process reads it.
    let count = entries.filter(|e| e.is_ok()).count() as u64;
    Some(if pid == std::process::id() {
        count.saturating_sub(1)
    } else {
        count
    })
}

#[cfg(test)]
pub(super) mod tests {

    use super::*;

    pub(in crate::sampler) fn sample(
        phase: &'static str,
        hold_s: Option<f64>,
        rss: u64,
        fds: u64,
    ) -> Sample {
        sample_with(phase, hold_s, rss, fds, 100.0, 0)
    }

    pub(in crate::sampler) fn sample_with(
        phase: &'static str,
        hold_s: Option<f64>,
        rss: u64,
        fds: u64,
        rounds_per_s: f64,
        errors: u64,
    ) -> Sample {
        Sample {
            elapsed_s: hold_s.unwrap_or(0.0) + 10.0,
            phase,
            hold_s,
            server_rss_bytes: Some(rss),
            server_fds: Some(fds),
            players: 0,
            spectators: 0,
            in_game: 0,
            games_completed: 0,
            rounds_per_s,
            errors,
            loadtest_rss_bytes: None,
            loadtest_fds: None,
            load_average_1m: None,
        }
    }

    /// Reads one line the child writes and checks it is `expected`.
    fn hear(out: &mut impl std::io::BufRead, expected: &str) {
        let mut line = String::new();
        out.read_line(&mut line).expect("the child answers");
        assert_eq!(line.trim(), expected);
    }

    #[test]
    fn open_fds_counts_another_process_s_descriptors() {
        use std::io::Write;
        // A child of its own (this test process's descriptors come and go with the other
        // tests running beside it), counted twice: before and after it opens five more.
        // bash, since dash cannot name a descriptor above 9.
        let script = "echo ready; read -r _; \
            exec 50</dev/null 51</dev/null 52</dev/null 53</dev/null 54</dev/null; \
            echo opened; read -r _";
        let mut child = std::process::Command::new("bash")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("bash runs");
        let mut input = child.stdin.take().expect("piped");
        let mut out = std::io::BufReader::new(child.stdout.take().expect("piped"));
        hear(&mut out, "ready");
        let before = open_fds(child.id());
        writeln!(input, "go").expect("the child reads");
        hear(&mut out, "opened");
        let after = open_fds(child.id());
        drop(input);
        let _ = child.kill();
        let _ = child.wait();
        let (Some(before), Some(after)) = (before, after) else {
            panic!("/proc/PID/fd is readable: {before:?}, {after:?}")
        };
        assert!(before >= 3, "stdin, stdout and stderr at least: {before}");
        assert_eq!(after, before + 5, "{before} then {after}");
        assert_eq!(open_fds(u32::MAX), None, "no such process");
    }

    #[test]
    fn a_csv_line_has_a_field_per_column() {
        let line = sample("hold", Some(12.345), 1024, 9).csv_line();
        assert_eq!(line, "22.3,hold,12.3,1024,9,0,0,0,0,100.0,0,,,");
        assert_eq!(
            line.split(',').count(),
            CSV_HEADER.split(',').count(),
            "{line}"
        );
    }
}
