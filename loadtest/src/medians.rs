//! `elementals-loadtest medians A.json B.json ...`: several runs' reports side by side,
//! with their median, as a Markdown table ready to paste. A single run proves little
//! on a shared machine; this is how the median of several is taken.
//!
//! The columns are the report's figures that every given run has (a fan-out run has no
//! echo ceiling, a throughput run no spectators), so one command serves every benchmark.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

/// A figure: its column title, where it is in the report, and how it is shown.
struct Column {
    title: &'static str,
    path: &'static [&'static str],
    show: Show,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A figure of the server's: left out when zero in every run (no spectators, no
    /// fan-out), with its median.
    Figure,
    /// Shown even when zero everywhere (no errors is the point), with its median.
    Always,
    /// What the run shared the machine with: shown per run, no median.
    Context,
}

#[derive(Clone, Copy)]
enum Show {
    Count,
    Decimals(usize),
    /// A ratio shown as a percentage.
    Percent,
    /// Bytes shown in KiB, to two decimals.
    KiB,
}

const fn col(title: &'static str, path: &'static [&'static str], show: Show) -> Column {
    Column {
        title,
        path,
        show,
        kind: Kind::Figure,
    }
}

const fn with(kind: Kind, column: Column) -> Column {
    Column { kind, ..column }
}

/// In the order they are shown. A column is shown only when every run has it (and, for a
/// `Kind::Figure`, it is not zero in all of them).
const COLUMNS: &[Column] = &[
    col("players peak", &["players_connected_peak"], Show::Count),
    col(
        "spectators peak",
        &["spectators_connected_peak"],
        Show::Count,
    ),
    col("echo msg/s", &["echo", "messages_per_s"], Show::Count),
    col("rounds/s", &["rounds_per_s"], Show::Count),
    col("msg/s", &["messages_per_s"], Show::Count),
    col("vs echo", &["messages_vs_echo"], Show::Percent),
    col("pace cap vs echo", &["pace_cap_vs_echo"], Show::Percent),
    col(
        "result p50 ms",
        &["result_latency_ms", "p50"],
        Show::Decimals(2),
    ),
    col(
        "result p99 ms",
        &["result_latency_ms", "p99"],
        Show::Decimals(2),
    ),
    col(
        "result max ms",
        &["result_latency_ms", "max"],
        Show::Decimals(1),
    ),
    col(
        "last spectator p50 ms",
        &["fanout_last_spectator_ms", "p50"],
        Show::Decimals(1),
    ),
    col(
        "last spectator p99 ms",
        &["fanout_last_spectator_ms", "p99"],
        Show::Decimals(1),
    ),
    col(
        "from result p99 ms",
        &["fanout_from_result_ms", "p99"],
        Show::Decimals(1),
    ),
    col(
        "ceiling p50 ms",
        &["fanout_ceiling", "last_spectator_ms", "p50"],
        Show::Decimals(1),
    ),
    col(
        "ceiling p99 ms",
        &["fanout_ceiling", "last_spectator_ms", "p99"],
        Show::Decimals(1),
    ),
    col(
        "RSS per connection",
        &["server_rss_per_connection_bytes"],
        Show::KiB,
    ),
    col("storm: back", &["reconnect_storm", "back"], Show::Count),
    col(
        "storm: all back s",
        &["reconnect_storm", "all_back_s"],
        Show::Decimals(2),
    ),
    col(
        "storm: listen overflows",
        &["reconnect_storm", "listen_overflows"],
        Show::Count,
    ),
    col(
        "server µs/round",
        &["server_cpu_us_per_round"],
        Show::Decimals(1),
    ),
    with(Kind::Always, col("errors", &["errors"], Show::Count)),
    with(
        Kind::Context,
        col("cores server", &["cpu", "server_cores"], Show::Decimals(2)),
    ),
    with(
        Kind::Context,
        col(
            "cores loadtest",
            &["cpu", "loadtest_cores"],
            Show::Decimals(2),
        ),
    ),
    with(
        Kind::Context,
        col("load avg", &["load_average_1m"], Show::Decimals(2)),
    ),
];

fn figure(report: &Value, path: &[&str]) -> Option<f64> {
    path.iter()
        .try_fold(report, |v, key| v.get(key))
        .and_then(Value::as_f64)
}

fn shown(value: f64, show: Show) -> String {
    match show {
        Show::Count => thousands(value.round() as i64),
        Show::Decimals(n) => format!("{value:.n$}"),
        Show::Percent => format!("{:.1} %", 100.0 * value),
        Show::KiB => format!("{:.2} KiB", value / 1024.0),
    }
}

fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// The median (the mean of the middle two for an even count).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The table for these reports, each named by its file's stem.
pub fn table(reports: &[(String, Value)]) -> String {
    let columns: Vec<&Column> = COLUMNS
        .iter()
        .filter(|c| {
            let values: Vec<Option<f64>> = reports.iter().map(|(_, r)| figure(r, c.path)).collect();
            let everywhere = values.iter().all(Option::is_some);
            everywhere && (c.kind != Kind::Figure || values.iter().any(|v| *v != Some(0.0)))
        })
        .collect();
    let mut out = String::new();
    let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    let mut header = vec!["run".to_owned()];
    header.extend(columns.iter().map(|c| c.title.to_owned()));
    out += &line(header);
    out += &line(vec!["---".to_owned(); columns.len() + 1]);
    for (name, report) in reports {
        let mut cells = vec![name.clone()];
        for c in &columns {
            cells.push(figure(report, c.path).map_or("–".to_owned(), |v| shown(v, c.show)));
        }
        out += &line(cells);
    }
    let mut cells = vec![format!("**median of {}**", reports.len())];
    for c in &columns {
        let mut values: Vec<f64> = reports
            .iter()
            .filter_map(|(_, r)| figure(r, c.path))
            .collect();
        cells.push(if c.kind == Kind::Context || values.is_empty() {
            String::new()
        } else {
            format!("**{}**", shown(median(&mut values), c.show))
        });
    }
    out += &line(cells);
    out
}

/// Reads the reports and prints their table.
pub fn run(files: &[PathBuf]) -> anyhow::Result<()> {
    anyhow::ensure!(!files.is_empty(), "name the runs' --json reports");
    let reports = files
        .iter()
        .map(|f| {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            let value: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a load-test report", f.display()))?;
            Ok((stem(f), value))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    print!("{}", table(&reports));
    Ok(())
}

fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(rounds: f64, p99: f64, echo: Option<f64>) -> Value {
        let mut report = json!({
            "players_connected_peak": 2000,
            "spectators_connected_peak": 0,
            "rounds_per_s": rounds,
            "messages_per_s": rounds * 22.0,
            "result_latency_ms": {"p50": 1.0, "p90": 2.0, "p99": p99, "max": 9.0},
            "fanout_last_spectator_ms": {"p50": 0.0, "p99": 0.0},
            "errors": 0,
            "cpu": {"server_cores": 1.3, "loadtest_cores": 0.5},
        });
        if let Some(echo) = echo {
            report["echo"] = json!({"messages_per_s": echo});
            report["messages_vs_echo"] = json!(rounds * 22.0 / echo);
        }
        report
    }

    #[test]
    fn a_row_per_run_and_the_median_of_each_figure() {
        let reports = vec![
            ("tp1".to_owned(), run(4281.0, 212.0, Some(423_251.0))),
            ("tp2".to_owned(), run(4131.0, 207.0, Some(409_145.0))),
            ("tp3".to_owned(), run(4069.0, 215.0, Some(407_058.0))),
        ];
        let table = table(&reports);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 6, "{table}");
        assert_eq!(
            lines[0],
            "| run | players peak | echo msg/s | rounds/s | msg/s | vs echo | result p50 ms \
             | result p99 ms | result max ms | errors | cores server | cores loadtest |"
        );
        assert!(lines[2].starts_with("| tp1 | 2,000 | 423,251 | 4,281 | 94,182 | 22.3 % |"));
        assert_eq!(
            lines[5],
            "| **median of 3** | **2,000** | **409,145** | **4,131** | **90,882** | **22.2 %** \
             | **1.00** | **212.00** | **9.0** | **0** |  |  |"
        );
    }

    #[test]
    fn a_figure_missing_from_one_run_is_left_out_and_even_counts_average_the_middle() {
        let reports = vec![
            ("a".to_owned(), run(100.0, 10.0, Some(1000.0))),
            ("b".to_owned(), run(300.0, 30.0, None)),
        ];
        let table = table(&reports);
        assert!(!table.contains("echo"), "{table}");
        assert!(table.contains("| **200** |"), "{table}");
        assert!(table.contains("| **20.00** |"), "{table}");
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(-1_234_567), "-1,234,567");
    }
}
