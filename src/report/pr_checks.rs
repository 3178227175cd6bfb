//! The PR text's "Tests, differential, sanitizers": one line per gate, then one table row per
//! scenario whose outputs were compared, with a column per lane (the plain builds, the sanitized
//! builds), so a scenario checked in both lanes is one row, not two lines that repeat its name and
//! rule. Split from `pr_context`, which assembles the sections.
//!
//! Gate details and differential summaries quote the candidate's output: every such string goes
//! through `markdown`'s escaping before it lands in a line or a table cell.

use serde::Serialize;

use super::markdown::{Markdown, code, inline, prose};
use super::pr_context::first_line;
use crate::evidence::result::{CheckLane, ConfirmResult, DifferentialRecord, GateStatus, Role};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckLine {
    pub name: String,
    pub status: String,
    /// The first line of the gate's detail; code spans kept, anything else literal.
    pub detail: Markdown,
}

/// One scenario's output comparisons, a cell per lane.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DifferentialRow {
    pub scenario: Markdown,
    pub role: Markdown,
    pub rule: Markdown,
    /// The plain builds' check outputs.
    pub differential: Markdown,
    /// The sanitized builds' check outputs.
    pub sanitizer: Markdown,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checks {
    pub gates: Vec<CheckLine>,
    pub differential: Vec<DifferentialRow>,
    pub sanitizers: Markdown,
}

/// "identical", "differs: …" or "–" when the lane did not compare this scenario.
fn outcome(record: Option<&DifferentialRecord>) -> Markdown {
    Markdown::assembled(match record {
        None => "–".to_string(),
        Some(d) if d.same => "identical to the baseline's".to_string(),
        Some(d) => format!(
            "differs: {}",
            prose(&first_line(d.summary.as_deref().unwrap_or("(no summary)")))
        ),
    })
}

/// One row per scenario, in the order the comparisons ran.
fn differential_rows(records: &[DifferentialRecord]) -> Vec<DifferentialRow> {
    let mut scenarios: Vec<(&str, Role)> = Vec::new();
    for d in records {
        if !scenarios.contains(&(d.scenario.as_str(), d.role)) {
            scenarios.push((&d.scenario, d.role));
        }
    }
    scenarios
        .into_iter()
        .map(|(scenario, role)| {
            let of = |sanitizer: bool| {
                records.iter().find(|d| {
                    d.scenario == scenario
                        && d.role == role
                        && (d.lane == CheckLane::Sanitizer) == sanitizer
                })
            };
            let (plain, sanitized) = (of(false), of(true));
            let rule = plain.or(sanitized).map_or("", |d| d.rule.as_str());
            DifferentialRow {
                scenario: Markdown::assembled(code(scenario)),
                role: Markdown::assembled(inline(role.as_str())),
                rule: Markdown::assembled(inline(rule)),
                differential: outcome(plain),
                sanitizer: outcome(sanitized),
            }
        })
        .collect()
}

pub(super) fn checks(r: &ConfirmResult) -> Checks {
    let gates = r
        .evidence
        .gates
        .iter()
        .map(|g| CheckLine {
            name: g.name.to_string(),
            status: match g.status {
                GateStatus::Passed => "passed",
                GateStatus::Failed => "FAILED",
                GateStatus::Skipped => "skipped",
            }
            .to_string(),
            detail: Markdown::assembled(prose(&first_line(&g.detail))),
        })
        .collect();
    let sanitizers = Markdown::assembled(if !r.evidence.sanitizer_lane_ran {
        "The sanitizer lane did not run (the workload declares no `sanitize` build, or an \
         earlier gate failed)."
            .to_string()
    } else if r.evidence.sanitizer_findings.is_empty() {
        "The sanitizer lane ran: sanitized builds of both trees ran every check; no sanitizer \
         reported anything."
            .to_string()
    } else {
        let kinds: Vec<String> = r
            .evidence
            .sanitizer_findings
            .iter()
            .map(|f| {
                format!(
                    "{} in the {} tree ({})",
                    inline(&f.kind),
                    inline(&f.tree.to_string()),
                    inline(&f.step.to_string())
                )
            })
            .collect();
        format!("The sanitizer lane found: {}.", kinds.join("; "))
    });
    Checks {
        gates,
        differential: differential_rows(&r.evidence.differential),
        sanitizers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(scenario: &str, lane: &str, same: bool) -> DifferentialRecord {
        DifferentialRecord {
            scenario: scenario.into(),
            role: Role::Training,
            lane: lane.parse().unwrap(),
            rule: "exact".into(),
            baseline_sha256: String::new(),
            candidate_sha256: String::new(),
            same,
            summary: (!same).then(|| "line 3 differs\nmore".into()),
            diff: None,
        }
    }

    #[test]
    fn a_scenario_compared_in_both_lanes_is_one_row() {
        let rows = differential_rows(&[
            record("a", "differential", true),
            record("b", "differential", true),
            record("a", "sanitizer", false),
        ]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].scenario.as_str(), "`a`");
        assert_eq!(rows[0].differential.as_str(), "identical to the baseline's");
        assert_eq!(rows[0].sanitizer.as_str(), "differs: line 3 differs");
        assert_eq!(rows[1].sanitizer.as_str(), "–");
        assert_eq!(rows[1].rule.as_str(), "exact");
    }
}
