//! `runs.csv`: every timed run of a confirmation, one row each, in the order they ran, for
//! people who would rather load the raw numbers into a spreadsheet or a notebook.

use std::fmt::Write;

use crate::evidence::result::{ConfirmResult, ScenarioResult};
use crate::measure::record::{Arm, Order, Pair, RunRecord};

pub const HEADER: &str = "scenario,role,phase,pair_index,arm,order,wall_s,user_s,sys_s,\
max_rss_kib,voluntary_cs,involuntary_cs,exit_status,stdout_sha256";

/// Quotes a field when CSV needs it (RFC 4180).
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn order_name(order: Order) -> &'static str {
    match order {
        Order::BaselineFirst => "baseline_first",
        Order::CandidateFirst => "candidate_first",
    }
}

struct Row<'a> {
    s: &'a ScenarioResult,
    phase: &'a str,
    pair: Option<usize>,
    arm: &'a str,
    order: Option<Order>,
    run: &'a RunRecord,
}

fn push(out: &mut String, row: Row<'_>) {
    let u = &row.run.rusage;
    let _ = writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        field(&row.s.name),
        field(row.s.role.as_str()),
        row.phase,
        row.pair.map_or_else(String::new, |i| i.to_string()),
        row.arm,
        row.order.map_or("", order_name),
        row.run.wall_s,
        u.user_s,
        u.sys_s,
        u.max_rss_kib,
        u.voluntary_cs,
        u.involuntary_cs,
        row.run.status.shell_code(),
        field(&row.run.stdout_sha256),
    );
}

/// The two runs of a pair in the order they ran, with their arm labels.
fn in_run_order<'a>(p: &'a Pair, labels: [&'a str; 2]) -> [(&'a str, &'a RunRecord); 2] {
    let base = (labels[0], &p.baseline);
    let cand = (labels[1], &p.candidate);
    match p.order {
        Order::BaselineFirst => [base, cand],
        Order::CandidateFirst => [cand, base],
    }
}

/// The CSV text: a header and one row per run (warmups, A/A pairs, pairs).
pub fn render(r: &ConfirmResult) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for s in &r.evidence.scenarios {
        for w in &s.warmups {
            let arm = match w.arm {
                Arm::Baseline => "baseline",
                Arm::Candidate => "candidate",
            };
            push(
                &mut out,
                Row {
                    s,
                    phase: "warmup",
                    pair: None,
                    arm,
                    order: None,
                    run: &w.run,
                },
            );
        }
        let phases: [(&str, &[Pair], [&str; 2]); 2] = [
            ("aa", &s.aa_pairs, ["baseline", "baseline_again"]),
            ("pair", &s.pairs, ["baseline", "candidate"]),
        ];
        for (phase, pairs, labels) in phases {
            for p in pairs {
                for (arm, run) in in_run_order(p, labels) {
                    push(
                        &mut out,
                        Row {
                            s,
                            phase,
                            pair: Some(p.index),
                            arm,
                            order: Some(p.order),
                            run,
                        },
                    );
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
